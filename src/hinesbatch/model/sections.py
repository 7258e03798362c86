"""``SectionCell``: a cell described by its sections, as a hoc template builds one.

NEURON models written in hoc or Python often make their cells without a morphology file::

    create soma, dend[3]
    connect dend[0](0), soma(1)
    soma { L = 12.6157  diam = 12.6157 }
    dend[0] { L = 200  diam = 1  nseg = 1 }

:class:`SectionCell` takes the same description: per section a name, its parent and where
on the parent it connects, its length ``L`` [µm], diameter [µm] and ``nseg``. Everything
else (``insert``, ``set``, ``place``, locations, regions by name prefix) is
:class:`~hinesbatch.model.cell.Cell`'s.

Geometry, as NEURON's ``nrn_area_ri`` computes it
    A *stylized* section (no 3-D points) has ``nseg`` equal segments of length
    ``dx = L/nseg``: area ``PI*diam*dx`` [µm²], and half-segment resistance
    ``rleft = 1e-2*Ra*(dx/2)/(PI*diam*diam/4)`` [MΩ]; ``seg.ri()`` of segment ``i`` is
    ``1/(1/(rleft_i + rright_{i-1}))`` and the x = 1 node's is ``1/(1/rright)``.
    A section given ``pt3d=True`` stands for one with two 3-D points (``pt3dadd`` then
    ``L`` and ``diam`` set, as ringtest's soma): its area and resistance are integrated
    over the points as :func:`hinesbatch.discretize.pt3d.area_ri` does, with the
    diameter rounded to float32 (NEURON's 3-D points are C floats) and the arc length
    ``L`` kept in double. Both agree with NEURON 9.0.2's ``seg.area()`` and ``seg.ri()``
    bit for bit (``tests/validation/test_neuron_ringtest.py``).

Node order: sections are numbered in the order given (a parent before its children) and
connected in that order, so NEURON's sibling rule (``docs/geometry.md``) sees them as a
hoc template that connects ``dend[1]``, ``dend[2]``, ... in turn.
"""
from __future__ import annotations

import numpy as np

from ..discretize.geometry import CellGeometry
from ..discretize.nodes import node_layout
from ..discretize.pt3d import area_ri
from .cell import DEFAULT_CM, DEFAULT_RA, Cell

__all__ = ["SectionCell"]

_PI = 3.14159265358979323846  # NEURON's PI


class SectionCell(Cell):
    """A cell made of sections with ``L``, ``diam`` and ``nseg`` (no morphology file).

    Parameters
    ----------
    names : sequence of str
        Section names, NEURON style (``"soma[0]"``, ``"dend[3]"``); the part before
        ``[`` names a region.
    parents : sequence of int
        Parent section of each section, ``-1`` for the root (section 0 only);
        ``parents[k] < k``.
    lengths_um, diams_um : sequence of float
        ``L`` and ``diam`` of each section [µm], > 0.
    nseg : sequence of int, optional
        Segments per section (1 each by default).
    parent_x : sequence of float, optional
        Where on its parent each section's x = 0 end connects (1 by default).
    pt3d : sequence of bool, optional
        Sections described by two 3-D points rather than stylized (module docstring).
    ra : float
        Axial resistivity [Ω·cm] of every section (35.4).
    cm : float
        Specific membrane capacitance [µF/cm²] of every section (1).
    name : str, optional

    Examples
    --------
    >>> cell = SectionCell(["soma[0]", "dend[0]"], [-1, 0], [12.6157, 200.0],
    ...                    [12.6157, 1.0], pt3d=[True, True], ra=100.0)
    >>> cell.geometry.n_nodes
    5
    """

    def __init__(self, names, parents, lengths_um, diams_um, *, nseg=None, parent_x=None,
                 pt3d=None, ra: float = DEFAULT_RA, cm: float = DEFAULT_CM, name=None):
        names = tuple(str(n) for n in names)
        n = len(names)
        if n == 0:
            raise ValueError("a SectionCell needs at least one section")
        if len(set(names)) != n:
            dup = next(s for s in names if names.count(s) > 1)
            raise ValueError(f"section name {dup!r} appears more than once")
        parents = _array(parents, n, "parents", np.int64)
        lengths = _array(lengths_um, n, "lengths_um", np.float64)
        diams = _array(diams_um, n, "diams_um", np.float64)
        nsegs = _array(np.ones(n, dtype=np.int64) if nseg is None else nseg, n, "nseg",
                       np.int64)
        px = _array(np.ones(n) if parent_x is None else parent_x, n, "parent_x", np.float64)
        shaped = _array(np.zeros(n, dtype=bool) if pt3d is None else pt3d, n, "pt3d", bool)
        if parents[0] != -1 or np.any(parents[1:] < 0) or np.any(parents[1:] >= np.arange(1, n)):
            raise ValueError("parents must be -1 for section 0 (the root) and satisfy "
                             "0 <= parents[k] < k for every other section")
        for what, arr in (("lengths_um", lengths), ("diams_um", diams)):
            bad = np.flatnonzero(~(np.isfinite(arr) & (arr > 0)))
            if bad.size:
                raise ValueError(f"{what} of section {names[bad[0]]} is {arr[bad[0]]}; "
                                 "it must be finite and > 0")
        bad = np.flatnonzero(nsegs < 1)
        if bad.size:
            raise ValueError(f"nseg of section {names[bad[0]]} is {nsegs[bad[0]]}; it must be >= 1")
        bad = np.flatnonzero(~((px >= 0) & (px <= 1)))
        if bad.size:
            raise ValueError(f"parent_x of section {names[bad[0]]} is {px[bad[0]]}; it must "
                             "lie in [0, 1]")
        for what, value in (("ra", ra), ("cm", cm)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    not np.isfinite(value) or value <= 0:
                raise ValueError(f"{what} must be a finite number > 0, got {value!r}")
        self.morphology, self.morphology_path = None, None
        self.nseg, self.d_lambda, self.ra, self.cm = None, None, float(ra), float(cm)
        self.name = name
        self.decor = []
        self.point_processes = []
        self._names = names
        self._types = np.array([1 if s.split("[")[0] == "soma" else 3 for s in names],
                               dtype=np.int32)
        self._geometry = _geometry(names, parents, px, lengths, diams, nsegs, shaped,
                                   float(ra), float(cm), name or "<sections>")

    @property
    def source(self) -> str:
        return self.name or f"<{len(self._names)} sections>"

    @property
    def geometry(self) -> CellGeometry:
        """The discretized cell (:class:`~hinesbatch.CellGeometry`), fixed at creation."""
        return self._geometry

    def section_cm(self) -> np.ndarray:
        """cm [µF/cm²] of every section."""
        return np.full(len(self._names), self.cm)

    def to_dict(self) -> dict:
        raise ValueError("to_dict needs a cell built from an SWC path; a SectionCell is "
                         "rebuilt by the code that describes its sections")

    def __repr__(self) -> str:
        g = self._geometry
        head = (f"SectionCell({self.source!r}, {len(self._names)} sections, "
                f"{g.n_nodes} nodes, ra={self.ra!r}, cm={self.cm!r}, "
                f"L={g.length_um.tolist()!r}, nseg={g.nseg.tolist()!r})")
        return "\n".join([head] + super().__repr__().splitlines()[1:])


def _array(values, n: int, what: str, dtype) -> np.ndarray:
    arr = np.asarray(values)
    if arr.shape != (n,):
        raise ValueError(f"{what} has shape {arr.shape}; expected one value per section ({n})")
    return arr.astype(dtype)


def _geometry(names, parents, parent_x, lengths, diams, nsegs, pt3d, ra, cm, source):
    """NEURON's area and ri of every node (module docstring)."""
    n_seg = int(nsegs.sum())
    area = np.empty(n_seg)
    ri = np.empty(n_seg)
    seg_diam = np.empty(n_seg)
    ri_end = np.empty(len(names))
    s = 0
    for k in range(len(names)):
        ns = int(nsegs[k])
        if pt3d[k]:
            d32 = np.float32(diams[k])
            a, r, e, dm = np.empty(ns), np.empty(ns), np.empty(1), np.empty(ns)
            area_ri(np.array([0.0, lengths[k]]), np.array([d32, d32], dtype=np.float32),
                    np.array([0, 2], dtype=np.int64), np.array([ns], dtype=np.int64), ra,
                    a, r, e, dm)
            area[s:s + ns], ri[s:s + ns], seg_diam[s:s + ns], ri_end[k] = a, r, dm, e[0]
        else:
            diam = float(diams[k])
            dx = float(lengths[k]) / ns
            rleft = 1e-2 * ra * (dx / 2) / (_PI * diam * diam / 4.0)
            area[s:s + ns] = _PI * diam * dx
            seg_diam[s:s + ns] = diam
            rright = 0.0
            for i in range(ns):
                ri[s + i] = 1.0 / (1.0 / (rleft + rright))
                rright = rleft
            ri_end[k] = 1.0 / (1.0 / rright)
        s += ns
    layout = node_layout(nsegs, parents, parent_x)
    seg_nodes = np.flatnonzero(layout.is_segment)
    end_nodes = layout.first_segment + nsegs
    node_area = np.zeros(layout.n_nodes)
    node_area[seg_nodes] = area
    node_ri = np.full(layout.n_nodes, np.inf)
    node_ri[seg_nodes] = ri
    node_ri[end_nodes] = ri_end
    node_diam = np.full(layout.n_nodes, np.nan)
    node_diam[seg_nodes] = seg_diam
    types = np.array([1 if s_.split("[")[0] == "soma" else 3 for s_ in names], dtype=np.int32)
    return CellGeometry(parent=layout.parent, area_um2=node_area, ri_megohm=node_ri,
                        section=layout.section, x=layout.x, has_membrane=layout.is_segment,
                        section_names=tuple(names), nseg=nsegs, length_um=lengths,
                        section_parent=parents, section_parent_x=parent_x, cm=cm, ra=ra,
                        source=source, diam_um=node_diam, section_type=types, soma="none")
