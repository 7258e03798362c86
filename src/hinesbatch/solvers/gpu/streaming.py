"""NumPy batches larger than the device: the GPU backend streams them in chunks of whole cells.

``Plan.solve`` with NumPy values normally moves the whole ``d`` and ``rhs`` to the device.
When that and the plan's own memory would exceed its cap (``max_bytes``; by default half of
the free device memory), the backend's :meth:`~.backend.GpuBackend.solve_host` takes the
host arrays instead and, chunk by chunk of whole cells (rows of a :class:`MonoBatch`'s
``(n_cells, n)`` values, node ranges ``cell_offsets[a]:cell_offsets[b]`` of a
:class:`HinesStructure`): copies the chunk's ``d`` and ``rhs`` to the device, solves it with a
backend made for that chunk (same strategy, options, devices and pivot checks), and copies
``x`` back into the result. A chunk's ``d`` and ``rhs`` fit in the room the whole plan's own
memory (structure and layout scratch) leaves under ``max_bytes`` (:func:`chunk_ranges`); the
chunk's backend is capped to what the chunk's values leave, and its structure and scratch are
at most the whole plan's (a subset of the cells), so a chunk never needs more than the cap.
"""
from __future__ import annotations

import numpy as np

from ...errors import SingularSystemError, renumbered
from ...tree.structure import MonoBatch
from .strategies import STRATEGIES

__all__ = ["chunk_ranges", "HostStreamer"]


def chunk_ranges(cell_bytes, room: int) -> list[tuple[int, int]]:
    """Cut cells into consecutive chunks ``[a, b)`` whose device bytes add up to at most ``room``.

    Parameters
    ----------
    cell_bytes : array_like of int, shape ``(n_cells,)``
        Device bytes each cell needs while its chunk is solved (values and structure).
    room : int
        Bytes a chunk may use.

    Returns
    -------
    list of (int, int)
        Greedy chunks in cell order, each as large as fits; they cover ``0 .. n_cells`` with
        no gaps. Empty for no cells.

    Raises
    ------
    ValueError
        A single cell needs more than ``room`` (the message names the cell and the bytes).
    """
    costs = np.asarray(cell_bytes, dtype=np.int64)
    if costs.ndim != 1:
        raise ValueError(f"cell_bytes must be one-dimensional, got shape {costs.shape}")
    too_big = np.flatnonzero(costs > room)
    if too_big.size:
        c = int(too_big[0])
        raise ValueError(f"max_bytes leaves {room} bytes for a chunk of cells, but cell {c} alone "
                         f"needs {int(costs[c])} bytes on the device")
    ends = np.concatenate(([0], np.cumsum(costs)))
    ranges, a = [], 0
    while a < costs.size:
        b = int(np.searchsorted(ends, ends[a] + room, side="right")) - 1
        ranges.append((a, b))
        a = b
    return ranges


def _cell_offsets(structure) -> np.ndarray:
    if isinstance(structure, MonoBatch):
        return np.arange(structure.n_cells + 1, dtype=np.int64) * structure.nodes_per_cell
    return np.asarray(structure.cell_offsets, dtype=np.int64)


class HostStreamer:
    """The chunked host path of one :class:`~.backend.GpuBackend` (see the module docstring).

    Parameters
    ----------
    backend : GpuBackend
        The whole-batch backend: its structure, dtype, strategy, devices, pivot checks, cap.
    options : dict
        The strategy options the backend was made with (those its strategy takes are passed
        on to the chunks' backends).
    """

    def __init__(self, backend, options: dict):
        self.backend = backend
        takes = getattr(STRATEGIES.get(backend.strategy), "options", ())
        self.options = {k: v for k, v in options.items() if k in takes}
        self._mono: dict[int, object] = {}  # chunk backends of a MonoBatch, by cell count

    def _own_bytes(self) -> tuple[int, int]:
        parts = self.backend._parts
        return (sum(p.strategy.structure_bytes() for p in parts),
                sum(p.strategy.scratch_bytes() for p in parts))

    def _budget(self) -> int:
        return self.backend._budget(self.backend.xp.cuda.Device().id)

    def needed(self) -> bool:
        """Whether the whole batch's values and the plan's memory exceed the cap."""
        s = self.backend.structure
        values = 2 * s.n_nodes * self.backend.dtype.itemsize
        return values + sum(self._own_bytes()) > self._budget()

    def ranges(self) -> list[tuple[int, int]]:
        """The chunks ``[a, b)`` of cells: their ``d`` and ``rhs`` fit in ``max_bytes`` less the
        whole plan's structure and scratch (:func:`chunk_ranges`)."""
        sizes = np.diff(_cell_offsets(self.backend.structure))
        return chunk_ranges(sizes * (2 * self.backend.dtype.itemsize),
                            self._budget() - sum(self._own_bytes()))

    def _chunk_backend(self, a: int, b: int, values_bytes: int):
        be = self.backend
        if isinstance(be.structure, MonoBatch) and (b - a) in self._mono:
            return self._mono[b - a]
        cap = None if be.max_bytes is None else max(1, int(be.max_bytes) - values_bytes)
        sub = type(be)(be.structure.cells(a, b), dtype=be.dtype, strategy=be.strategy,
                       devices=be.devices, max_bytes=cap, check_pivots=be.check_pivots,
                       **self.options)
        if isinstance(be.structure, MonoBatch):
            self._mono[b - a] = sub
        return sub

    def solve(self, d: np.ndarray, rhs: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Solve host values chunk by chunk; ``x`` goes into ``out`` (which may be ``rhs``).

        ``d``, ``rhs``, ``out``: NumPy arrays of the structure's ``values_shape`` and the
        backend's dtype. ``d`` and ``rhs`` are only read. Returns ``out``.
        Raises :class:`SingularSystemError` naming the batch's cell (not the chunk's).
        """
        cupy = self.backend.xp
        offsets = _cell_offsets(self.backend.structure)
        mono = isinstance(self.backend.structure, MonoBatch)
        for a, b in self.ranges():
            rows = slice(a, b) if mono else slice(int(offsets[a]), int(offsets[b]))
            dd, rr = cupy.asarray(d[rows]), cupy.asarray(rhs[rows])
            sub = self._chunk_backend(a, b, dd.nbytes + rr.nbytes)
            try:
                sub.solve(dd, rr)
            except SingularSystemError as exc:
                raise renumbered(exc, exc.cell + a) from None
            out[rows] = rr.get()
        return out
