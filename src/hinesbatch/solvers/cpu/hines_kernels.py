"""Numba kernels of the Hines algorithm (Algorithm 1 of Valero-Lara et al. 2017).

One kernel body, :func:`_solve_cell`, serves both batch kinds:

* per-cell structure (:class:`~hinesbatch.tree.HinesStructure`): the structure arrays cover
  the whole batch, cell ``c`` is ``offsets[c]:offsets[c+1]`` and parents are global, so the
  values sit at the structure's own indices (``shift = 0``);
* shared structure (:class:`~hinesbatch.tree.MonoBatch`): the structure arrays hold one cell
  of ``m`` nodes (``offsets = [0, m]``), read by every cell; cell ``c``'s values are the
  ``c``-th row of a C-contiguous ``(n_cells, m)`` array, i.e. flat index ``i + c*m``.

Every kernel has one specialisation per dtype (float32, float64): structure arrays are always
passed read-only (``parent`` int32, ``offsets`` int64, ``u`` and ``l`` of the value dtype) and
values writable and C-contiguous, so the compile count stays at two per driver.

A pivot ``d[i]`` (the diagonal after the children of ``i`` have been eliminated) that is zero
or not finite stops the cell: the driver reports the cell and the node (index within the
cell) and leaves that pivot in ``d`` for the error message.
"""
from __future__ import annotations

import math

from numba import njit, prange

__all__ = ["hines_serial", "hines_parallel"]


@njit(cache=True, nogil=True)
def _solve_cell(parent, u, l, d, rhs, a, b, shift):
    """Solve structure nodes ``a..b-1`` whose values sit at ``index + shift``, in place.

    Returns -1 on success, else the node (``i - a``) whose pivot is zero or not finite.
    """
    for i in range(b - 1, a, -1):  # backward sweep: eliminate each node from its parent's row
        pivot = d[i + shift]
        if pivot == 0.0 or not math.isfinite(pivot):
            return i - a
        factor = u[i] / pivot
        p = parent[i] + shift
        d[p] -= factor * l[i]
        rhs[p] -= factor * rhs[i + shift]
    pivot = d[a + shift]
    if pivot == 0.0 or not math.isfinite(pivot):
        return 0
    rhs[a + shift] /= pivot
    for i in range(a + 1, b):  # forward sweep: root to leaves
        j = i + shift
        rhs[j] -= l[i] * rhs[parent[i] + shift]
        rhs[j] /= d[j]
    return -1


@njit(cache=True, nogil=True)
def _cell_range(offsets, c, per_cell):
    """(first node, end node, value shift) of cell ``c``."""
    if per_cell:
        return offsets[c], offsets[c + 1], 0
    m = offsets[1]
    return 0, m, c * m


@njit(cache=True, nogil=True)
def hines_serial(parent, offsets, u, l, d, rhs, n_cells, per_cell):
    """Solve the cells one after another; stop at the first singular one.

    Returns ``(cell, node)`` of the first zero or non-finite pivot, ``(-1, -1)`` if none.
    """
    for c in range(n_cells):
        a, b, shift = _cell_range(offsets, c, per_cell)
        node = _solve_cell(parent, u, l, d, rhs, a, b, shift)
        if node >= 0:
            return c, node
    return -1, -1


@njit(cache=True, nogil=True, parallel=True)
def hines_parallel(parent, offsets, u, l, d, rhs, n_cells, per_cell, status):
    """Solve the cells spread over Numba's threads (``prange``, the papers' OpenMP baseline).

    ``status`` (int64[n_cells]) is scratch for the per-cell result. Returns ``(cell, node)``
    of the singular cell with the lowest index, ``(-1, -1)`` if none.
    """
    for c in prange(n_cells):
        a, b, shift = _cell_range(offsets, c, per_cell)
        status[c] = _solve_cell(parent, u, l, d, rhs, a, b, shift)
    for c in range(n_cells):
        if status[c] >= 0:
            return c, status[c]
    return -1, -1
