"""NEURON's Import3d rules: SWC samples -> sections with their 3-D (pt3d) points.

This reproduces ``Import3d_SWC_read`` + ``Import3d_GUI.instantiate`` of NEURON 9.0.2
(``share/lib/hoc/import3d/{read_swc,import3d_gui}.hoc``) rule for rule, so that the
sections, their names, their points and where they attach are NEURON's. The rules are
written out in ``docs/geometry.md``; comments below name the hoc procedure each step
mirrors. Nothing here computes areas: that is :mod:`hinesbatch.discretize.pt3d`.

Precision: coordinates and radii are rounded to float32 as NEURON's ``sscanf("%f")``
does; the one computed coordinate (the ends of a one-point soma) is computed in double
from those. Every pt3d value then takes the path of ``instantiate(None)``: printed with
``%.8g`` into a hoc command, parsed, and stored as a C float (:func:`hoc_pt3d_values`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..morphology.model import Morphology

__all__ = ["Sections", "hoc_pt3d_values", "import3d_sections", "section_name"]

SOMA = 1


@dataclass(frozen=True, eq=False)
class Sections:
    """The sections NEURON instantiates from one SWC file, in Import3d's order.

    Attributes
    ----------
    names : tuple of str
        NEURON's section names (``soma[0]``, ``dend[3]``, ``dend_7[0]``, ``minus_2[0]``).
    types : int32[S]
        SWC type of each section (the type of its first own sample).
    parent : int64[S]
        Parent section, ``-1`` for the root (section 0). ``parent[k] < k``.
    parent_x : float64[S]
        Position on the parent where the section's x = 0 end is connected (0, 0.5 or 1).
    wire : bool[S]
        True where Import3d connects the section by a "wire" (``pt3dstyle 1``): its first
        point is its own first sample, not a copy of the parent sample.
    pt_offsets : int64[S + 1]
        Section ``k`` owns points ``pt_offsets[k]:pt_offsets[k + 1]`` (at least 2 each).
    xyz : float32[P, 3]
        pt3d coordinates [µm], as NEURON stores them.
    diam : float32[P]
        pt3d diameters [µm], as NEURON stores them.
    pt_sample : int64[P]
        Index (into the morphology's samples) each point was made from.
    soma : str
        How the soma was read: ``"one-point"``, ``"three-point"`` (NeuroMorpho.Org's rule,
        reduced to one point), ``"multi-point"`` or ``"none"``.
    """

    names: tuple
    types: np.ndarray
    parent: np.ndarray
    parent_x: np.ndarray
    wire: np.ndarray
    pt_offsets: np.ndarray
    xyz: np.ndarray
    diam: np.ndarray
    pt_sample: np.ndarray
    soma: str

    @property
    def n_sections(self) -> int:
        return len(self.names)


@dataclass
class _RawSection:
    """One ``Import3d_Section`` before instantiation (mutable while rules are applied)."""

    first: int              # first own sample
    own: range              # own samples (file order)
    type: int
    parent: int = -1        # index into the raw section list
    parent_x: float = 1.0   # Import3d_Section's default
    wire: bool = False      # Import3d's ``first == 1``
    copy: int = -1          # sample copied as the first point (-1: none)
    copy_diam: float = 0.0  # diameter of that copy [µm]


def hoc_pt3d_values(values: np.ndarray) -> np.ndarray:
    """The float32 values ``pt3dadd`` stores when Import3d instantiates through hoc.

    ``Import3d_GUI.instantiate(None)`` writes every coordinate and diameter into a hoc
    command with ``%.8g``; ``pt3dadd`` parses it as a double and stores a C float. For
    values read from the file this is their float32 value; it differs (by one float32
    step) for the computed ends of a one-point soma, for example.

    Parameters
    ----------
    values : float64 array [µm]

    Returns
    -------
    float32 array of the same shape
    """
    flat = [float(f"{v:.8g}") for v in np.asarray(values, dtype=np.float64).ravel().tolist()]
    return np.asarray(flat, dtype=np.float64).astype(np.float32).reshape(np.shape(values))


def section_name(swc_type: int) -> str:
    """NEURON's section array name for an SWC type (``Import3d_GUI.type2name``)."""
    return {1: "soma", 2: "axon", 3: "dend", 4: "apic"}.get(
        swc_type, f"minus_{-swc_type}" if swc_type < 0 else f"dend_{swc_type}")


def import3d_sections(morph: Morphology) -> Sections:
    """Cut ``morph`` into NEURON's sections with NEURON's pt3d points.

    Parameters
    ----------
    morph : Morphology
        Samples in file order (``parents[i] < i``).

    Returns
    -------
    Sections
    """
    n = morph.n_samples
    if n == 0:
        raise ValueError(f"{morph.source}: the morphology has no samples")
    types = [int(t) for t in morph.types]
    parents = [int(p) for p in morph.parents]
    xyz32 = np.asarray(morph.xyz, dtype=np.float64).astype(np.float32)
    diam32 = 2 * np.asarray(morph.radii, dtype=np.float64).astype(np.float32)
    n_soma = types.count(SOMA)
    nchild, prox = _mark_branch(types, parents)
    nchild_soma = _soma_children(types, parents)
    three_point = n_soma == 3 and _neuromorpho_three_point(parents, nchild, xyz32, diam32)
    if three_point:
        parents[2] = 1  # Import3d: "prevent treating as two soma sections"
    _join_soma_runs(types, parents, nchild, nchild_soma)
    raw = _make_sections(types, parents, nchild, prox, nchild_soma, three_point, diam32)
    raw = _remove_invalid(raw, xyz32)
    if n_soma == 0:
        soma = "none"
    elif three_point:
        soma = "three-point"
    elif n_soma == 1 and types[0] == SOMA:
        soma = "one-point"
    else:
        soma = "multi-point"
    return _instantiate(raw, xyz32, diam32, soma)


def _mark_branch(types, parents):
    """``mark_branch``: child counts that decide where sections end, and connect2prox."""
    n = len(types)
    nchild = [0.0] * n
    prox = [False] * n
    for i in range(1, n):
        p = parents[i]
        if p < 0:
            continue
        nchild[p] += 1
        if p != i - 1:
            nchild[p] += 0.01
            if p > 1:
                if types[p] != SOMA and types[parents[p]] == SOMA:
                    prox[i] = True
                    nchild[p] = 1
            elif p == 0 and types[p] != SOMA:
                prox[i] = True
                nchild[p] = 1
        if types[p] != types[i]:
            nchild[p] += 0.01
    return nchild, prox


def _soma_children(types, parents):
    """``sectionify``: number of soma-type children of every soma sample."""
    count = [0] * len(types)
    for i in range(1, len(types)):
        p = parents[i]
        if types[i] == SOMA and p >= 0 and types[p] == SOMA:
            count[p] += 1
    return count


def _neuromorpho_three_point(parents, nchild, xyz32, diam32) -> bool:
    """``neuromorph_3point_soma``: samples 1 and 2 hang on sample 0 alone, same diameter,
    and together span one diameter (within 1 %)."""
    if len(parents) < 3 or parents[1] != 0 or parents[2] != 0:
        return False
    if nchild[1] != 0 or nchild[2] != 0:
        return False
    d0 = float(diam32[0])
    if float(diam32[1]) != d0 or float(diam32[2]) != d0:
        return False
    p = xyz32.astype(np.float64)
    length = 0.0
    for i in (1, 2):
        length += float(np.sqrt((p[i, 0] - p[0, 0]) ** 2 + (p[i, 1] - p[0, 1]) ** 2
                                + (p[i, 2] - p[0, 2]) ** 2))
    if d0 == 0.0:  # hoc would stop with "division by zero"; no sphere rule then
        return False
    return abs(length / d0 - 1) < 0.01


def _join_soma_runs(types, parents, nchild, nchild_soma) -> None:
    """``sectionify``: a soma sample followed by its own soma child does not end a section,
    unless it is not sample 0 and has more than one soma child."""
    for i in range(len(types) - 1):
        if types[i] == SOMA and types[i + 1] == SOMA and parents[i + 1] == i:
            if not (i != 0 and nchild_soma[i] > 1):
                nchild[i] = 1


def _make_sections(types, parents, nchild, prox, nchild_soma, three_point, diam32):
    """``sectionify`` + ``mksections``: runs of consecutive samples, parents, parentx, wires."""
    ends = [i for i, c in enumerate(nchild) if c != 1]
    owner = [0] * len(types)
    raw = []
    start = 0
    for k, end in enumerate(ends):
        own = range(start, 1 if (k == 0 and three_point) else end + 1)
        raw.append(_RawSection(first=start, own=own, type=types[start]))
        for i in range(start, end + 1):
            owner[i] = k
        start = end + 1
    for k in range(1, len(raw)):
        _connect(raw, k, types, parents, owner, prox, nchild_soma, diam32)
    return raw


def _connect(raw, k, types, parents, owner, prox, nchild_soma, diam32) -> None:
    """``mksection`` for a non-root section: its parent, parentx, wire and first point."""
    sec = raw[k]
    first, n_own = sec.first, len(sec.own)
    psample = parents[first]
    sec.parent = owner[psample]
    psec = raw[sec.parent]
    den_con_soma = psec.type == SOMA and types[first] != SOMA
    handled = False
    if sec.parent == 0:
        handled = True
        if den_con_soma and len(psec.own) == 1:
            sec.parent_x = 0.5
            sec.wire = n_own > 1
        elif psample == psec.first:
            sec.parent_x = 0.0
            sec.wire = types[first] != SOMA and nchild_soma[psample] > 1
        else:
            handled = False
    if not handled and psec.type == SOMA:
        if psample < psec.own[-1]:
            sec.parent_x = 0.5
            sec.wire = den_con_soma and n_own > 1
        elif n_own > 1 and nchild_soma[psample] > 1 and types[first] != SOMA:
            sec.wire = True
    sec.copy = psample
    # a neurite leaving the soma starts with the soma sample at its own first diameter
    sec.copy_diam = float(diam32[first] if den_con_soma else diam32[psample])
    if prox[first]:
        sec.parent_x = 0.0


def _remove_invalid(raw, xyz32):
    """``chk_valid``: drop non-root sections with one point, or two points at one place;
    their children move to the dropped section's parent and parentx."""
    raw = list(raw)
    for k in range(len(raw) - 1, 0, -1):
        sec = raw[k]
        pts = ([] if sec.wire else [sec.copy]) + list(sec.own)
        if len(pts) <= 1 or (len(pts) == 2 and np.array_equal(xyz32[pts[0]], xyz32[pts[1]])):
            del raw[k]
            for child in raw[k:]:
                if child.parent == k:
                    child.parent, child.parent_x = sec.parent, sec.parent_x
                elif child.parent > k:
                    child.parent -= 1
    return raw


def _instantiate(raw, xyz32, diam32, soma) -> Sections:
    """``Import3d_GUI.instantiate``: names, points (one-point root -> 3-point cylinder)."""
    names, counts = [], {}
    samples, diams, offsets = [], [], [0]
    for sec in raw:
        index = counts.get(sec.type, 0)
        counts[sec.type] = index + 1
        names.append(f"{section_name(sec.type)}[{index}]")
        own = list(sec.own)
        if sec.copy >= 0 and not sec.wire:
            samples += [sec.copy] + own
            diams += [sec.copy_diam] + [float(diam32[i]) for i in own]
        elif len(own) == 1:  # only the root can be left with one point: the sphere rule
            samples += own * 3
            diams += [float(diam32[own[0]])] * 3
        else:
            samples += own
            diams += [float(diam32[i]) for i in own]
        offsets.append(len(samples))
    pt_sample = np.asarray(samples, dtype=np.int64)
    xyz = xyz32[pt_sample].astype(np.float64)
    if len(raw[0].own) == 1:  # sphere_rep: x0 -/+ d0/2, computed in double
        d0 = float(diam32[raw[0].first])
        xyz[0, 0] -= d0 / 2
        xyz[2, 0] += d0 / 2
    return Sections(
        names=tuple(names),
        types=np.asarray([s.type for s in raw], dtype=np.int32),
        parent=np.asarray([s.parent for s in raw], dtype=np.int64),
        parent_x=np.asarray([s.parent_x for s in raw], dtype=np.float64),
        wire=np.asarray([s.wire for s in raw], dtype=bool),
        pt_offsets=np.asarray(offsets, dtype=np.int64),
        xyz=hoc_pt3d_values(xyz),
        diam=hoc_pt3d_values(np.asarray(diams, dtype=np.float64)),
        pt_sample=pt_sample,
        soma=soma,
    )
