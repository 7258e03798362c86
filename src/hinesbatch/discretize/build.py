"""``discretize``: a morphology -> NEURON's compartments (:class:`CellGeometry`)."""
from __future__ import annotations

import os
from numbers import Integral, Real

import numpy as np

from ..morphology.errors import SWCGeometryError, SWCRadiusError, listing
from ..morphology.model import Morphology
from ..morphology.radii import check_radii
from ..morphology.swc import read_swc
from .geometry import CellGeometry
from .import3d import Sections, import3d_sections
from .nodes import node_layout
from .pt3d import NSEG_SATURATED, arc_lengths, area_ri, lambda_sums, nseg_d_lambda

__all__ = ["discretize", "discretize_sections", "section_table"]

#: NEURON's largest nseg (``nseg`` is stored in a short).
MAX_NSEG = 32767


def discretize(
    morphology: Morphology | str | os.PathLike,
    *,
    nseg: int | None = None,
    d_lambda: float | None = None,
    ra: float = 35.4,
    cm: float = 1.0,
    freq: float = 100.0,
    min_radius: float | None = None,
) -> CellGeometry:
    """Cut a morphology into NEURON's compartments with NEURON's area and axial resistance.

    Sections, their 3-D points and where they attach follow NEURON 9.0.2's Import3d
    (one-point and NeuroMorpho.Org three-point somas become a cylinder of length and
    diameter ``d`` along x; see ``docs/geometry.md``); areas and resistances are those of
    NEURON's ``seg.area()`` and ``seg.ri()`` (to rounding). Nodes are NEURON's: ``nseg``
    segment nodes per section, one x = 1 node per section and the root's x = 0 node, in
    Hines order (every node's parent has a smaller index).

    Parameters
    ----------
    morphology : Morphology or path
        The cell; a path is read with :func:`hinesbatch.morphology.read_swc`.
    nseg : int, optional
        Segments in every section (NEURON's default is 1, used when neither ``nseg`` nor
        ``d_lambda`` is given).
    d_lambda : float, optional
        Choose ``nseg`` per section by NEURON's d_lambda rule instead: the odd
        ``nseg = int((L/(d_lambda·λ_f) + 0.9)/2)·2 + 1``, ``λ_f`` the AC length constant at
        ``freq`` from the 3-D points (``lambda_f`` of NEURON's ``stdlib.hoc``). 0.1 is usual.
    ra : float
        Axial resistivity [Ω·cm] (NEURON's default 35.4).
    cm : float
        Specific membrane capacitance [µF/cm²] (default 1); used by the d_lambda rule and
        stored for the simulator.
    freq : float
        Frequency of the d_lambda rule's length constant [Hz] (default 100).
    min_radius : float, optional
        By default a radius <= 0 is an error. With ``min_radius`` [µm], radii below it are
        raised to it instead, with a warning (:func:`hinesbatch.morphology.check_radii`).

    Returns
    -------
    CellGeometry

    Raises
    ------
    SWCRadiusError
        A radius is zero or negative (and ``min_radius`` is not given), or so small that
        it is 0 as a float32; the message names ``file:line`` of each such sample.
    SWCGeometryError
        A section's points, length, membrane area or axial resistance is not finite (a
        coordinate or radius beyond float32's range, or an ``ra`` so large that a
        resistance overflows); the message names each such section and its samples' lines.
    ValueError
        Bad ``nseg``, ``d_lambda``, ``ra``, ``cm`` or ``freq`` (or both ``nseg`` and
        ``d_lambda`` given).
    TypeError
        ``morphology`` is neither a :class:`Morphology` nor a path.
    SWCError
        ``morphology`` is a path to a file :func:`~hinesbatch.morphology.read_swc` rejects.

    Warns
    -----
    SWCRadiusClampedWarning
        Radii were raised to ``min_radius``.
    SWCWarning
        What :func:`~hinesbatch.morphology.read_swc` warns about when given a path.

    Notes
    -----
    NEURON reads a file only when its samples are in parent-first order; a
    :class:`Morphology` that had to be re-sorted is cut in its stored (parent-first) order.
    """
    morph = _as_morphology(morphology)
    _check_options(nseg, d_lambda, ra, cm, freq)
    morph = check_radii(morph, min_radius=min_radius)
    with np.errstate(over="ignore", invalid="ignore"):   # overflow is reported by section
        secs = import3d_sections(morph)
    _check_float32_diameters(morph, secs)
    arc = arc_lengths(secs.xyz, secs.pt_offsets)
    _check_points(morph, secs, arc)
    length = arc[secs.pt_offsets[1:] - 1]
    length = np.where(length <= 1e-9, 1e-9, length)  # NEURON's section_length()
    if d_lambda is None:
        nsegs = np.full(secs.n_sections, 1 if nseg is None else int(nseg), dtype=np.int64)
    else:
        nsegs = _d_lambda_nseg(morph, secs, arc, length, float(d_lambda), float(freq),
                               float(ra), float(cm))
    return _geometry(morph, secs, arc, length, nsegs, float(ra), float(cm))


def _d_lambda_nseg(morph, secs: Sections, arc, length, d_lambda, freq, ra, cm) -> np.ndarray:
    """nseg per section by NEURON's d_lambda rule, within NEURON's limit."""
    lam = lambda_sums(arc, secs.diam, secs.pt_offsets)
    nsegs = nseg_d_lambda(length, lam, d_lambda=d_lambda, freq=freq, ra=ra, cm=cm)
    if nsegs.max() > MAX_NSEG:
        k = int(np.argmax(nsegs))
        asked = f"nseg={nsegs[k]}" if nsegs[k] < NSEG_SATURATED else f"nseg >= {NSEG_SATURATED}"
        raise ValueError(
            f"d_lambda={d_lambda:g} asks for {asked} in {secs.names[k]} of "
            f"{morph.source}, more than NEURON's {MAX_NSEG}; use a larger d_lambda")
    return nsegs


def _as_morphology(morphology) -> Morphology:
    if isinstance(morphology, Morphology):
        return morphology
    if isinstance(morphology, (str, os.PathLike)):
        return read_swc(morphology)
    raise TypeError(
        "morphology must be a hinesbatch.morphology.Morphology or a path to an SWC file, "
        f"got {type(morphology).__name__}"
    )


def _check_float32_diameters(morph: Morphology, secs: Sections) -> None:
    """A positive radius below float32's range is stored by NEURON as diameter 0."""
    bad = np.flatnonzero(~(secs.diam > 0))
    if bad.size:
        samples = np.unique(secs.pt_sample[bad])
        raise SWCRadiusError(
            morph.source, morph.lines[samples],
            f"radius {morph.radii[samples[0]]:g} µm of sample {morph.ids[samples[0]]} is 0 "
            "once stored as a float32 diameter, as NEURON stores it; use min_radius=<µm>",
            rule="non-positive radius")


def _check_points(morph: Morphology, secs: Sections, arc: np.ndarray) -> None:
    """Points beyond float32's range (as NEURON stores them) give no finite geometry."""
    bad = ~(np.isfinite(secs.xyz).all(axis=1) & np.isfinite(secs.diam) & np.isfinite(arc))
    if bad.any():
        sec_of_point = np.repeat(np.arange(secs.n_sections), np.diff(secs.pt_offsets))
        raise _geometry_error(
            morph, secs, np.unique(sec_of_point[bad]),
            "3-D points, diameters or arc lengths that are not finite once stored as float32 "
            "(as NEURON stores them; its largest value is 3.4e38)", {})


def _check_geometry(morph: Morphology, secs: Sections, nsegs, length, area, ri, ri_end,
                    ra: float) -> None:
    """Every section's length, segment areas and axial resistances finite (resistances > 0)."""
    seg_sec = np.repeat(np.arange(secs.n_sections), nsegs)
    bad_area = np.bincount(seg_sec, weights=~np.isfinite(area), minlength=secs.n_sections) > 0
    ri_ok = np.isfinite(ri) & (ri > 0)
    bad_ri = ((np.bincount(seg_sec, weights=~ri_ok, minlength=secs.n_sections) > 0)
              | ~(np.isfinite(ri_end) & (ri_end > 0)))
    bad_len = ~np.isfinite(length)
    bad = np.flatnonzero(bad_area | bad_ri | bad_len)
    if bad.size == 0:
        return
    first = np.concatenate([[0], np.cumsum(nsegs)[:-1]])
    what = {}
    for k in bad:
        segs = slice(first[k], first[k] + nsegs[k])
        parts = []
        if bad_len[k]:
            parts.append(f"length {length[k]:g} µm")
        if bad_area[k]:
            parts.append(f"membrane area {_worst(area[segs]):g} µm²")
        if bad_ri[k]:
            r = np.append(ri[segs], ri_end[k])
            parts.append(f"axial resistance {_worst(r, positive=True):g} MΩ")
        what[k] = ", ".join(parts)
    raise _geometry_error(morph, secs, bad, f"a length, membrane area or axial resistance "
                          f"(with ra = {ra:g} Ω·cm) that is not finite and positive", what)


def _worst(values: np.ndarray, *, positive: bool = False) -> float:
    """The first value that is not finite (or not > 0 when ``positive``)."""
    ok = np.isfinite(values) & ((values > 0) if positive else True)
    return float(values[np.flatnonzero(~ok)[0]])


def _geometry_error(morph: Morphology, secs: Sections, sections, why: str,
                    what: dict) -> SWCGeometryError:
    """The error naming each section in ``sections`` and the lines of its samples."""
    items, lines = [], []
    for k in sections:
        rows = np.unique(secs.pt_sample[secs.pt_offsets[k]:secs.pt_offsets[k + 1]])
        own = morph.lines[rows]
        lines.append(own)
        detail = f": {what[k]}" if k in what else ""
        items.append(f"{secs.names[k]} (line{'s' if own.size > 1 else ''} "
                     f"{listing([str(v) for v in own])}){detail}")
    n = len(items)
    return SWCGeometryError(
        morph.source, np.concatenate(lines),
        f"{n} section{'s' if n > 1 else ''} ha{'ve' if n > 1 else 's'} {why}: "
        + listing(items, sep="; "))


def _check_options(nseg, d_lambda, ra, cm, freq) -> None:
    if nseg is not None and d_lambda is not None:
        raise ValueError("give nseg or d_lambda, not both")
    if nseg is not None:
        if isinstance(nseg, bool) or not isinstance(nseg, Integral):
            raise TypeError(f"nseg must be an integer, got {type(nseg).__name__}")
        if not 1 <= nseg <= MAX_NSEG:
            raise ValueError(f"nseg must lie in [1, {MAX_NSEG}] (NEURON's range), got {nseg}")
    for name, value, low in (("d_lambda", d_lambda, None), ("ra", ra, None),
                             ("cm", cm, 0.0), ("freq", freq, None)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, Real):
            raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
        ok = np.isfinite(value) and (value >= low if low is not None else value > 0)
        if not ok:
            bound = ">= 0" if low is not None else "> 0"
            raise ValueError(f"{name} must be finite and {bound}, got {value}")


def _geometry(morph, secs: Sections, arc, length, nsegs, ra, cm) -> CellGeometry:
    n_seg_total = int(nsegs.sum())
    seg_area = np.full(n_seg_total, np.nan)
    seg_ri = np.full(n_seg_total, np.nan)
    seg_diam = np.full(n_seg_total, np.nan)
    ri_end = np.full(secs.n_sections, np.nan)
    area_ri(arc, secs.diam, secs.pt_offsets, nsegs, ra, seg_area, seg_ri, ri_end, seg_diam)
    _check_geometry(morph, secs, nsegs, length, seg_area, seg_ri, ri_end, ra)
    layout = node_layout(nsegs, secs.parent, secs.parent_x)
    seg_nodes = np.flatnonzero(layout.is_segment)
    end_nodes = layout.first_segment + nsegs
    area = np.zeros(layout.n_nodes)
    area[seg_nodes] = seg_area
    ri = np.full(layout.n_nodes, np.inf)
    ri[seg_nodes] = seg_ri
    ri[end_nodes] = ri_end
    diam = np.full(layout.n_nodes, np.nan)
    diam[seg_nodes] = seg_diam
    return CellGeometry(
        parent=layout.parent,
        area_um2=area,
        ri_megohm=ri,
        section=layout.section,
        x=layout.x,
        has_membrane=layout.is_segment,
        section_names=secs.names,
        nseg=nsegs,
        length_um=length,
        section_parent=secs.parent,
        section_parent_x=secs.parent_x,
        cm=cm,
        ra=ra,
        source=morph.source,
        diam_um=diam,
        section_type=secs.types,
        soma=secs.soma,
    )


def section_table(morphology: Morphology | str | os.PathLike) -> tuple[tuple, np.ndarray]:
    """NEURON's section names and SWC types of a morphology, in section order.

    Returns
    -------
    names : tuple of str
        ``soma[0]``, ``dend[3]``, ... (the order :func:`discretize` numbers sections in).
    types : int array
        SWC type of each section.
    """
    morph = _as_morphology(morphology)
    with np.errstate(over="ignore", invalid="ignore"):
        secs = import3d_sections(morph)
    return tuple(secs.names), np.asarray(secs.types)


def discretize_sections(
    morphology: Morphology | str | os.PathLike,
    *,
    nseg: np.ndarray,
    d_lambda: np.ndarray,
    ra: np.ndarray,
    cm: np.ndarray,
    freq: float = 100.0,
    min_radius: float | None = None,
) -> CellGeometry:
    """:func:`discretize` with a policy per section.

    Parameters
    ----------
    nseg : int array [S]
        Segments of each section; 0 where ``d_lambda`` decides.
    d_lambda : float array [S]
        NEURON's d_lambda rule for the sections with ``nseg == 0`` (NaN elsewhere).
    ra : float array [S]
        Axial resistivity of each section [Ω·cm].
    cm : float array [S]
        Specific capacitance of each section [µF/cm²] (used by the d_lambda rule).

    Returns
    -------
    CellGeometry
        Its scalar ``ra`` and ``cm`` are those of section 0; areas and resistances use
        each section's own values, bit for bit as a uniform :func:`discretize` with that
        section's values would give.
    """
    morph = _as_morphology(morphology)
    morph = check_radii(morph, min_radius=min_radius)
    with np.errstate(over="ignore", invalid="ignore"):
        secs = import3d_sections(morph)
    n = secs.n_sections
    nseg = np.asarray(nseg, dtype=np.int64)
    d_lambda, ra, cm = (np.asarray(a, dtype=np.float64) for a in (d_lambda, ra, cm))
    for name, arr in (("nseg", nseg), ("d_lambda", d_lambda), ("ra", ra), ("cm", cm)):
        if arr.shape != (n,):
            raise ValueError(f"{name} has {arr.size} entries but {morph.source} has {n} "
                             "sections")
    for k in range(n):
        _check_options(int(nseg[k]) if nseg[k] > 0 else None,
                       None if nseg[k] > 0 else float(d_lambda[k]),
                       float(ra[k]), float(cm[k]), float(freq))
    _check_float32_diameters(morph, secs)
    arc = arc_lengths(secs.xyz, secs.pt_offsets)
    _check_points(morph, secs, arc)
    length = arc[secs.pt_offsets[1:] - 1]
    length = np.where(length <= 1e-9, 1e-9, length)
    nsegs = nseg.copy()
    by_rule = nseg <= 0
    for dl, r, c in {(float(a), float(b), float(e))
                     for a, b, e in zip(d_lambda[by_rule], ra[by_rule], cm[by_rule])}:
        pick = by_rule & (d_lambda == dl) & (ra == r) & (cm == c)
        nsegs[pick] = _d_lambda_nseg(morph, secs, arc, length, dl, float(freq), r, c)[pick]
    geometry = None
    for r in sorted(set(ra.tolist())):
        g = _geometry(morph, secs, arc, length, nsegs, r, float(cm[0]))
        if geometry is None:
            geometry = g
            area, ri = g.area_um2.copy(), g.ri_megohm.copy()
        own = (ra == r)[g.section]
        area[own], ri[own] = g.area_um2[own], g.ri_megohm[own]
    from dataclasses import replace

    return replace(geometry, area_um2=area, ri_megohm=ri, ra=float(ra[0]))
