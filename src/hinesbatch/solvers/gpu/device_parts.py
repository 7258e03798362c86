"""The share of a batch that one device solves: a contiguous range of cells, host side.

A :class:`Part` holds its cells as a structure of their own (``batch.cells(a, b)``) and
derives from it what the kernels need, as NumPy arrays (copied to the device by the
strategies): the shared cell for a mono-morphology batch, or the per-cell structure (local
parents, ``u``, ``l``, part-relative offsets, sizes) otherwise. Contiguous
cell ranges are contiguous in the canonical order (rows of a ``(n_cells, n)`` array, or one
node range of the concatenation), so a part's canonical values are a view of the batch's.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ...tree.structure import HinesStructure, MonoBatch

__all__ = ["Part", "split"]


@dataclass(frozen=True, eq=False)
class Part:
    """Cells ``cell_start .. cell_start + n_cells - 1`` of a batch.

    Attributes
    ----------
    structure : HinesStructure or MonoBatch
        The part's cells as a batch of their own (``batch.cells(a, b)``): what the schedule
        planners take.
    cell_start, node_start : int
        First cell and first canonical node of the part in the whole batch.

    The kernels' views of ``structure`` are derived from it: ``mono``, ``n_cells``, ``n``
    (nodes per cell, or of the largest cell), ``n_nodes``, ``cell`` (the shared one-cell
    structure of a MonoBatch), and for per-cell structures ``parent`` (int32, each node's
    parent as an index within its cell, ``-1`` at roots), ``u``, ``l`` (``u`` itself when
    symmetric), ``offsets`` (int64[n_cells + 1]) and ``sizes`` (int32[n_cells]).
    """

    structure: HinesStructure | MonoBatch
    cell_start: int
    node_start: int

    @property
    def mono(self) -> bool:
        """Shared structure (``cell``) or per-cell structure."""
        return isinstance(self.structure, MonoBatch)

    @property
    def n_cells(self) -> int:
        return self.structure.n_cells

    @property
    def n_nodes(self) -> int:
        """Canonical nodes of the part."""
        return self.structure.n_nodes

    @functools.cached_property
    def n(self) -> int:
        """Nodes per cell (mono) or of the largest cell (per-cell structure)."""
        if self.mono:
            return self.structure.nodes_per_cell
        return int(self.structure.cell_sizes.max(initial=0))

    @property
    def cell(self) -> HinesStructure | None:
        """The shared one-cell structure (mono), else ``None``."""
        return self.structure.cell if self.mono else None

    @functools.cached_property
    def offsets(self) -> np.ndarray | None:
        return None if self.mono else self.structure.cell_offsets

    @functools.cached_property
    def sizes(self) -> np.ndarray | None:
        return None if self.mono else np.diff(self.structure.cell_offsets).astype(np.int32)

    @functools.cached_property
    def parent(self) -> np.ndarray | None:
        if self.mono:
            return None
        first = np.repeat(self.offsets[:-1], self.sizes)
        parent = self.structure.parent.astype(np.int64)
        return np.where(parent >= 0, parent - first, -1).astype(np.int32)

    @property
    def u(self) -> np.ndarray | None:
        return None if self.mono else self.structure.u

    @property
    def l(self) -> np.ndarray | None:  # noqa: E743
        return None if self.mono else self.structure.lower

    @property
    def symmetric(self) -> bool:
        return (self.cell if self.mono else self.structure).symmetric

    def canonical(self, a):
        """This part's view of a canonical values array of the whole batch."""
        if self.mono:
            return a[self.cell_start:self.cell_start + self.n_cells]
        return a[self.node_start:self.node_start + self.n_nodes]

    @property
    def values_shape(self) -> tuple[int, ...]:
        return self.structure.values_shape


def _part(batch, a: int, b: int) -> Part:
    node = a * batch.nodes_per_cell if isinstance(batch, MonoBatch) else int(batch.cell_offsets[a])
    return Part(batch.cells(a, b), a, node)


def split(batch, n_parts: int) -> list[Part]:
    """``batch`` cut into ``n_parts`` contiguous cell ranges of about equal node counts.

    Parts may be empty (more devices than cells); the caller skips them.
    """
    n_cells = batch.n_cells
    if isinstance(batch, MonoBatch):
        bounds = [round(k * n_cells / n_parts) for k in range(n_parts + 1)]
        return [_part(batch, bounds[k], bounds[k + 1]) for k in range(n_parts)]
    total = batch.n_nodes
    targets = [round(k * total / n_parts) for k in range(n_parts + 1)]
    bounds = [int(np.searchsorted(batch.cell_offsets, t, side="left")) for t in targets]
    bounds[0], bounds[-1] = 0, n_cells
    bounds = [min(max(b, 0), n_cells) for b in bounds]
    for k in range(1, len(bounds)):
        bounds[k] = max(bounds[k], bounds[k - 1])
    return [_part(batch, bounds[k], bounds[k + 1]) for k in range(n_parts)]
