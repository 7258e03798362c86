"""Reading and checking ``.json`` model files: every item is checked, and a bad one named
by its JSON path, before anything is built. The format is described in
:mod:`hinesbatch.io.model_file` and docs/model-files.md."""
from __future__ import annotations

import difflib
import importlib
import json
import math
import os
import re
from pathlib import Path

#: The outputs a model may ask for, and what writes each.
OUTPUT_KINDS = {
    "npz": "the results file (Results.save)",
    "spikes": "the SONATA spike report (Results.save_spikes)",
    "plot": "a figure of every trace (Results.plot)",
    "raster": "the spike raster (Results.raster)",
}
#: The location used when a recording or a spike source gives none.
DEFAULT_LOCATION = "soma[0](0.5)"
#: The built-in point processes; always valid ``place`` kinds.
POINT_PROCESSES = frozenset({"IClamp", "SEClamp", "ExpSyn", "Exp2Syn"})
#: Point processes that receive no events, so no connection may target them.
NO_EVENTS = frozenset({"IClamp", "SEClamp"})
#: NetStim's parameters (NEURON's names).
NETSTIM_PARAMS = ("start", "interval", "number", "noise")

_REQUIRED = object()
_LOCATION = re.compile(r"^\s*([A-Za-z_][\w.]*(?:\[\d+\])?)\s*\(\s*([^()]*?)\s*\)\s*$")
class ModelFileError(ValueError):
    """A model file that cannot be read, checked or built.

    The message starts with the file: ``path:line:col: ...`` for JSON syntax errors,
    ``path: json.path: ...`` for a bad item.

    Attributes
    ----------
    file : str
        The model file, as given.
    where : str
        JSON path of the item (``"cells[0].place[1].location"``), ``""`` for the file.
    line, column : int or None
        Position of a JSON syntax error (1-based).
    """

    def __init__(self, file, where: str, message: str, *, line: int | None = None,
                 column: int | None = None):
        self.file, self.where, self.line, self.column = str(file), where, line, column
        if line is not None:
            text = f"{self.file}:{line}:{column}: {message}"
        elif where:
            text = f"{self.file}: {where}: {message}"
        else:
            text = f"{self.file}: {message}"
        super().__init__(text)


class _Object(dict):
    """A JSON object that remembers keys given twice (``json`` keeps the last silently)."""

    duplicates: tuple = ()


def _pairs(pairs) -> _Object:
    obj = _Object(pairs)
    if len(obj) != len(pairs):
        seen: set = set()
        obj.duplicates = tuple(k for k, _ in pairs if k in seen or seen.add(k))
    return obj


def read_model(path: str | os.PathLike, *, mechanisms=None) -> dict:
    """Read and check a ``.json`` model file without building anything.

    Parameters
    ----------
    path : str or os.PathLike
        The model file.
    mechanisms : collection of str, optional
        Valid mechanism and point-process names; by default ``hinesbatch.mechanisms.names()``
        when that exists (names are otherwise checked when the model is built).

    Returns
    -------
    dict
        The model, complete and normalised: ``simulation`` (the ``Simulation`` options the
        file gives), ``tstop`` [ms], ``cells``, ``stimuli``, ``connections``, ``record``
        (each entry with its defaults filled in, locations as given or as
        ``(section, x)``), ``outputs`` (kind -> absolute ``Path``), ``file`` (the path).

    Raises
    ------
    ModelFileError
        For any syntax error or bad item, naming its line and column or its JSON path.
    """
    file = str(path)
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"{file}: no such model file") from None
    except UnicodeDecodeError as exc:
        raise ModelFileError(file, "", f"not UTF-8 text ({exc.reason} at byte {exc.start})") \
            from None
    try:
        data = json.loads(text, object_pairs_hook=_pairs)
    except json.JSONDecodeError as exc:
        raise ModelFileError(file, "", exc.msg, line=exc.lineno, column=exc.colno) from None
    mechanisms = _known_mechanisms() if mechanisms is None else frozenset(mechanisms)
    return ModelChecker(file, path.resolve().parent, mechanisms).model(data)


def _known_mechanisms():
    """``hinesbatch.mechanisms.names()`` as a set, or None where that does not exist."""
    try:
        module = importlib.import_module("hinesbatch.mechanisms")
        return frozenset(module.names())
    except (ImportError, AttributeError):
        return None


class ModelChecker:
    """Checks one model file's data, item by item, naming each bad item's JSON path."""

    def __init__(self, file: str, folder: Path, mechanisms):
        self.file, self.folder, self.mechanisms = file, folder, mechanisms

    def fail(self, where: str, message: str):
        raise ModelFileError(self.file, where, message)

    # -- the model ----------------------------------------------------------------------
    def model(self, data) -> dict:
        top = self.obj(data, "", {
            "description": (self.text, None), "tstop": (self.positive, _REQUIRED),
            "dt": (self.positive, None), "celsius": (self.number, None),
            "v_init": (self.number, None), "backend": (self.text, None),
            "tables": (self.boolean, None), "threads": (self.count, None),
            "cells": (lambda v, w: self.items(v, w, self.cell, nonempty=True), _REQUIRED),
            "stimuli": (lambda v, w: self.items(v, w, self.stimulus), []),
            "connections": (self.array, []), "record": (self.array, []),
            "outputs": (self.outputs, {}),
        })
        gids = [i for i, c in enumerate(top["cells"]) for _ in range(c["copies"])]
        points = [top["cells"][i]["points"] for i in gids]
        stimuli = {s["id"]: s for s in top["stimuli"]}
        duplicate = _first_duplicate(s["id"] for s in top["stimuli"])
        if duplicate is not None:
            self.fail(f"stimuli[{duplicate}].id",
                      f"{top['stimuli'][duplicate]['id']!r} names two stimuli")
        refs = _References(self, len(gids), points, stimuli)
        connections = [self.connection(c, f"connections[{k}]", refs)
                       for k, c in enumerate(top["connections"])]
        record = [self.recording(r, f"record[{k}]", refs) for k, r in enumerate(top["record"])]
        options = {k: top[k] for k in ("dt", "celsius", "v_init", "backend", "tables",
                                       "threads") if top[k] is not None}
        return {"file": self.file, "simulation": options, "tstop": top["tstop"],
                "cells": top["cells"], "stimuli": top["stimuli"], "connections": connections,
                "record": record, "outputs": top["outputs"]}

    def cell(self, value, where: str) -> dict:
        cell = self.obj(value, where, {
            "morphology": (self.morphology, _REQUIRED), "name": (self.text, None),
            "nseg": (lambda v, w: self.per_region(v, w, self.count), None),
            "d_lambda": (lambda v, w: self.per_region(v, w, self.positive), None),
            "ra": (lambda v, w: self.per_region(v, w, self.positive), None),
            "cm": (lambda v, w: self.per_region(v, w, self.positive), None),
            "copies": (self.count, 1),
            "insert": (lambda v, w: self.items(v, w, self.insertion), []),
            "set": (lambda v, w: self.items(v, w, self.setting), []),
            "place": (lambda v, w: self.items(v, w, self.placement), []),
        })
        cell["options"] = {k: cell[k] for k in ("nseg", "d_lambda", "ra", "cm", "name")
                           if cell[k] is not None}
        cell["points"] = {}
        for j, p in enumerate(cell["place"]):
            if p["id"] is None:
                continue
            if p["id"] in cell["points"]:
                self.fail(f"{where}.place[{j}].id", f"{p['id']!r} names two point processes "
                          "of this cell")
            cell["points"][p["id"]] = p
        return cell

    def insertion(self, value, where: str) -> dict:
        item = self.obj(value, where, {"mechanism": (self.text, _REQUIRED),
                                       "region": (self.region, "all"),
                                       "params": (self.params, {})})
        self.mechanism(item["mechanism"], f"{where}.mechanism", self.mechanisms)
        return item

    def setting(self, value, where: str) -> dict:
        return self.obj(value, where, {"name": (self.text, _REQUIRED),
                                       "value": (self.number, _REQUIRED),
                                       "region": (self.region, "all")})

    def placement(self, value, where: str) -> dict:
        item = self.obj(value, where, {"id": (self.text, None), "kind": (self.text, _REQUIRED),
                                       "location": (self.location, _REQUIRED),
                                       "params": (self.params, {})})
        known = None if self.mechanisms is None else self.mechanisms | POINT_PROCESSES
        self.mechanism(item["kind"], f"{where}.kind", known)
        return item

    def stimulus(self, value, where: str) -> dict:
        item = self.obj(value, where, {"id": (self.text, _REQUIRED),
                                       "kind": (self.text, _REQUIRED),
                                       "params": (self.params, None),
                                       "times": (self.times, None)})
        if item["kind"] == "NetStim":
            if item["times"] is not None:
                self.fail(f"{where}.times", "a NetStim has no times (its spikes follow "
                          "start, interval, number); use kind VecStim for a given train")
            params = item["params"] or {}
            for name in params:
                if name not in NETSTIM_PARAMS:
                    self.fail(f"{where}.params.{name}", "unknown NetStim parameter; valid: "
                              + ", ".join(NETSTIM_PARAMS) + _suggest(name, NETSTIM_PARAMS))
            item["params"] = params
        elif item["kind"] == "VecStim":
            if item["params"] is not None:
                self.fail(f"{where}.params", "a VecStim has no params; give its spike "
                          "train as times")
            if item["times"] is None:
                self.fail(where, "missing required key 'times' (the VecStim's spike times "
                          "[ms])")
        else:
            self.fail(f"{where}.kind", f"unknown stimulus kind {item['kind']!r}; valid: "
                      "NetStim, VecStim")
        return item

    def connection(self, value, where: str, refs: _References) -> dict:
        item = self.obj(value, where, {"source": (self.any, _REQUIRED),
                                       "target": (self.any, _REQUIRED),
                                       "weight": (self.weight, _REQUIRED),
                                       "delay": (self.nonnegative, 1.0)})
        item["source"] = refs.source(item["source"], f"{where}.source")
        item["target"] = refs.target(item["target"], f"{where}.target")
        return item

    def recording(self, value, where: str, refs: _References) -> dict:
        if isinstance(value, dict) and "spikes" in value:
            item = self.obj(value, where, {"spikes": (self.any, _REQUIRED)})
            return {"spikes": refs.source(item["spikes"], f"{where}.spikes")}
        item = self.obj(value, where, {"variable": (self.text, _REQUIRED),
                                       "cell": (self.any, 0),
                                       "location": (self.location, None),
                                       "point": (self.text, None),
                                       "every": (self.count, 1)})
        item["cell"] = refs.gid(item["cell"], f"{where}.cell")
        if item["point"] is not None:
            if item["location"] is not None:
                self.fail(where, "give either location (a membrane variable) or point (a "
                          "point-process variable), not both")
            refs.point(item["cell"], item["point"], f"{where}.point")
        elif item["location"] is None:
            item["location"] = DEFAULT_LOCATION
        return item

    def outputs(self, value, where: str) -> dict:
        fields = {kind: (self.text, None) for kind in OUTPUT_KINDS}
        given = self.obj(value, where or "outputs", fields)
        return {kind: self.resolve(p) for kind, p in given.items() if p is not None}

    # -- values ---------------------------------------------------------------------------
    def obj(self, value, where: str, fields: dict) -> dict:
        """``value`` checked as an object with ``fields`` (name -> (check, default)); the
        result holds every field (defaults filled in, ``None`` for absent optional ones)."""
        if not isinstance(value, dict):
            self.fail(where, f"must be an object {{...}}, not {_kind(value)}")
        if getattr(value, "duplicates", ()):
            self.fail(where, f"key {value.duplicates[0]!r} is given twice")
        for key in value:
            if key not in fields:
                self.fail(_join(where, key), "unknown key; valid keys: " + ", ".join(fields)
                          + _suggest(key, fields))
        out = {}
        for key, (check, default) in fields.items():
            if key in value:
                out[key] = check(value[key], _join(where, key))
            elif default is _REQUIRED:
                self.fail(where, f"missing required key {key!r}")
            else:
                out[key] = default
        return out

    def items(self, value, where: str, check, *, nonempty: bool = False) -> list:
        self.array(value, where)
        if nonempty and not value:
            self.fail(where, "must not be empty")
        return [check(v, f"{where}[{i}]") for i, v in enumerate(value)]

    def array(self, value, where: str) -> list:
        if not isinstance(value, list):
            self.fail(where, f"must be a list [...], not {_kind(value)}")
        return value

    def any(self, value, where: str):
        return value

    def number(self, value, where: str) -> float | int:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(where, f"must be a number, not {_kind(value)}")
        if not math.isfinite(value):
            self.fail(where, f"must be finite, not {value}")
        return value

    def weight(self, value, where: str):
        """A NetCon's weight: a number, or its weight vector (a list of numbers, entry 0
        the weight) for a synapse whose NET_RECEIVE takes more arguments."""
        if isinstance(value, list):
            if not value:
                self.fail(where, "must not be empty (a weight vector starts with the weight)")
            return [self.number(w, f"{where}[{k}]") for k, w in enumerate(value)]
        return self.number(value, where)

    def positive(self, value, where: str) -> float | int:
        if self.number(value, where) <= 0:
            self.fail(where, f"must be > 0, not {value}")
        return value

    def nonnegative(self, value, where: str) -> float | int:
        if self.number(value, where) < 0:
            self.fail(where, f"must be >= 0, not {value}")
        return value

    def count(self, value, where: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(where, f"must be a whole number, not {_kind(value)}")
        if value < 1:
            self.fail(where, f"must be >= 1, not {value}")
        return value

    def text(self, value, where: str) -> str:
        if not isinstance(value, str):
            self.fail(where, f"must be a string, not {_kind(value)}")
        if not value.strip():
            self.fail(where, "must not be empty")
        return value

    def boolean(self, value, where: str) -> bool:
        if not isinstance(value, bool):
            self.fail(where, f"must be true or false, not {_kind(value)}")
        return value

    def region(self, value, where: str) -> str | list[str]:
        if isinstance(value, list):
            if not value:
                self.fail(where, "must name at least one region")
            return [self.text(v, f"{where}[{i}]") for i, v in enumerate(value)]
        if not isinstance(value, str):
            self.fail(where, f"must be a region name (\"all\", \"soma\", \"axon\", \"dend\", "
                      f"\"apic\", a section such as \"dend[3]\") or a list of them, not "
                      f"{_kind(value)}")
        return self.text(value, where)

    def per_region(self, value, where: str, check):
        if isinstance(value, dict):
            if not value:
                self.fail(where, "must name at least one region")
            for region in value:
                self.text(region, where)
            return {region: check(v, _join(where, region)) for region, v in value.items()}
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(where, f"must be a number or an object region -> number, not "
                      f"{_kind(value)}")
        return check(value, where)

    def params(self, value, where: str) -> dict:
        if not isinstance(value, dict):
            self.fail(where, f"must be an object name -> number, not {_kind(value)}")
        if getattr(value, "duplicates", ()):
            self.fail(where, f"key {value.duplicates[0]!r} is given twice")
        return {name: self.number(v, _join(where, name)) for name, v in value.items()}

    def times(self, value, where: str) -> list[float]:
        self.array(value, where)
        times = [self.nonnegative(v, f"{where}[{i}]") for i, v in enumerate(value)]
        for i in range(1, len(times)):
            if times[i] < times[i - 1]:
                self.fail(f"{where}[{i}]", f"spike times must be sorted: {times[i]} follows "
                          f"{times[i - 1]}")
        return times

    def location(self, value, where: str) -> str | tuple[str, float]:
        """``"soma[0](0.5)"`` (returned as given) or ``["soma[0]", 0.5]`` (a tuple)."""
        if isinstance(value, list):
            if len(value) != 2 or not isinstance(value[0], str):
                self.fail(where, "a location list must be [section, x], e.g. [\"soma[0]\", 0.5]")
            x = self.number(value[1], f"{where}[1]")
            self._x_in_range(x, where)
            return (self.text(value[0], f"{where}[0]"), float(x))
        if not isinstance(value, str):
            self.fail(where, f"must be a location such as \"soma[0](0.5)\", not {_kind(value)}")
        match = _LOCATION.match(value)
        if match is None:
            self.fail(where, f"{value!r} is not a location; write section(x), e.g. "
                      "\"soma[0](0.5)\" or \"dend[3](1)\"")
        try:
            x = float(match.group(2))
        except ValueError:
            self.fail(where, f"{value!r}: x must be a number in [0, 1]")
        self._x_in_range(x, where)
        return value

    def _x_in_range(self, x: float, where: str) -> None:
        if not 0.0 <= x <= 1.0:
            self.fail(where, f"x = {x} is outside [0, 1] (the position along the section)")

    def morphology(self, value, where: str) -> str:
        path = self.resolve(self.text(value, where))
        if not path.is_file():
            self.fail(where, f"no file {value!r}"
                      + (f" (looked for {path})" if str(path) != value else ""))
        return str(path)

    def mechanism(self, name: str, where: str, known) -> None:
        if known is not None and name not in known:
            self.fail(where, f"unknown mechanism {name!r}; valid: "
                      + ", ".join(sorted(known)) + _suggest(name, known))

    def resolve(self, path: str) -> Path:
        path = Path(path).expanduser()
        return path if path.is_absolute() else Path(os.path.normpath(self.folder / path))


class _References:
    """Checks references between items: gids, point-process ids and stimulus ids."""

    def __init__(self, checker: ModelChecker, n_cells: int, points: list[dict], stimuli: dict):
        self.checker, self.n_cells, self.points, self.stimuli = checker, n_cells, points, stimuli

    def gid(self, value, where: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.checker.fail(where, f"must be a cell's gid (a whole number), not "
                              f"{_kind(value)}")
        if not 0 <= value < self.n_cells:
            self.checker.fail(where, f"no cell {value}: the model has {self.n_cells} cells "
                              f"(gids 0..{self.n_cells - 1})")
        return value

    def point(self, gid: int, name: str, where: str) -> dict:
        points = self.points[gid]
        if name not in points:
            valid = ", ".join(repr(p) for p in points) or "none: give place items an id"
            self.checker.fail(where, f"cell {gid} has no point process {name!r}; its ids: "
                              f"{valid}{_suggest(name, points)}")
        return points[name]

    def source(self, value, where: str) -> dict:
        c = self.checker
        if isinstance(value, dict) and "stimulus" in value:
            item = c.obj(value, where, {"stimulus": (c.text, _REQUIRED)})
            if item["stimulus"] not in self.stimuli:
                valid = ", ".join(repr(s) for s in self.stimuli) or "none defined"
                c.fail(f"{where}.stimulus", f"no stimulus {item['stimulus']!r}; ids: {valid}"
                       + _suggest(item["stimulus"], self.stimuli))
            return item
        item = c.obj(value, where, {"cell": (c.any, _REQUIRED),
                                    "location": (c.location, DEFAULT_LOCATION),
                                    "threshold": (c.number, None)})
        item["cell"] = self.gid(item["cell"], f"{where}.cell")
        return item

    def target(self, value, where: str) -> dict:
        c = self.checker
        item = c.obj(value, where, {"cell": (c.any, _REQUIRED), "point": (c.text, _REQUIRED)})
        item["cell"] = self.gid(item["cell"], f"{where}.cell")
        point = self.point(item["cell"], item["point"], f"{where}.point")
        if point["kind"] in NO_EVENTS:
            c.fail(f"{where}.point", f"{item['point']!r} is an {point['kind']}, which "
                   "receives no events; connect to a synapse (ExpSyn, Exp2Syn)")
        return item


def _join(where: str, key) -> str:
    return f"{where}.{key}" if where else str(key)


def _kind(value) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    names = {str: "a string", bool: "a boolean", int: "a number", float: "a number",
             type(None): "null"}
    return f"{names.get(type(value), type(value).__name__)} ({json.dumps(value)})"


def _suggest(name: str, valid) -> str:
    """`` (did you mean 'x'?)`` for the closest valid name, ignoring case, or ``""``."""
    by_lower = {str(v).lower(): str(v) for v in valid}
    close = difflib.get_close_matches(str(name).lower(), list(by_lower), n=1)
    return f" (did you mean {by_lower[close[0]]!r}?)" if close else ""


def _first_duplicate(values) -> int | None:
    seen: set = set()
    for i, v in enumerate(values):
        if v in seen:
            return i
        seen.add(v)
    return None


def location_key(location) -> tuple[str, float]:
    """(section, x) of a checked location, so that spellings of one place compare equal."""
    if isinstance(location, tuple):
        return location
    match = _LOCATION.match(location)
    return match.group(1), float(match.group(2))
