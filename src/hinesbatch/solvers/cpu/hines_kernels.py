"""Numba kernels of the Hines algorithm (Algorithm 1 of Valero-Lara et al. 2017).

Two batch kinds, two kernel bodies, each with a serial and a ``prange`` driver:

* per-cell structure (:class:`~hinesbatch.tree.HinesStructure`): the structure arrays cover
  the whole batch, cell ``c`` is ``offsets[c]:offsets[c+1]`` and parents are global;
  :func:`_solve_cell` solves one cell, the drivers go cell after cell;
* shared structure (:class:`~hinesbatch.tree.MonoBatch`): the structure arrays hold one cell
  of ``m`` nodes, read by every cell; cell ``c``'s values are row ``c`` of a C-contiguous
  ``(n_cells, m)`` array, flat index ``c*m + i``. :func:`_solve_group` advances ``lockstep``
  consecutive cells together through each node: the same operations in the same order per
  cell as Algorithm 1 (so bit-identical results for any ``lockstep``), but independent
  dependency chains side by side, which hides the latency of the divisions.

Every kernel has one specialisation per dtype (float32, float64): structure arrays are always
passed read-only (``parent`` int32, ``offsets`` int64, ``u`` and ``l`` of the value dtype) and
values writable and C-contiguous. ``error_model="numpy"``: a division by zero gives inf/nan
instead of raising, so the divisions carry no test; pivots are checked explicitly.

A pivot ``d[i]`` (the diagonal after the children of ``i`` have been eliminated) that is zero
or not finite makes the drivers report the cell and the node (index within the cell): the
first such pivot in elimination order, in the lowest such cell. That pivot is left in ``d``
for the error message.
"""
from __future__ import annotations

from numba import njit, prange

from ..._numba import light_cache_loads_in
from .pivots import bad_pivot, first_failure

__all__ = ["cells_serial", "cells_parallel", "shared_serial", "shared_parallel"]

_JIT = dict(cache=True, nogil=True, error_model="numpy")



@njit(**_JIT)
def _solve_cell(parent, u, l, d, rhs, a, b, shift):
    """Solve one cell in place; Algorithm 1.

    The cell's structure is ``parent[a:b]``, ``u[a:b]``, ``l[a:b]``; node ``i``'s values are
    ``d[i + shift]`` and ``rhs[i + shift]``, its parent's ``d[parent[i] + shift]``. Per-cell
    structure: ``a, b`` is the cell's global range and ``shift`` 0; shared structure: ``a, b``
    is ``0, m`` and ``shift`` the cell's first value.

    Returns -1 on success, else the node (``i - a``) whose pivot is zero or not finite.
    """
    for i in range(b - 1, a, -1):  # backward sweep: eliminate each node from its parent's row
        pivot = d[i + shift]
        if bad_pivot(pivot):
            return i - a
        factor = u[i] / pivot
        p = parent[i] + shift
        d[p] -= factor * l[i]
        rhs[p] -= factor * rhs[i + shift]
    root = a + shift
    if bad_pivot(d[root]):
        return 0
    rhs[root] /= d[root]
    for i in range(a + 1, b):  # forward sweep: root to leaves
        j = i + shift
        rhs[j] -= l[i] * rhs[parent[i] + shift]
        rhs[j] /= d[j]
    return -1


@njit(**_JIT)
def cells_serial(parent, offsets, u, l, d, rhs):
    """Per-cell structure, cells one after another; stops at the first singular cell.

    Returns ``(cell, node)`` of the first zero or non-finite pivot, ``(-1, -1)`` if none.
    """
    for c in range(offsets.size - 1):
        node = _solve_cell(parent, u, l, d, rhs, offsets[c], offsets[c + 1], 0)
        if node >= 0:
            return c, node
    return -1, -1


@njit(parallel=True, **_JIT)
def cells_parallel(parent, offsets, u, l, d, rhs, status):
    """Per-cell structure, cells spread over Numba's threads (the papers' OpenMP baseline).

    ``status`` (int64[n_cells]) is scratch. Returns ``(cell, node)`` of the singular cell with
    the lowest index, ``(-1, -1)`` if none.
    """
    for c in prange(offsets.size - 1):
        status[c] = _solve_cell(parent, u, l, d, rhs, offsets[c], offsets[c + 1], 0)
    return first_failure(status)


@njit(**_JIT)
def _solve_group(parent, u, l, d, rhs, m, c0, k_end, status):
    """Solve cells ``c0..k_end-1`` of a shared-structure batch together, node by node.

    A zero or non-finite pivot is recorded in ``status[c]`` (first one in elimination order)
    and the cell is carried on to the end with infinities; the other cells are unaffected.
    """
    for i in range(m - 1, 0, -1):
        p = parent[i]
        ui = u[i]
        li = l[i]
        for c in range(c0, k_end):
            s = c * m
            pivot = d[s + i]
            if bad_pivot(pivot) and status[c] < 0:
                status[c] = i
            factor = ui / pivot
            d[s + p] -= factor * li
            rhs[s + p] -= factor * rhs[s + i]
    for c in range(c0, k_end):
        s = c * m
        if bad_pivot(d[s]) and status[c] < 0:
            status[c] = 0
        rhs[s] /= d[s]
    for i in range(1, m):
        p = parent[i]
        li = l[i]
        for c in range(c0, k_end):
            s = c * m
            rhs[s + i] -= li * rhs[s + p]
            rhs[s + i] /= d[s + i]


@njit(**_JIT)
def shared_serial(parent, u, l, d, rhs, n_cells, lockstep, status):
    """Shared structure on one core: ``lockstep=1`` is Algorithm 1 cell after cell (stopping
    at the first singular cell); more goes through groups of ``lockstep`` cells.
    Returns ``(cell, node)`` of the first failure, ``(-1, -1)``."""
    m = parent.size
    if lockstep == 1:
        for c in range(n_cells):
            node = _solve_cell(parent, u, l, d, rhs, 0, m, c * m)
            if node >= 0:
                return c, node
        return -1, -1
    status[:] = -1
    for c0 in range(0, n_cells, lockstep):
        _solve_group(parent, u, l, d, rhs, m, c0, min(c0 + lockstep, n_cells), status)
    return first_failure(status)


@njit(parallel=True, **_JIT)
def shared_parallel(parent, u, l, d, rhs, n_cells, lockstep, status):
    """Shared structure, groups of ``lockstep`` cells spread over Numba's threads."""
    m = parent.size
    status[:] = -1
    for g in prange((n_cells + lockstep - 1) // lockstep):
        c0 = g * lockstep
        _solve_group(parent, u, l, d, rhs, m, c0, min(c0 + lockstep, n_cells), status)
    return first_failure(status)


light_cache_loads_in(globals())  # cached machine code loads without compiler set-up
