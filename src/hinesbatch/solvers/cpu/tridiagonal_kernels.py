"""Numba kernels of the Thomas algorithm for batches of tridiagonal systems.

Arrays are C-contiguous ``(batch, n)`` viewed flat: system ``k`` owns ``k*n : k*n + n`` and
uses its first ``lengths[k]`` rows. Row ``i`` reads
``dl[i]*x[i-1] + d[i]*x[i] + du[i]*x[i+1] = rhs[i]`` (``dl[0]`` and ``du[m-1]`` are not read,
cuSPARSE's gtsv convention). ``dl`` and ``du`` are only read; ``d`` is scratch and the
solution is written over ``rhs``; entries past ``lengths[k]`` are not touched.

One specialisation per dtype: the front end always passes ``lengths`` as read-only int64,
``dl`` and ``du`` as read-only views and ``d``, ``rhs`` writable, all of one dtype.
``error_model="numpy"``: divisions carry no zero test (pivots are checked explicitly).
"""
from __future__ import annotations

import math

from numba import njit, prange

__all__ = ["thomas_serial", "thomas_parallel"]

_JIT = dict(cache=True, nogil=True, error_model="numpy")


@njit(**_JIT)
def _thomas(dl, d, du, rhs, base, m):
    """Solve the system at flat rows ``base..base+m-1`` in place.

    Returns -1 on success, else the row (within the system) whose pivot is zero or not finite.
    """
    if m == 0:
        return -1
    for i in range(1, m):  # forward elimination of the sub-diagonal
        pivot = d[base + i - 1]
        if pivot == 0.0 or not math.isfinite(pivot):
            return i - 1
        w = dl[base + i] / pivot
        d[base + i] -= w * du[base + i - 1]
        rhs[base + i] -= w * rhs[base + i - 1]
    pivot = d[base + m - 1]
    if pivot == 0.0 or not math.isfinite(pivot):
        return m - 1
    rhs[base + m - 1] /= pivot
    for i in range(m - 2, -1, -1):  # back substitution
        rhs[base + i] -= du[base + i] * rhs[base + i + 1]
        rhs[base + i] /= d[base + i]
    return -1


@njit(**_JIT)
def thomas_serial(dl, d, du, rhs, n, lengths):
    """Solve the systems one after another; returns ``(system, row)`` of the first zero or
    non-finite pivot, ``(-1, -1)`` if none."""
    for k in range(lengths.size):
        row = _thomas(dl, d, du, rhs, k * n, lengths[k])
        if row >= 0:
            return k, row
    return -1, -1


@njit(parallel=True, **_JIT)
def thomas_parallel(dl, d, du, rhs, n, lengths, status):
    """Solve the systems spread over Numba's threads; ``status`` (int64[batch]) is scratch.
    Returns ``(system, row)`` of the singular system with the lowest index, ``(-1, -1)`` if none."""
    for k in prange(lengths.size):
        status[k] = _thomas(dl, d, du, rhs, k * n, lengths[k])
    for k in range(lengths.size):
        if status[k] >= 0:
            return k, status[k]
    return -1, -1
