"""Distinct cell shapes of a batch: plan once per shape, replicate per cell.

A schedule depends only on a cell's tree (its local ``parent`` array), not on the
couplings. Batches built from a few morphologies hold many copies of few shapes (256,000
cells drawn from 17 reconstructions), so the planners analyse one *representative* per
shape and replicate the result with offsets.

Cells are grouped exactly: two 64-bit polynomial hashes of the local parent arrays propose
the groups, and every cell is then compared entry by entry with its group's representative
(a collision, never seen in practice, only splits the group further). Two linear passes
over the batch (Numba).
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
        The representatives' trees concatenated in shape order (couplings zero).
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


def cell_shapes(structure) -> CellShapes:
    """Group the cells of ``structure`` (HinesStructure or MonoBatch) by tree shape."""
    s = as_batch(structure)
    if isinstance(s, MonoBatch):
        n = s.n_cells
        return CellShapes(np.zeros(n, np.int64), np.zeros(min(n, 1), np.int64),
                          np.array([n] if n else [], np.int64), np.arange(n, dtype=np.int64),
                          _plain(s.cell.parent) if n else _plain(np.zeros(0, np.int64)),
                          np.arange(n, dtype=np.int64) * s.nodes_per_cell)
    if s.n_cells == 0:
        empty = np.zeros(0, np.int64)
        return CellShapes(empty, empty, empty, empty, _plain(empty), empty)
    rng = np.random.default_rng(_SEED)
    weights = rng.integers(1, 2**63, size=(2, int(s.cell_sizes.max())), dtype=np.uint64)
    hashes = _hash_cells(s.parent, s.cell_offsets, weights[0], weights[1])
    keys = np.stack([s.cell_sizes, hashes[0], hashes[1]], axis=1)
    _, shape = np.unique(keys, axis=0, return_inverse=True)
    first_cell, shape = _renumber_by_first(shape.reshape(-1).astype(np.int64))
    bad = np.flatnonzero(_differs(s.parent, s.cell_offsets, first_cell[shape]))
    while bad.size:  # a hash collision: split the group by exact comparison
        shape[bad] = shape.max() + 1 + _exact_groups(s, bad)
        first_cell, shape = _renumber_by_first(shape)
        bad = np.flatnonzero(_differs(s.parent, s.cell_offsets, first_cell[shape]))
    counts = np.bincount(shape)
    order = np.argsort(shape, kind="stable")
    rank = np.empty_like(shape)
    rank[order] = np.arange(shape.size) - np.repeat(np.cumsum(counts) - counts, counts)
    return CellShapes(shape, first_cell, counts, rank, _representatives(s, first_cell),
                      s.cell_offsets[:-1].copy())


def _plain(parent) -> HinesStructure:
    return HinesStructure(np.asarray(parent, np.int64), np.zeros(len(parent)))


@njit(cache=True, nogil=True)
def _hash_cells(parent, offsets, w1, w2):
    """Two 64-bit polynomial hashes of every cell's local parents (wrapping mod 2**64)."""
    n_cells = offsets.size - 1
    out = np.empty((2, n_cells), np.int64)
    for c in range(n_cells):
        a = offsets[c]
        h1 = np.uint64(0)
        h2 = np.uint64(0)
        for i in range(a, offsets[c + 1]):
            p = parent[i]
            v = np.uint64(p - a + 2) if p >= 0 else np.uint64(1)
            h1 += v * w1[i - a]
            h2 += v * w2[i - a]
        out[0, c] = np.int64(h1)
        out[1, c] = np.int64(h2)
    return out


@njit(cache=True, nogil=True)
def _differs(parent, offsets, rep):
    """Whether each cell's tree differs from that of cell ``rep[c]``."""
    n_cells = offsets.size - 1
    out = np.zeros(n_cells, np.bool_)
    for c in range(n_cells):
        a, r = offsets[c], offsets[rep[c]]
        n = offsets[c + 1] - a
        if n != offsets[rep[c] + 1] - r:
            out[c] = True
            continue
        for i in range(1, n):
            if parent[a + i] - a != parent[r + i] - r:
                out[c] = True
                break
    return out


def _exact_groups(s: HinesStructure, cells) -> np.ndarray:
    """Group ids of a few ``cells`` by comparing their local parents byte for byte."""
    keys = []
    for c in cells:
        a, b = int(s.cell_offsets[c]), int(s.cell_offsets[c + 1])
        p = s.parent[a:b].astype(np.int64)
        keys.append(np.where(p >= 0, p - a, -1).tobytes())
    _, ids = np.unique(np.array(keys, dtype=object), return_inverse=True)
    return ids.reshape(-1).astype(np.int64)


def _renumber_by_first(shape: np.ndarray):
    """Renumber groups in order of their first cell: ``(first_cell, shape)``."""
    _, first_cell, inverse = np.unique(shape, return_index=True, return_inverse=True)
    order = np.argsort(first_cell, kind="stable")
    rename = np.empty_like(order)
    rename[order] = np.arange(order.size)
    return first_cell[order].astype(np.int64), rename[inverse.reshape(-1)].astype(np.int64)


def _representatives(s: HinesStructure, first_cell) -> HinesStructure:
    sizes = s.cell_sizes[first_cell]
    starts = s.cell_offsets[first_cell]
    take = np.repeat(starts - np.cumsum(sizes) + sizes, sizes) + np.arange(int(sizes.sum()))
    new_start = np.repeat(np.cumsum(sizes) - sizes, sizes)
    p = s.parent.astype(np.int64)[take]
    old_start = np.repeat(starts, sizes)
    return HinesStructure(np.where(p >= 0, p - old_start + new_start, -1),
                          np.zeros(take.size), None,
                          np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64))
