"""Model files: a whole simulation described in one file, for ``hinesbatch run MODEL``.

Two kinds:

- ``.json``: plain data, checked completely before anything is built (the format, with a
  worked example, is in docs/model-files.md; the example model of the test suite is
  ``tests/data/models/two_cells.json``). Top-level keys::

      dt, celsius, v_init, backend, tables, threads   options of hinesbatch.Simulation
      tstop                                           [ms], required
      cells        [{morphology, nseg, d_lambda, ra, cm, name, copies,
                     insert: [{mechanism, region, params}],
                     set:    [{name, value, region}],
                     place:  [{id, kind, location, params}]}]
      stimuli      [{id, kind: NetStim, params}] or [{id, kind: VecStim, times}]
      connections  [{source: {cell, location, threshold} or {stimulus},
                     target: {cell, point}, weight, delay}]
      record       [{variable, cell, location or point, every}] or [{spikes: source}]
      outputs      {npz, spikes, plot, raster}
      description  free text

  ``cell`` numbers are gids: the ``cells`` entries in order, each ``copies`` times.
  ``point`` names a point process by its ``id`` in that cell's ``place`` list. Relative
  paths (``morphology``, ``outputs``) are relative to the model file's folder.

- ``.py``: a Python file run with ``runpy`` (its folder first on ``sys.path``) that defines
  ``simulation`` (a ``hinesbatch.Simulation``) and ``tstop`` [ms], and optionally
  ``outputs`` (a dict as in JSON).

Errors are :class:`ModelFileError` (a ``ValueError``) located like a compiler's:
``model.json:3:14: ...`` for JSON syntax, ``model.json: cells[0].place[1].location: ...``
for the item at that JSON path. Checking is in :mod:`hinesbatch.io.model_check`; building,
through the public API only, is here.
"""
from __future__ import annotations

import contextlib
import importlib
import os
import runpy
import sys
from pathlib import Path

from .model_check import (
    DEFAULT_LOCATION,
    OUTPUT_KINDS,
    ModelChecker,
    ModelFileError,
    location_key,
    read_model,
)

__all__ = ["DEFAULT_LOCATION", "OUTPUT_KINDS", "ModelFileError", "build_model", "load_model",
           "read_model", "save_outputs"]


@contextlib.contextmanager
def _located(file: str, where: str):
    """Re-raise the simulator's errors about one item as ``ModelFileError`` at its path."""
    try:
        yield
    except ModelFileError:
        raise
    except (ValueError, TypeError, KeyError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        raise ModelFileError(file, where, str(message)) from exc


def build_model(model: dict, *, api=None):
    """Build the simulation a checked model describes (:func:`read_model`'s result),
    through the public API only: ``Cell``, ``cell.insert/set/place``, ``Simulation``,
    ``sim.net_stim/vec_stim/spike_source/connect/record/record_spikes``.

    Parameters
    ----------
    model : dict
        As returned by :func:`read_model`.
    api : module, optional
        The namespace providing ``Cell`` and ``Simulation``; ``hinesbatch`` by default.

    Returns
    -------
    simulation : hinesbatch.Simulation
    tstop : float
        [ms]
    outputs : dict of str to pathlib.Path
        Output kind (``npz``, ``spikes``, ``plot``, ``raster``) -> file.

    Raises
    ------
    ModelFileError
        When the simulator refuses an item (an unknown parameter, a location outside the
        cell), naming the item's JSON path and the simulator's reason.
    """
    hb = importlib.import_module("hinesbatch") if api is None else api
    file = model["file"]
    cells, points = [], []
    for i, spec in enumerate(model["cells"]):
        for _ in range(spec["copies"]):
            cell, placed = _build_cell(hb, file, f"cells[{i}]", spec)
            cells.append(cell)
            points.append(placed)
    with _located(file, ""):
        sim = hb.Simulation(cells, **model["simulation"])
    stimuli = {}
    for k, s in enumerate(model["stimuli"]):
        with _located(file, f"stimuli[{k}]"):
            stimuli[s["id"]] = (sim.net_stim(**s["params"]) if s["kind"] == "NetStim"
                                else sim.vec_stim(s["times"]))
    sources = _spike_sources(sim, model, stimuli)
    for k, c in enumerate(model["connections"]):
        target = points[c["target"]["cell"]][c["target"]["point"]]
        with _located(file, f"connections[{k}]"):
            sim.connect(sources[k, "source"], target, weight=c["weight"], delay=c["delay"])
    for k, r in enumerate(model["record"]):
        with _located(file, f"record[{k}]"):
            if "spikes" in r:
                sim.record_spikes(sources[k, "record"])
            elif r["point"] is not None:
                sim.record(r["variable"], target=points[r["cell"]][r["point"]],
                           every=r["every"])
            else:
                sim.record(r["variable"], cell=r["cell"], location=r["location"],
                           every=r["every"])
    return sim, float(model["tstop"]), dict(model["outputs"])


def _build_cell(hb, file: str, where: str, spec: dict):
    with _located(file, where):
        cell = hb.Cell(spec["morphology"], **spec["options"])
    for j, item in enumerate(spec["insert"]):
        with _located(file, f"{where}.insert[{j}]"):
            cell.insert(item["mechanism"], item["region"], **item["params"])
    for j, item in enumerate(spec["set"]):
        with _located(file, f"{where}.set[{j}]"):
            cell.set(item["name"], item["value"], item["region"])
    placed = {}
    for j, item in enumerate(spec["place"]):
        with _located(file, f"{where}.place[{j}]"):
            point = cell.place(item["kind"], item["location"], **item["params"])
        if item["id"] is not None:
            placed[item["id"]] = point
    return cell, placed


def _spike_sources(sim, model: dict, stimuli: dict) -> dict:
    """The spike source of each connection and spike recording, keyed (index, "source")
    and (index, "record"). A cell's source is made once per (gid, location), with the
    threshold the file gives it last (NEURON's rule: the last threshold set wins), 10 mV
    by default as NEURON's."""
    uses = [((k, "source"), c["source"]) for k, c in enumerate(model["connections"])]
    uses += [((k, "record"), r["spikes"]) for k, r in enumerate(model["record"]) if "spikes" in r]
    thresholds: dict[tuple, float] = {}
    for _, src in uses:
        if "cell" in src and src["threshold"] is not None:
            thresholds[src["cell"], location_key(src["location"])] = src["threshold"]
    made: dict[tuple, object] = {}
    out = {}
    for (k, role), src in uses:
        if "stimulus" in src:
            out[k, role] = stimuli[src["stimulus"]]
            continue
        ident = (src["cell"], location_key(src["location"]))
        if ident not in made:
            where = f"{'connections' if role == 'source' else 'record'}[{k}]"
            with _located(model["file"], where):
                made[ident] = sim.spike_source(src["cell"], src["location"],
                                               threshold=thresholds.get(ident, 10.0))
        out[k, role] = made[ident]
    return out


# -- Python model files -----------------------------------------------------------------
def _load_python(path: Path, file: str, api=None):
    """Run a ``.py`` model and take its ``simulation``, ``tstop`` and ``outputs``."""
    folder = str(path.resolve().parent)
    sys.path.insert(0, folder)
    try:
        namespace = runpy.run_path(str(path), run_name="__hinesbatch_model__")
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(folder)
    hb = importlib.import_module("hinesbatch") if api is None else api
    if "simulation" not in namespace:
        raise ModelFileError(file, "", "defines no `simulation` (set simulation = "
                             "hinesbatch.Simulation(...))")
    sim = namespace["simulation"]
    kind = getattr(hb, "Simulation", None)
    if (kind is not None and not isinstance(sim, kind)) or not callable(getattr(sim, "run",
                                                                                 None)):
        raise ModelFileError(file, "simulation", f"must be a hinesbatch.Simulation, not "
                             f"{type(sim).__name__}")
    if "tstop" not in namespace:
        raise ModelFileError(file, "", "defines no `tstop` (the simulated time [ms])")
    checker = ModelChecker(file, path.resolve().parent, None)
    tstop = checker.positive(namespace["tstop"], "tstop")
    outputs = checker.outputs(namespace.get("outputs", {}), "outputs")
    return sim, float(tstop), outputs


def load_model(path: str | os.PathLike, *, api=None):
    """Read a model file and build its simulation.

    Parameters
    ----------
    path : str or os.PathLike
        A ``.json`` model (checked completely first, see :func:`read_model`) or a ``.py``
        model (run; it must define ``simulation`` and ``tstop``, optionally ``outputs``).
    api : module, optional
        The namespace providing ``Cell`` and ``Simulation``; ``hinesbatch`` by default.

    Returns
    -------
    simulation : hinesbatch.Simulation
    tstop : float
        [ms]
    outputs : dict of str to pathlib.Path
        Output kind (``npz``, ``spikes``, ``plot``, ``raster``) -> file, relative paths
        taken from the model file's folder; empty when the model asks for none.
    """
    file = str(path)
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".json", ".py"):
        raise ModelFileError(file, "", f"unknown model file type '{path.suffix}'; "
                             "use .json or .py")
    if not path.is_file():
        raise FileNotFoundError(f"{file}: no such model file")
    if suffix == ".py":
        return _load_python(path, file, api)
    return build_model(read_model(path), api=api)


def save_outputs(results, outputs: dict) -> dict:
    """Write what a model's ``outputs`` ask for.

    Parameters
    ----------
    results : hinesbatch.Results
        The run's results.
    outputs : dict of str to path
        Kind (``npz``, ``spikes``, ``plot``, ``raster``) -> file, as :func:`load_model`
        returns them.

    Returns
    -------
    dict of str to pathlib.Path
        Kind -> the file written (``.npz`` or ``.png`` appended where missing).
    """
    unknown = [k for k in outputs if k not in OUTPUT_KINDS]
    if unknown:
        raise ValueError(f"unknown output {unknown[0]!r}; valid: {', '.join(OUTPUT_KINDS)}")
    writers = {"npz": results.save, "spikes": results.save_spikes,
               "plot": lambda p: _figure_file(results.plot, p),
               "raster": lambda p: _figure_file(results.raster, p)}
    return {kind: Path(writers[kind](path)) for kind, path in outputs.items()}


def _figure_file(draw, path) -> Path:
    from .plots import figure_path

    draw(path)
    return figure_path(path)[0]
