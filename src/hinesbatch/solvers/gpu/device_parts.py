"""The share of a batch that one device solves: a contiguous range of cells, host side.

A :class:`Part` holds what the kernels need about its cells, as NumPy arrays (copied to the
device by the strategies): the shared cell for a mono-morphology batch, or the per-cell
structure (local parents, ``u``, ``l``, part-relative offsets, sizes) otherwise. Contiguous
cell ranges are contiguous in the canonical order (rows of a ``(n_cells, n)`` array, or one
node range of the concatenation), so a part's canonical values are a view of the batch's.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...tree.structure import HinesStructure, MonoBatch

__all__ = ["Part", "split"]


@dataclass(frozen=True, eq=False)
class Part:
    """Cells ``cell_start .. cell_start + n_cells - 1`` of a batch.

    Attributes
    ----------
    mono : bool
        Shared structure (``cell``) or per-cell structure (the arrays below).
    n_cells : int
    n : int
        Nodes per cell (mono) or of the largest cell (per-cell structure).
    cell_start, node_start : int
        First cell and first canonical node of the part in the whole batch.
    n_nodes : int
        Canonical nodes of the part.
    cell : HinesStructure or None
        The shared one-cell structure (mono).
    parent : int32[n_nodes] or None
        Parent of each node as an index within its cell, ``-1`` at roots (per-cell structure).
    u, l : float64[n_nodes] or None
        Couplings (``l`` is ``u`` for a symmetric structure).
    offsets : int64[n_cells + 1] or None
        First node of each cell, relative to ``node_start``.
    sizes : int32[n_cells] or None
        Nodes per cell.
    """

    mono: bool
    n_cells: int
    n: int
    cell_start: int
    node_start: int
    n_nodes: int
    cell: HinesStructure | None = None
    parent: np.ndarray | None = None
    u: np.ndarray | None = None
    l: np.ndarray | None = None
    offsets: np.ndarray | None = None
    sizes: np.ndarray | None = None

    @property
    def symmetric(self) -> bool:
        return self.cell.symmetric if self.mono else self.l is self.u

    def canonical(self, a):
        """This part's view of a canonical values array of the whole batch."""
        if self.mono:
            return a[self.cell_start:self.cell_start + self.n_cells]
        return a[self.node_start:self.node_start + self.n_nodes]

    @property
    def values_shape(self) -> tuple[int, ...]:
        return (self.n_cells, self.n) if self.mono else (self.n_nodes,)


def _mono_part(batch: MonoBatch, a: int, b: int) -> Part:
    n = batch.nodes_per_cell
    return Part(True, b - a, n, a, a * n, (b - a) * n, cell=batch.cell)


def _multi_part(s: HinesStructure, a: int, b: int) -> Part:
    lo, hi = int(s.cell_offsets[a]), int(s.cell_offsets[b])
    offsets = (s.cell_offsets[a:b + 1] - lo).astype(np.int64)
    sizes = np.diff(offsets).astype(np.int32)
    first = np.repeat(offsets[:-1], sizes) + lo
    parent = s.parent[lo:hi].astype(np.int64)
    parent = np.where(parent >= 0, parent - first, -1).astype(np.int32)
    u = np.ascontiguousarray(s.u[lo:hi])
    lower = u if s.l is None else np.ascontiguousarray(s.l[lo:hi])
    n = int(sizes.max(initial=0))
    return Part(False, b - a, n, a, lo, hi - lo, parent=parent, u=u, l=lower,
                offsets=offsets, sizes=sizes)


def split(batch, n_parts: int) -> list[Part]:
    """``batch`` cut into ``n_parts`` contiguous cell ranges of about equal node counts.

    Parts may be empty (more devices than cells); the caller skips them.
    """
    n_cells = batch.n_cells
    if isinstance(batch, MonoBatch):
        bounds = [round(k * n_cells / n_parts) for k in range(n_parts + 1)]
        return [_mono_part(batch, bounds[k], bounds[k + 1]) for k in range(n_parts)]
    total = batch.n_nodes
    targets = [round(k * total / n_parts) for k in range(n_parts + 1)]
    bounds = [int(np.searchsorted(batch.cell_offsets, t, side="left")) for t in targets]
    bounds[0], bounds[-1] = 0, n_cells
    bounds = [min(max(b, 0), n_cells) for b in bounds]
    for k in range(1, len(bounds)):
        bounds[k] = max(bounds[k], bounds[k - 1])
    return [_multi_part(batch, bounds[k], bounds[k + 1]) for k in range(n_parts)]
