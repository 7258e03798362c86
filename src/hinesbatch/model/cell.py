"""``Cell``: a morphology, a discretization policy and a decor (mechanisms painted on
regions, point processes placed at locations), as plain data.

Regions are ``"all"``, the SWC types ``"soma"``, ``"axon"``, ``"dend"``, ``"apic"``, any
other section-name prefix of the cell (``"dend_5"``), a section name (``"dend[3]"``), or a
list of those. A location is NEURON's ``"soma[0](0.5)"`` or a tuple ``("soma[0]", 0.5)``.
"""
from __future__ import annotations

import functools

import os
from dataclasses import dataclass
from numbers import Real

import numpy as np

from .. import mechanisms as _mechanisms
from ..discretize.build import discretize_sections, section_table
from ..morphology.model import Morphology
from ..morphology.swc import read_swc

__all__ = ["Cell", "PointProcess", "format_location", "parse_location"]

SWC_REGIONS = ("soma", "axon", "dend", "apic")
DEFAULT_RA, DEFAULT_CM = 35.4, 1.0

#: Morphologies read from a path, shared by every cell built from that path.
_MORPHOLOGIES: dict = {}
#: Geometries by (morphology identity, policy), shared by cells with the same ones.
_GEOMETRIES: dict = {}
#: Section names and types by morphology identity, shared by every cell of that morphology
#: (building the table is Import3d's whole walk of the samples, milliseconds per cell).
_SECTION_TABLES: dict = {}


def parse_location(location) -> tuple[str, float]:
    """``"soma[0](0.5)"`` or ``("soma[0]", 0.5)`` -> ``("soma[0]", 0.5)``.

    Raises
    ------
    ValueError
        The text cannot be read, or x lies outside [0, 1].
    """
    from ..sim.stimuli import parse_location as _parse

    if isinstance(location, tuple) and len(location) == 2:
        name, x = location
        if not isinstance(name, str) or isinstance(x, bool) or not isinstance(x, Real):
            raise ValueError(f"a location is (section name, x), got {location!r}")
        if not 0.0 <= float(x) <= 1.0:
            raise ValueError(f"the location {location!r} has x = {x}; x must lie in [0, 1]")
        return name, float(x)
    if not isinstance(location, str):
        raise TypeError(f"a location is 'section(x)' or (section, x), got {location!r}")
    return _parse(location)


def format_location(section: str, x: float) -> str:
    """``("soma[0]", 0.5)`` -> ``"soma[0](0.5)"``."""
    return f"{section}({x:g})"


@dataclass(eq=False)
class PointProcess:
    """A point process placed on a cell (an IClamp, a synapse, ...).

    Attributes
    ----------
    cell : Cell
    kind : str
        Mechanism name (``"IClamp"``, ``"ExpSyn"``...).
    location : str
        ``"soma[0](0.5)"``.
    params : dict
        Parameter values set at placement (NEURON's names); others keep their defaults.
    index : int
        Creation order within the cell.
    """

    cell: Cell
    kind: str
    location: str
    params: dict
    index: int
    kind_index: int = 0

    @property
    def name(self) -> str:
        """``"IClamp[0]"``: the kind and its creation index among that kind in the cell."""
        return f"{self.kind}[{self.kind_index}]"

    def __repr__(self) -> str:
        ps = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{self.kind}({self.location!r}{', ' if ps else ''}{ps})"


def _not_artificial(mech) -> None:
    """Refuse an artificial cell (NEURON's ARTIFICIAL_CELL) where a cell's mechanism is
    expected: it belongs to no cell and has no location."""
    if mech.kind == "artificial":
        make = ("net_stim(...)" if mech.name == "NetStim" else "vec_stim(...)"
                if mech.name == "VecStim" else f"artificial_cell({mech.name!r}, ...)")
        raise ValueError(f"{mech.name} is an ARTIFICIAL_CELL: it belongs to no cell and has "
                         f"no location; make one with Simulation.{make}")


class Cell:
    """One cell: morphology + discretization policy + decor.

    Parameters
    ----------
    morphology : Morphology or path
        The cell's shape; a path is read with :func:`hinesbatch.read_swc` (once per path).
    nseg : int or dict, optional
        Segments per section, or ``{region: nseg}``. NEURON's default is 1.
    d_lambda : float or dict, optional
        NEURON's d_lambda rule at 100 Hz, or ``{region: d_lambda}``; a region gets nseg or
        d_lambda, not both.
    ra : float or dict
        Axial resistivity [Ω·cm] (35.4), or ``{region: ra}``.
    cm : float or dict
        Specific membrane capacitance [µF/cm²] (1), or ``{region: cm}``.
    name : str, optional

    Notes
    -----
    In a dict, later entries override earlier ones where regions overlap
    (``{"all": 1, "soma": 3}``).
    """

    def __init__(self, morphology, *, nseg=None, d_lambda=None, ra=DEFAULT_RA,
                 cm=DEFAULT_CM, name=None):
        if isinstance(morphology, Morphology):
            self.morphology, self.morphology_path = morphology, None
        elif isinstance(morphology, (str, os.PathLike)):
            path = os.fspath(morphology)
            self.morphology_path = path
            key = os.path.abspath(path)
            if key not in _MORPHOLOGIES:
                _MORPHOLOGIES[key] = read_swc(path)
            self.morphology = _MORPHOLOGIES[key]
        else:
            raise TypeError("morphology must be a Morphology or a path to an SWC file, got "
                            f"{type(morphology).__name__}")
        self.nseg, self.d_lambda, self.ra, self.cm = nseg, d_lambda, ra, cm
        self.name = name
        self.decor: list = []          # ("insert", mech, region, params) / ("set", ...)
        self.point_processes: list = []
        self._names, self._types = _section_table(self.morphology)
        self._policy_arrays()          # validates the policy now

    # ---- regions and locations --------------------------------------------------------
    @property
    def section_names(self) -> tuple:
        return self._names

    def regions(self) -> list[str]:
        """Valid region names of this cell (besides section names)."""
        prefixes = sorted({n.split("[")[0] for n in self._names})
        return ["all"] + [r for r in SWC_REGIONS] + [p for p in prefixes
                                                     if p not in SWC_REGIONS]

    def sections_of(self, region) -> np.ndarray:
        """Indices of the sections in ``region`` (bool mask over sections).

        Raises
        ------
        ValueError
            Unknown region; the message lists the valid ones.
        """
        if isinstance(region, (list, tuple)):
            mask = np.zeros(len(self._names), dtype=bool)
            for r in region:
                mask |= self.sections_of(r)
            return mask
        if not isinstance(region, str):
            raise TypeError(f"a region is a name or a list of names, got {region!r}")
        if region == "all":
            return np.ones(len(self._names), dtype=bool)
        names, prefixes = _name_arrays(self._names)
        if region in self._names:
            return names == region
        if region in SWC_REGIONS or (prefixes == region).any():
            return prefixes == region
        shown = ", ".join(self._names[:6]) + (", ..." if len(self._names) > 6 else "")
        raise ValueError(f"unknown region {region!r} in {self.source}; valid regions: "
                         f"{', '.join(self.regions())}, or a section name ({shown})")

    @property
    def source(self) -> str:
        return self.morphology_path or self.morphology.source

    def _policy_arrays(self):
        n = len(self._names)
        arrays = {}
        for key, value, default in (("nseg", self.nseg, 0), ("d_lambda", self.d_lambda, np.nan),
                                    ("ra", self.ra, DEFAULT_RA), ("cm", self.cm, DEFAULT_CM)):
            arr = np.full(n, default, dtype=float)
            items = value.items() if isinstance(value, dict) else \
                ([] if value is None else [("all", value)])
            for region, val in items:
                if isinstance(val, bool) or not isinstance(val, Real):
                    raise TypeError(f"{key} for region {region!r} must be a number, got "
                                    f"{type(val).__name__}")
                arr[self.sections_of(region)] = val
            arrays[key] = arr
        both = (arrays["nseg"] > 0) & np.isfinite(arrays["d_lambda"])
        if both.any():
            raise ValueError("give nseg or d_lambda for a region, not both: section "
                             f"{self._names[int(np.argmax(both))]} has both")
        arrays["nseg"][(arrays["nseg"] <= 0) & ~np.isfinite(arrays["d_lambda"])] = 1
        if (arrays["nseg"] != np.round(arrays["nseg"])).any():
            raise ValueError(f"nseg must be an integer, got {self.nseg!r}")
        return arrays

    @property
    def geometry(self):
        """The discretized cell (:class:`~hinesbatch.CellGeometry`), shared by every cell
        with the same morphology and policy."""
        p = self._policy_arrays()
        key = (id(self.morphology), p["nseg"].tobytes(), p["d_lambda"].tobytes(),
               p["ra"].tobytes(), p["cm"].tobytes())
        if key not in _GEOMETRIES:
            _GEOMETRIES[key] = (self.morphology, discretize_sections(
                self.morphology, nseg=p["nseg"].astype(np.int64), d_lambda=p["d_lambda"],
                ra=p["ra"], cm=p["cm"]))
        return _GEOMETRIES[key][1]

    def section_cm(self) -> np.ndarray:
        """cm [µF/cm²] of every section."""
        return self._policy_arrays()["cm"]

    def check_location(self, location) -> tuple[str, float]:
        sec, x = parse_location(location)
        if sec not in self._names:
            shown = ", ".join(self._names[:8]) + (", ..." if len(self._names) > 8 else "")
            raise ValueError(f"location {format_location(sec, x)!r} is outside the cell "
                             f"{self.source}: no section {sec!r}; sections: {shown}")
        return sec, x

    # ---- the decor --------------------------------------------------------------------
    def insert(self, mechanism: str, region="all", **params) -> Cell:
        """Insert a density mechanism in ``region`` (NEURON's ``insert``), with parameters.

        ``params`` use NEURON's full names (``gnabar_hh=0.2``) or the short ones
        (``gnabar=0.2``). Returns the cell (chainable).
        """
        mech = _mechanisms.get(mechanism)
        _not_artificial(mech)
        if mech.kind != "density":
            raise ValueError(f"{mech.name} is a {mech.kind} mechanism: use cell.place(...) "
                             f"for point processes; density mechanisms: "
                             f"{', '.join(m for m in _mechanisms.names() if _mechanisms.get(m).kind == 'density')}")
        self.sections_of(region)
        values = {_density_param(mech, k): _number(k, v) for k, v in params.items()}
        self.decor.append(("insert", mech.name, _region_data(region), values))
        return self

    def set(self, name: str, value, region="all") -> Cell:
        """Set a range parameter (``"gnabar_hh"``, ``"e_pas"``) in ``region``, where its
        mechanism is inserted. Returns the cell."""
        mech_name, param = _split_range_name(name)
        _density_param(_mechanisms.get(mech_name), name)
        self.sections_of(region)
        self.decor.append(("set", mech_name, _region_data(region), {param: _number(name, value)}))
        return self

    def place(self, kind: str, location="soma[0](0.5)", **params) -> PointProcess:
        """Place a point process (``IClamp``, ``SEClamp``, ``ExpSyn``, ``Exp2Syn``).

        Raises
        ------
        ValueError
            Unknown kind or parameter (listing the valid ones), a location outside the cell.
        """
        mech = _mechanisms.get(kind)
        _not_artificial(mech)
        if mech.kind != "point":
            raise ValueError(f"{mech.name} is not a point process; point processes: "
                             f"{', '.join(m for m in _mechanisms.names() if _mechanisms.get(m).kind == 'point')}")
        sec, x = self.check_location(location)
        values = {}
        for k, v in params.items():
            key = mech.aliases.get(k, k)
            if key not in mech.parameter_names:
                raise ValueError(f"{mech.name} has no parameter {k!r}; parameters: "
                                 f"{', '.join(mech.parameter_names)}")
            values[key] = _number(k, v)
        same = sum(1 for p in self.point_processes if p.kind == mech.name)
        pp = PointProcess(self, mech.name, format_location(sec, x), values,
                          len(self.point_processes), same)
        self.point_processes.append(pp)
        return pp

    # ---- plain data -------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The cell as plain data (JSON-ready); :meth:`from_dict` rebuilds it."""
        if self.morphology_path is None:
            raise ValueError("to_dict needs a cell built from an SWC path (the morphology "
                             "object itself is not plain data)")
        return {
            "morphology": self.morphology_path,
            "nseg": self.nseg, "d_lambda": self.d_lambda, "ra": self.ra, "cm": self.cm,
            "name": self.name,
            "decor": [{"op": op, "mechanism": m, "region": r, "params": dict(p)}
                      for op, m, r, p in self.decor],
            "point_processes": [{"kind": p.kind, "location": p.location,
                                 "params": dict(p.params)} for p in self.point_processes],
        }

    @classmethod
    def from_dict(cls, data: dict) -> Cell:
        """Rebuild a cell from :meth:`to_dict`'s output."""
        cell = cls(data["morphology"], nseg=data.get("nseg"), d_lambda=data.get("d_lambda"),
                   ra=data.get("ra", DEFAULT_RA), cm=data.get("cm", DEFAULT_CM),
                   name=data.get("name"))
        for item in data.get("decor", []):
            if item["op"] == "insert":
                cell.insert(item["mechanism"], item["region"], **item["params"])
            else:
                for k, v in item["params"].items():
                    cell.set(f"{k}_{item['mechanism']}", v, item["region"])
        for p in data.get("point_processes", []):
            cell.place(p["kind"], p["location"], **p["params"])
        return cell

    def __repr__(self) -> str:
        policy = ", ".join(f"{k}={v!r}" for k, v in (("nseg", self.nseg),
                                                     ("d_lambda", self.d_lambda),
                                                     ("ra", self.ra), ("cm", self.cm))
                           if v is not None)
        lines = [f"Cell({self.source!r}, {policy}{', name=' + repr(self.name) if self.name else ''})"]
        for op, m, r, p in self.decor:
            ps = ", ".join(f"{k}={v!r}" for k, v in p.items())
            lines.append(f"  {op} {m} in {r!r}{': ' + ps if ps else ''}")
        for p in self.point_processes:
            lines.append(f"  {p.name} at {p!r}")
        return "\n".join(lines)

    # ---- what the engine reads --------------------------------------------------------
    def density_values(self, geometry=None) -> dict:
        """``{mechanism: (node mask, {param: per-node values})}`` after the decor.

        Nodes are those of :attr:`geometry`; only membrane nodes carry mechanisms.
        """
        geo = self.geometry if geometry is None else geometry
        out: dict = {}
        for op, m, region, params in self.decor:
            mech = _mechanisms.get(m)
            fields = mech.fields
            nodes = self.sections_of(_region_value(region))[geo.section] & geo.has_membrane
            if op == "insert":
                if m not in out:
                    settable = set(mech.parameter_names)
                    out[m] = (np.zeros(geo.n_nodes, dtype=bool),
                              {p.name: np.full(geo.n_nodes, p.default)
                               for p in fields if p.name in settable})
                mask, values = out[m]
                newly = nodes & ~mask
                for p in fields:            # re-inserting keeps values, as NEURON
                    if p.name in values:
                        values[p.name][newly] = p.default
                mask |= nodes
                sel = nodes
            else:
                if m not in out:
                    continue
                mask, values = out[m]
                sel = nodes & mask
            for k, v in params.items():
                values[k][sel] = v
        return out


@functools.lru_cache(maxsize=64)
def _name_arrays(names: tuple) -> tuple[np.ndarray, np.ndarray]:
    """The section names and their prefixes (``dend`` of ``dend[3]``) as arrays, once per
    distinct tuple of names (every cell of a morphology has the same)."""
    return np.array(names), np.array([n.split("[")[0] for n in names])


def _section_table(morphology: Morphology) -> tuple[tuple, np.ndarray]:
    """:func:`section_table` of ``morphology``, computed once per morphology object (the
    types read-only, as every cell of the morphology shares them)."""
    key = id(morphology)
    if key not in _SECTION_TABLES:
        names, types = section_table(morphology)
        types.setflags(write=False)
        _SECTION_TABLES[key] = (morphology, names, types)  # the morphology keeps its id
    return _SECTION_TABLES[key][1:]


def _region_data(region):
    return list(region) if isinstance(region, (list, tuple)) else region


def _region_value(region):
    return region


def _number(name, value) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return float(value)


def _split_range_name(name: str) -> tuple[str, str]:
    """``"gnabar_hh"`` -> ``("hh", "gnabar")``; the reversal potentials ``ena`` and ``ek``
    (read by ``hh``) -> ``("hh", "ena")``."""
    if name in ("ena", "ek"):
        return "hh", name
    if not isinstance(name, str) or "_" not in name:
        raise ValueError(f"a range parameter is NAME_MECHANISM (e.g. 'gnabar_hh', 'g_pas'), "
                         f"got {name!r}")
    for m in _mechanisms.names():
        if name.endswith("_" + m):
            return m, name[: -len(m) - 1]
    raise ValueError(f"{name!r} names no mechanism; density mechanisms: "
                     f"{', '.join(m for m in _mechanisms.names() if _mechanisms.get(m).kind == 'density')}")


def _density_param(mech, key: str) -> str:
    """The short name of parameter ``key`` (``gnabar_hh`` or ``gnabar``) of ``mech``."""
    short = key[: -len(mech.name) - 1] if key.endswith("_" + mech.name) else key
    if short not in mech.parameter_names:
        valid = [p if p.startswith("e") and p in ("ena", "ek") else f"{p}_{mech.name}"
                 for p in mech.parameter_names]
        raise ValueError(f"{mech.name} has no parameter {key!r}; parameters: "
                         f"{', '.join(valid)}")
    return short
