"""The ``dhs`` schedule: Dendritic Hierarchical Scheduling (Zhang et al., Nat. Commun. 2023).

``k`` threads share one cell. A node is *ready* once all its children are eliminated; at
every step the threads take the (at most ``k``) deepest ready nodes, depth counted in edges
from the root, ties to the higher index. This is Hu's list scheduling for in-trees, which
needs the fewest steps of any schedule of unit tasks on ``k`` threads (Hu 1961; the
DeepDendrite paper proves the same for DHS). The forward sweep runs the steps in reverse.

Elimination is *pulled*: the thread of a node subtracts the contributions of all its
children (eliminated in earlier steps) into its own row, in the serial solver's order
(descending node index), then the node's pivot is final. A step's threads therefore write
only their own nodes: no atomics, no races, a deterministic result bit-identical to the
serial solve of the same tree. (Pushing into the parent instead would make two children of
one node collide within a step.) A node with many children costs its thread one
subtraction per child; ``n_steps`` counts steps, :attr:`DHSSchedule.work_steps` weighs them.

Layout: each cell owns ``n_steps * k`` consecutive value slots; the node eliminated at step
``j`` by lane ``t`` lives at slot ``j*k + t`` of its cell, so the ``k`` threads of a cell
read ``k`` adjacent values per step. Unused lanes are padding (identity rows). The
structure arrays (parents, children, slot -> node) are stored once per shape; cells are
ordered by ``k``, then step count and shape, so a warp's cells run the same steps.

Choosing ``k`` (``threads=None``): per shape, the smallest ``k`` in ``(1, 2, 4, 8, 16,
32)`` whose step count is within 5 % of ``k = 32``'s. Past that point more threads per cell
only idle: the step count is bounded below by the tree's depth + 1.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np
from numba import njit

from .program import working_trees
from .shapes import cell_shapes

__all__ = ["DHSSchedule", "dhs_schedule", "dhs_steps", "choose_threads", "THREAD_CHOICES"]

_JIT = dict(cache=True, nogil=True)

#: The candidate threads per cell (powers of two up to a warp).
THREAD_CHOICES = (1, 2, 4, 8, 16, 32)
#: ``choose_threads``: accept a step count this much above ``k = 32``'s.
STEP_TOLERANCE = 0.05


@njit(**_JIT)
def _schedule_cell(parent, a, b, k, step_of, lane_of):
    """List-schedule the nodes ``a:b`` (one cell, global parents); returns the step count.

    ``step_of[i]``, ``lane_of[i]`` receive every node's step and lane.
    """
    n = b - a
    depth = np.zeros(n, np.int64)
    pending = np.zeros(n, np.int64)
    for i in range(1, n):
        p = parent[a + i] - a
        depth[i] = depth[p] + 1
        pending[p] += 1
    heap = [np.int64(0)]
    heap.pop()
    for i in range(n):
        if pending[i] == 0:
            heapq.heappush(heap, -(depth[i] * n + i))  # deepest first, then highest index
    taken = np.empty(k, np.int64)
    step = 0
    while len(heap) > 0:
        m = 0
        while m < k and len(heap) > 0:
            key = -heapq.heappop(heap)
            taken[m] = key % n
            m += 1
        for t in range(m):
            i = taken[t]
            step_of[a + i] = step
            lane_of[a + i] = t
            if i > 0:
                p = parent[a + i] - a
                pending[p] -= 1
                if pending[p] == 0:  # ready from the next step on
                    heapq.heappush(heap, -(depth[p] * n + p))
        step += 1
    return step


@njit(**_JIT)
def _schedule_cells(parent, offsets, threads):
    n = parent.size
    step_of = np.empty(n, np.int64)
    lane_of = np.empty(n, np.int64)
    steps = np.empty(offsets.size - 1, np.int64)
    for c in range(offsets.size - 1):
        steps[c] = _schedule_cell(parent, offsets[c], offsets[c + 1], threads[c], step_of,
                                  lane_of)
    return steps, step_of, lane_of


def dhs_steps(structure, threads) -> np.ndarray:
    """Step count of DHS with ``threads`` threads for every cell (int64[n_cells]).

    ``threads``: an int, or one per cell.
    """
    from ..structure import MonoBatch, as_batch

    s = as_batch(structure)
    s = s.cell if isinstance(s, MonoBatch) else s
    k = np.broadcast_to(np.asarray(threads, np.int64), (s.n_cells,)).copy()
    if np.any(k < 1):
        raise ValueError(f"threads must be >= 1, got {int(k.min())}")
    return _schedule_cells(s.parent.astype(np.int64), s.cell_offsets, k)[0]


def choose_threads(structure, *, choices=THREAD_CHOICES,
                   tolerance: float = STEP_TOLERANCE) -> np.ndarray:
    """Threads per cell: the fewest of ``choices`` whose DHS step count is within
    ``tolerance`` of the most's (int64[n_cells]); see the module docstring."""
    choices = sorted(int(c) for c in choices)
    steps = np.stack([dhs_steps(structure, c) for c in choices])
    ok = steps <= (1.0 + tolerance) * steps[-1]
    return np.asarray(choices, np.int64)[np.argmax(ok, axis=0)]


@dataclass(frozen=True, eq=False)
class DHSSchedule:
    """A DHS plan (see the module docstring). Index arrays int32, couplings float64.

    Per shape: ``threads`` (k), ``n_steps``, ``shape_slot_offsets`` (n_shapes + 1; shape
    ``s`` has ``n_steps[s] * threads[s]`` slots).

    Per shape slot (concatenated over shapes; values are *cell-local* slots):
    ``slot_node_local`` (node of the representative, working tree's original numbering,
    ``-1`` for an idle lane), ``parent_slot`` (``-1`` at the root and idle lanes),
    ``child_offsets`` (total + 1) and ``children`` (the children's slots, in subtraction
    order).

    Per cell, in schedule order: ``cells`` (the cell, canonical index), ``cell_shape``,
    ``cell_base`` (its first value slot); ``thread_offsets`` groups them by ``k``
    (``thread_values[i]`` for cells ``thread_offsets[i]:thread_offsets[i + 1]``).

    Per value slot: ``slot_node`` (flat canonical index, ``-1`` padding), ``u``, ``l``
    (``l`` None if symmetric); ``node_slot`` per canonical value.
    """

    threads: np.ndarray
    n_steps: np.ndarray
    shape_slot_offsets: np.ndarray
    slot_node_local: np.ndarray
    parent_slot: np.ndarray
    child_offsets: np.ndarray
    children: np.ndarray
    cells: np.ndarray
    cell_shape: np.ndarray
    cell_base: np.ndarray
    thread_values: np.ndarray
    thread_offsets: np.ndarray
    node_slot: np.ndarray
    slot_node: np.ndarray
    u: np.ndarray
    l: np.ndarray | None
    values_shape: tuple
    options: dict

    @property
    def n_slots(self) -> int:
        return int(self.slot_node.size)

    @property
    def lower(self) -> np.ndarray:
        return self.u if self.l is None else self.l

    @property
    def work_steps(self) -> np.ndarray:
        """Per shape: the sum over steps of the busiest lane's work (1 + its children):
        the steps weighted by the pulls (int64[n_shapes])."""
        counts = np.diff(self.child_offsets) + (self.slot_node_local >= 0)
        out = np.zeros(self.threads.size, np.int64)
        for s in range(self.threads.size):
            a, b = self.shape_slot_offsets[s], self.shape_slot_offsets[s + 1]
            out[s] = counts[a:b].reshape(-1, self.threads[s]).max(axis=1).sum()
        return out

    def pack(self, values, *, fill: float = 0.0, dtype=None) -> np.ndarray:
        """``values`` (canonical shape) in slot order, padding set to ``fill``."""
        values = np.asarray(values)
        out = np.full(self.n_slots, fill, dtype=dtype or values.dtype)
        out[self.node_slot] = values.reshape(-1)
        return out

    def unpack(self, packed) -> np.ndarray:
        return np.asarray(packed)[self.node_slot].reshape(self.values_shape)

    def describe(self) -> str:
        padding = 1 - self.node_slot.size / self.n_slots if self.n_slots else 0.0
        ks = ", ".join(f"k={k}: {int(np.diff(self.thread_offsets)[i])} cells"
                       for i, k in enumerate(self.thread_values))
        steps = (f"{int(self.n_steps.min())}..{int(self.n_steps.max())}" if self.n_steps.size
                 else "none")
        return (f"dhs schedule: {self.threads.size} shape(s), {ks}; steps {steps}, "
                f"{self.n_slots} slots ({padding:.1%} padding); "
                + ", ".join(f"{k}={v}" for k, v in self.options.items()))


def dhs_schedule(structure, *, threads=None, reroot: bool = False) -> DHSSchedule:
    """Plan DHS for a batch.

    Parameters
    ----------
    structure : HinesStructure or MonoBatch
    threads : int, optional
        Threads per cell (1 to 32). Default: chosen per shape by :func:`choose_threads`.
    reroot : bool
        Eliminate each cell from its centre (lower depth, so fewer steps at large ``k``).

    Returns
    -------
    DHSSchedule
    """
    from .dhs_layout import build_dhs

    if threads is not None:
        if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) \
                or not 1 <= threads <= 32:
            raise ValueError(f"threads must be an int from 1 to 32, got {threads!r}")
    shapes = cell_shapes(structure)
    work = working_trees(shapes, reroot=reroot)
    if threads is None:
        k = choose_threads(work.structure)
    else:
        k = np.full(shapes.n_shapes, int(threads), np.int64)
    steps, step_of, lane_of = _schedule_cells(work.structure.parent.astype(np.int64),
                                              work.structure.cell_offsets, k)
    return build_dhs(structure, shapes, work, k, steps, step_of, lane_of,
                     options=dict(threads=threads, reroot=bool(reroot)))
