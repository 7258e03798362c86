"""Distinct cell shapes of a batch: plan once per shape, replicate per cell.

A schedule depends only on a cell's tree (its local ``parent`` array), not on the
couplings. Batches built from a few morphologies hold many copies of few shapes (256,000
cells drawn from 17 reconstructions), so the planners analyse one *representative* per
shape and replicate the result with offsets.

Cells are grouped exactly: two 64-bit polynomial hashes of the local parent arrays propose
the groups, and every cell is then compared entry by entry with its group's representative
(a collision, never seen in practice, only splits the group further). Two linear passes
over the batch (Numba).

With ``couplings=True`` two cells are alike only if their couplings are too (``u``, and ``l``
unless symmetric, bit for bit; a root's, which no solver reads, excepted): such cells have
the same matrix, so a solver may store it once for all of them (the ``grouped`` GPU
strategy). The hashes and the comparison then cover the couplings as well.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from ..structure import HinesStructure, MonoBatch, as_batch

__all__ = ["CellShapes", "cell_shapes"]

_SEED = 0x5EED_11E5  # fixed: hashes (and so shape numbers) are the same run after run


@dataclass(frozen=True, eq=False)
class CellShapes:
    """The distinct trees of a batch.

    Attributes
    ----------
    shape_of_cell : int64[n_cells]
        Shape of every cell; shapes are numbered by their first cell.
    first_cell : int64[n_shapes]
        The representative (lowest-numbered cell) of every shape.
    counts : int64[n_shapes]
        Cells per shape.
    rank : int64[n_cells]
        Each cell's rank among the cells of its shape (by cell index).
    representatives : HinesStructure
        The representatives' trees concatenated in shape order (couplings zero, or theirs
        when grouped by couplings).
    value_start : int64[n_cells]
        Flat index of every cell's first value (``cell_offsets[c]``, or ``c * m`` for a
        :class:`MonoBatch` of ``m``-node cells).
    """

    shape_of_cell: np.ndarray
    first_cell: np.ndarray
    counts: np.ndarray
    rank: np.ndarray
    representatives: HinesStructure
    value_start: np.ndarray

    @property
    def n_shapes(self) -> int:
        return int(self.first_cell.size)

    @property
    def n_cells(self) -> int:
        return int(self.shape_of_cell.size)


def cell_shapes(structure, *, couplings: bool = False) -> CellShapes:
    """Group the cells of ``structure`` (HinesStructure or MonoBatch) by tree shape, or with
    ``couplings`` by tree and couplings (the same matrix; see the module docstring).

    A structure never changes, so the result is kept in its cache (arrays read-only): the
    ``auto`` rule, the planners and the benchmark ask for it several times per batch."""
    s = as_batch(structure)
    key = ("cell_shapes", bool(couplings))
    if key not in s._cache:
        shapes = _cell_shapes(s, couplings)
        for a in (shapes.shape_of_cell, shapes.first_cell, shapes.counts, shapes.rank,
                  shapes.value_start):
            a.flags.writeable = False
        s._cache[key] = shapes
    return s._cache[key]


def _cell_shapes(s, couplings: bool) -> CellShapes:
    if isinstance(s, MonoBatch):
        n = s.n_cells
        reps = (s.cell if couplings else _plain(s.cell.parent)) if n else _plain(np.zeros(0, np.int64))
        return CellShapes(np.zeros(n, np.int64), np.zeros(min(n, 1), np.int64),
                          np.array([n] if n else [], np.int64), np.arange(n, dtype=np.int64),
                          reps, np.arange(n, dtype=np.int64) * s.nodes_per_cell)
    if s.n_cells == 0:
        empty = np.zeros(0, np.int64)
        return CellShapes(empty, empty, empty, empty, _plain(empty), empty)
    rng = np.random.default_rng(_SEED)
    weights = rng.integers(1, 2**63, size=(2, int(s.cell_sizes.max())), dtype=np.uint64)
    values = _coupling_bits(s) if couplings else ()
    columns = [s.cell_sizes, *_hash_cells(s.parent, s.cell_offsets, weights[0], weights[1], True)]
    for bits in values:
        columns.extend(_hash_cells(bits, s.cell_offsets, weights[0], weights[1], False))
    _, shape = np.unique(np.stack(columns, axis=1), axis=0, return_inverse=True)
    first_cell, shape = _renumber_by_first(shape.reshape(-1).astype(np.int64))

    def differing():
        rep = first_cell[shape]
        out = _differs(s.parent, s.cell_offsets, rep, True)
        for bits in values:
            out |= _differs(bits, s.cell_offsets, rep, False)
        return np.flatnonzero(out)

    bad = differing()
    while bad.size:  # a hash collision: split the group by exact comparison
        shape[bad] = shape.max() + 1 + _exact_groups(s, bad, values)
        first_cell, shape = _renumber_by_first(shape)
        bad = differing()
    counts = np.bincount(shape)
    order = np.argsort(shape, kind="stable")
    rank = np.empty_like(shape)
    rank[order] = np.arange(shape.size) - np.repeat(np.cumsum(counts) - counts, counts)
    return CellShapes(shape, first_cell, counts, rank, _representatives(s, first_cell, couplings),
                      s.cell_offsets[:-1].copy())


def _plain(parent) -> HinesStructure:
    return HinesStructure(np.asarray(parent, np.int64), np.zeros(len(parent)))


@njit(cache=True, nogil=True)
def _hash_cells(values, offsets, w1, w2, parents):
    """Two 64-bit polynomial hashes of every cell's ``values`` (wrapping mod 2**64):
    ``parents``: global parent indices, hashed as local ones (the root's -1 as 1); else int64
    coupling bits, the root's (never read) as 0."""
    n_cells = offsets.size - 1
    out = np.empty((2, n_cells), np.int64)
    for c in range(n_cells):
        a = offsets[c]
        h1 = np.uint64(0)
        h2 = np.uint64(0)
        for i in range(a, offsets[c + 1]):
            x = values[i]
            if parents:
                v = np.uint64(x - a + 2) if x >= 0 else np.uint64(1)
            else:
                v = np.uint64(x) if i > a else np.uint64(0)
            h1 += v * w1[i - a]
            h2 += v * w2[i - a]
        out[0, c] = np.int64(h1)
        out[1, c] = np.int64(h2)
    return out


@njit(cache=True, nogil=True)
def _differs(values, offsets, rep, parents):
    """Whether each cell's ``values`` (as for :func:`_hash_cells`; roots excepted) or size
    differ from those of cell ``rep[c]``."""
    n_cells = offsets.size - 1
    out = np.zeros(n_cells, np.bool_)
    for c in range(n_cells):
        a, r = offsets[c], offsets[rep[c]]
        n = offsets[c + 1] - a
        if n != offsets[rep[c] + 1] - r:
            out[c] = True
            continue
        shift = a - r if parents else 0
        for i in range(1, n):
            if values[a + i] - values[r + i] != shift:
                out[c] = True
                break
    return out


def _coupling_bits(s: HinesStructure) -> tuple:
    """``u`` (and ``l`` unless symmetric) as int64 bit patterns (views, no copies)."""
    return tuple(np.ascontiguousarray(a).view(np.int64) for a in
                 ((s.u,) if s.l is None else (s.u, s.l)))


def _exact_groups(s: HinesStructure, cells, values=()) -> np.ndarray:
    """Group ids of a few ``cells`` by comparing their local parents (and the non-root
    entries of ``values``, coupling bits) byte for byte."""
    keys = []
    for c in cells:
        a, b = int(s.cell_offsets[c]), int(s.cell_offsets[c + 1])
        p = s.parent[a:b].astype(np.int64)
        keys.append(np.where(p >= 0, p - a, -1).tobytes()
                    + b"".join(bits[a + 1:b].tobytes() for bits in values))
    _, ids = np.unique(np.array(keys, dtype=object), return_inverse=True)
    return ids.reshape(-1).astype(np.int64)


def _renumber_by_first(shape: np.ndarray):
    """Renumber groups in order of their first cell: ``(first_cell, shape)``."""
    _, first_cell, inverse = np.unique(shape, return_index=True, return_inverse=True)
    order = np.argsort(first_cell, kind="stable")
    rename = np.empty_like(order)
    rename[order] = np.arange(order.size)
    return first_cell[order].astype(np.int64), rename[inverse.reshape(-1)].astype(np.int64)


def _representatives(s: HinesStructure, first_cell, couplings: bool = False) -> HinesStructure:
    sizes = s.cell_sizes[first_cell]
    starts = s.cell_offsets[first_cell]
    take = np.repeat(starts - np.cumsum(sizes) + sizes, sizes) + np.arange(int(sizes.sum()))
    new_start = np.repeat(np.cumsum(sizes) - sizes, sizes)
    p = s.parent.astype(np.int64)[take]
    old_start = np.repeat(starts, sizes)
    u = s.u[take] if couplings else np.zeros(take.size)
    lower = s.l[take] if couplings and s.l is not None else None
    return HinesStructure(np.where(p >= 0, p - old_start + new_start, -1), u, lower,
                          np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64))
