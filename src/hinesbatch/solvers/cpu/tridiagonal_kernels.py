"""Numba kernels of the Thomas algorithm for batches of tridiagonal systems.

Arrays are C-contiguous ``(batch, n)`` viewed flat: system ``k`` owns ``k*n : k*n + n`` and
uses its first ``m = lengths[k]`` rows. Row ``i`` reads
``dl[i]*x[i-1] + d[i]*x[i] + du[i]*x[i+1] = rhs[i]`` (``dl[0]`` and ``du[m-1]`` are not read,
cuSPARSE's gtsv convention). ``dl`` and ``du`` are only read; ``d`` is scratch and the
solution is written over ``rhs``; entries past ``m`` are not touched.

:func:`_solve_group` advances ``lockstep`` consecutive systems together row by row: per
system the operations and their order are the Thomas algorithm's (so any ``lockstep`` gives
bit-identical results), but independent dependency chains run side by side, which hides the
latency of the divisions. ``lockstep = 1`` is the textbook loop, one system after another.

One specialisation per dtype: the front end always passes ``lengths`` as read-only int64,
``dl`` and ``du`` as read-only views and ``d``, ``rhs`` writable, all of one dtype.
``error_model="numpy"``: divisions carry no zero test (pivots are checked explicitly); a
system with a zero or non-finite pivot records the row in ``status`` (the first one in
elimination order) and is carried on with infinities, the others are unaffected.
"""
from __future__ import annotations

from numba import njit, prange

from ..._numba import light_cache_loads_in
from .pivots import bad_pivot, first_failure

__all__ = ["thomas_serial", "thomas_parallel"]

_JIT = dict(cache=True, nogil=True, error_model="numpy")


@njit(**_JIT)
def _check(pivot, status, k, row):
    if bad_pivot(pivot) and status[k] < 0:
        status[k] = row


@njit(**_JIT)
def _solve_group(dl, d, du, rhs, n, lengths, k0, k1, status):
    """Solve systems ``k0..k1-1`` together, in place."""
    longest = 0
    for k in range(k0, k1):
        longest = max(longest, lengths[k])
    for i in range(1, longest):  # forward elimination of the sub-diagonal
        for k in range(k0, k1):
            if i < lengths[k]:
                b = k * n + i
                _check(d[b - 1], status, k, i - 1)
                w = dl[b] / d[b - 1]
                d[b] -= w * du[b - 1]
                rhs[b] -= w * rhs[b - 1]
    for k in range(k0, k1):
        if lengths[k] > 0:
            b = k * n + lengths[k] - 1
            _check(d[b], status, k, lengths[k] - 1)
            rhs[b] /= d[b]
    for i in range(longest - 2, -1, -1):  # back substitution
        for k in range(k0, k1):
            if i < lengths[k] - 1:
                b = k * n + i
                rhs[b] -= du[b] * rhs[b + 1]
                rhs[b] /= d[b]


@njit(**_JIT)
def thomas_serial(dl, d, du, rhs, n, lengths, lockstep, status):
    """Groups of ``lockstep`` systems one after another on one core. Returns
    ``(system, row)`` of the lowest system with a zero or non-finite pivot, ``(-1, -1)``."""
    status[:] = -1
    batch = lengths.size
    for k0 in range(0, batch, lockstep):
        _solve_group(dl, d, du, rhs, n, lengths, k0, min(k0 + lockstep, batch), status)
    return first_failure(status)


@njit(parallel=True, **_JIT)
def thomas_parallel(dl, d, du, rhs, n, lengths, lockstep, status):
    """Groups of ``lockstep`` systems spread over Numba's threads; returns as
    :func:`thomas_serial`."""
    status[:] = -1
    batch = lengths.size
    for g in prange((batch + lockstep - 1) // lockstep):
        k0 = g * lockstep
        _solve_group(dl, d, du, rhs, n, lengths, k0, min(k0 + lockstep, batch), status)
    return first_failure(status)


light_cache_loads_in(globals())  # cached machine code loads without compiler set-up
