"""Segment area, axial resistance and the d_lambda rule from pt3d points, as NEURON does.

The kernels mirror NEURON 9.0.2's ``nrn_pt3dmodified`` (arc lengths), ``nrn_area_ri`` /
``diam_from_list`` (``src/nrnoc/treeset.cpp``) and ``lambda_f`` (``stdlib.hoc``) operation
for operation, so results agree with NEURON to rounding (see ``docs/geometry.md``):

* arc lengths add ``sqrt(dx² + dy² + dz²)`` in double, where each difference is taken
  in float32 (the points are C floats);
* each segment is integrated in two halves over the piecewise-linear diameter: a frustum
  piece from the cursor ``(x̂, ŷ)`` to ``(x2, y2)`` adds ``(ŷ + y2)·sqrt(Δ² + ((y2 − ŷ)/2)²)``
  to the area (lateral area, no end caps) and ``Δ/(ŷ·y2)`` to the half's resistance sum;
* ``ri`` of segment ``i`` is the right half of segment ``i − 1`` plus the left half of
  segment ``i``; the first segment of a section has its left half only.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .._numba import light_cache_loads_in

__all__ = ["arc_lengths", "area_ri", "lambda_sums", "nseg_d_lambda"]

_PI = 3.14159265358979323846  # NEURON's PI (treeset.cpp, hoc)
_RI_FACTOR = 4.0 * 0.01       # treeset.cpp: ri * ra / PI * (4. * .01)

#: :func:`nseg_d_lambda` returns at most this (any larger count is returned as it, so that
#: the conversion to int64 cannot wrap around).
NSEG_SATURATED = 2**31 + 1


@njit(cache=True, error_model="numpy")
def arc_lengths(xyz: np.ndarray, pt_offsets: np.ndarray) -> np.ndarray:
    """Arc length of every pt3d point from its section's first point [µm].

    Parameters
    ----------
    xyz : float32[P, 3]
        Points [µm].
    pt_offsets : int64[S + 1]
        Section ``k`` owns points ``pt_offsets[k]:pt_offsets[k + 1]``.

    Returns
    -------
    float64[P]
    """
    arc = np.empty(xyz.shape[0], dtype=np.float64)
    for k in range(pt_offsets.size - 1):
        a, b = pt_offsets[k], pt_offsets[k + 1]
        arc[a] = 0.0
        for i in range(a + 1, b):
            t1 = np.float64(xyz[i, 0] - xyz[i - 1, 0])  # float32 difference
            t2 = np.float64(xyz[i, 1] - xyz[i - 1, 1])
            t3 = np.float64(xyz[i, 2] - xyz[i - 1, 2])
            arc[i] = arc[i - 1] + math.sqrt(t1 * t1 + t2 * t2 + t3 * t3)
    return arc


@njit(cache=True, error_model="numpy")
def _half(arc, diam, a, npt, j, x1, y1, sip, acc):
    """Integrate from the cursor ``(x1, y1)`` to arc position ``sip``; ``acc`` gets
    [diam integral, area sum, resistance sum]. Returns the new ``(j, x1, y1)``."""
    while True:
        jp = j + 1
        xj = arc[a + j]
        xjp = arc[a + jp]
        if xjp > sip or jp == npt - 1:
            if abs(xjp - xj) < 1e-10:
                frac = 1.0
            else:
                frac = (sip - xj) / (xjp - xj)
            x2 = sip
            y2 = (1.0 - frac) * abs(np.float64(diam[a + j])) + frac * abs(np.float64(diam[a + jp]))
            jnext = j
        else:
            x2 = xjp
            y2 = abs(np.float64(diam[a + jp]))
            jnext = jp
        delta = x2 - x1
        acc[0] += (y2 + y1) * delta
        if delta < 1e-15:
            delta = 1e-15
        temp = y2 * y1 / delta
        if temp == 0.0:
            temp = 1e-15
        acc[2] += 1.0 / temp
        temp = 0.5 * (y2 - y1)
        temp = math.sqrt(delta * delta + temp * temp)
        acc[1] += (y2 + y1) * temp
        x1 = x2
        y1 = y2
        if j == jnext:
            return j, x1, y1
        j = jnext


@njit(cache=True, error_model="numpy")
def area_ri(arc, diam, pt_offsets, nseg, ra, area, ri, ri_end, seg_diam):
    """NEURON's ``nrn_area_ri`` for every section (fills the output arrays).

    Parameters
    ----------
    arc : float64[P]
        Arc lengths from :func:`arc_lengths` [µm].
    diam : float32[P]
        pt3d diameters [µm].
    pt_offsets : int64[S + 1]
        Points of each section.
    nseg : int64[S]
        Segments per section; segment outputs are concatenated section by section.
    ra : float
        Axial resistivity [Ω·cm].
    area : float64[sum(nseg)]
        Out: segment membrane area [µm²] (``seg.area()``).
    ri : float64[sum(nseg)]
        Out: resistance from the segment's centre to its parent node [MΩ] (``seg.ri()``).
    ri_end : float64[S]
        Out: resistance of the x = 1 node to the last segment's centre [MΩ].
    seg_diam : float64[sum(nseg)]
        Out: mean diameter of the segment [µm] (``seg.diam``).
    """
    acc = np.zeros(3)
    s = 0
    for k in range(nseg.size):
        a = pt_offsets[k]
        npt = pt_offsets[k + 1] - a
        ns = nseg[k]
        ds = arc[a + npt - 1] / np.float64(ns)
        j = 0
        x1 = arc[a]
        y1 = abs(np.float64(diam[a]))
        rright = 0.0
        for i in range(ns):
            si = np.float64(i) * ds
            acc[0] = 0.0
            acc[1] = 0.0
            rleft = 0.0
            for ihalf in range(2):
                acc[2] = 0.0
                sip = si + ds / 2.0
                j, x1, y1 = _half(arc, diam, a, npt, j, x1, y1, sip, acc)
                if ihalf == 0:
                    rleft = acc[2] * ra / _PI * _RI_FACTOR
                si = sip
            ri[s] = 1.0 / (1.0 / (rright + rleft))  # seg.ri() = 1/NODERINV
            rright = acc[2] * ra / _PI * _RI_FACTOR
            area[s] = acc[1] * 0.5 * _PI
            seg_diam[s] = acc[0] * (0.5 / ds)
            s += 1
        ri_end[k] = 1.0 / (1.0 / rright)


@njit(cache=True, error_model="numpy")
def lambda_sums(arc, diam, pt_offsets):
    """Per section, ``Σ Δarc/sqrt(d1 + d2)`` over its pt3d pieces (``lambda_f``'s loop)."""
    out = np.zeros(pt_offsets.size - 1)
    for k in range(pt_offsets.size - 1):
        lam = 0.0
        for i in range(pt_offsets[k] + 1, pt_offsets[k + 1]):
            d1 = abs(np.float64(diam[i - 1]))
            d2 = abs(np.float64(diam[i]))
            lam += (arc[i] - arc[i - 1]) / math.sqrt(d1 + d2)
        out[k] = lam
    return out


def nseg_d_lambda(length_um: np.ndarray, lam_sum: np.ndarray, *, d_lambda: float,
                  freq: float, ra: float, cm: float) -> np.ndarray:
    """NEURON's d_lambda rule (``geom_nseg`` of ``fixnseg.hoc``), per section.

    ``nseg = int((L/(d_lambda*lambda_f(freq)) + 0.9)/2)*2 + 1`` with ``lambda_f`` of
    ``stdlib.hoc`` computed from the pt3d points.

    Parameters
    ----------
    length_um : float64[S]
        Section lengths ``L`` [µm].
    lam_sum : float64[S]
        :func:`lambda_sums` of the sections.
    d_lambda : float
        Largest segment length as a fraction of the AC length constant.
    freq : float
        Frequency of that length constant [Hz].
    ra, cm : float
        Axial resistivity [Ω·cm] and membrane capacitance [µF/cm²].

    Returns
    -------
    int64[S]
        At most :data:`NSEG_SATURATED`, which stands for any larger count.
    """
    if cm == 0:
        lambda_um = np.full(length_um.shape, 1e10)
    else:
        lam = lam_sum * (math.sqrt(2) * 1e-5 * math.sqrt(4 * _PI * freq * ra * cm))
        with np.errstate(divide="ignore"):
            lambda_um = length_um / lam
    with np.errstate(over="ignore"):
        n = np.trunc((length_um / (d_lambda * lambda_um) + 0.9) / 2)
    return np.minimum(n, NSEG_SATURATED // 2).astype(np.int64) * 2 + 1


light_cache_loads_in(globals())  # cached machine code loads without compiler set-up
