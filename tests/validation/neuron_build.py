"""Build a cell from an SWC file in NEURON, the way a NEURON user does (Import3d).

Shared by the validation tests (geometry here, passive simulations elsewhere)::

    h, secs = build_neuron_cell(path, nseg=3, ra=35.4, cm=1.0)
    secs["soma[0]"](0.5).area()

NEURON keeps global state: every call first deletes all existing sections, so only the
last cell built exists. Import3d prints notices ("One point section ... removed") to
stdout; they are harmless. Loading NEURON and building the cell are the benchmarks' own
(:mod:`hinesbatch.bench.neuron_models`), so the benchmarks time the model validated here.
"""
from __future__ import annotations

import os

import numpy as np

from hinesbatch.bench.neuron_models import build_cell, delete_all_sections, load_neuron

__all__ = ["LOCATIONS", "build_neuron_cell", "delete_all_sections", "geom_nseg", "load_neuron",
           "segment_table"]

#: Interior locations whose node segment_table reports (via its ri).
LOCATIONS = (0.1, 0.5, 0.7, 0.999)


def build_neuron_cell(path: str | os.PathLike, *, nseg: int | None = 1, ra: float = 35.4,
                      cm: float = 1.0, d_lambda: float | None = None, freq: float = 100.0):
    """Instantiate ``path`` in NEURON with Import3d (``instantiate(None)``).

    Parameters
    ----------
    path : path of an SWC file
    nseg : int or None
        Segments in every section (ignored when ``d_lambda`` is given).
    ra, cm : float
        ``Ra`` [Ω·cm] and ``cm`` [µF/cm²] of every section.
    d_lambda : float, optional
        Set nseg by NEURON's d_lambda rule (``geom_nseg`` of fixnseg.hoc) at ``freq`` Hz.

    Returns
    -------
    h : the ``neuron.h`` object
    sections : dict[str, Section]
        Every section by NEURON's name (``"soma[0]"``, ``"dend[12]"``...), in
        ``h.allsec()`` order.
    """
    return build_cell(path, ra=ra, cm=cm, d_lambda=d_lambda, nseg=nseg, freq=freq)


def geom_nseg(d_lambda: float, *, freq: float = 100.0) -> None:
    """NEURON's d_lambda rule over all sections (fixnseg.hoc's ``geom_nseg``)."""
    load_neuron().hinesbatch_geom_nseg(d_lambda, freq)


def segment_table(sections: dict) -> dict:
    """What NEURON says about every section's geometry.

    Returns
    -------
    dict
        ``{name: {...}}`` with ``nseg``, ``L`` [µm], ``parent`` (name or None),
        ``parent_x``, ``area`` [µm²], ``ri`` [MΩ] and ``diam`` [µm] (float64 arrays over the
        segments), ``ri1`` (``sec(1).ri()``, the x = 1 node), ``ri0`` (``sec(0).ri()``:
        the ri of the node the section hangs on; 1e30 at the root node) and ``ri_at``
        (``{x: sec(x).ri()}`` for x in :data:`LOCATIONS`: which node a location maps to).
    """
    for sec in sections.values():
        # area() recomputes a section's area and ri after an nseg/Ra change, ri() does not:
        # without this, sec(0).ri() could read its parent section's stale value.
        sec(0.5).area()
    table = {}
    for name, sec in sections.items():
        parent = sec.parentseg()
        segs = list(sec)
        table[name] = {
            "nseg": sec.nseg,
            "L": sec.L,
            "parent": None if parent is None else parent.sec.name(),
            "parent_x": None if parent is None else parent.x,
            "area": np.array([seg.area() for seg in segs]),
            "ri": np.array([seg.ri() for seg in segs]),
            "diam": np.array([seg.diam for seg in segs]),
            "ri1": sec(1).ri(),
            "ri0": sec(0).ri(),
            "ri_at": {x: sec(x).ri() for x in LOCATIONS},
        }
    return table
