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
only idle: the step count is bounded below by the tree's depth + 1. That rule minimises a
cell's latency, right while the whole batch runs at once; a batch larger than the GPU's
resident threads runs in waves, where idle lanes cost throughput: given
``resident_threads``, :func:`choose_threads` minimises ``steps(k)`` times the waves instead.
"""
from __future__ import annotations

import heapq

import numpy as np
from numba import njit, prange

from ..branches import node_depths
from ..structure import MonoBatch, as_batch
from .dhs_layout import DHSSchedule, build_dhs
from .program import working_trees
from .shapes import cell_shapes

__all__ = ["DHSSchedule", "dhs_schedule", "dhs_steps", "choose_threads", "THREAD_CHOICES"]

_JIT = dict(cache=True, nogil=True)

#: The candidate threads per cell (powers of two up to a warp).
THREAD_CHOICES = (1, 2, 4, 8, 16, 32)
#: ``choose_threads``: accept a step count this much above ``k = 32``'s.
STEP_TOLERANCE = 0.05


@njit(**_JIT)
def _schedule_cell(parent, depth, a, b, k, step_of, lane_of):
    """List-schedule the nodes ``a:b`` (one cell, global parents, each node's ``depth`` in its
    cell); returns the step count.

    ``step_of[i]``, ``lane_of[i]`` receive every node's step and lane.
    """
    n = b - a
    pending = np.zeros(n, np.int64)
    for i in range(1, n):
        pending[parent[a + i] - a] += 1
    heap = [np.int64(0)]
    heap.pop()
    for i in range(n):
        if pending[i] == 0:
            heapq.heappush(heap, -(depth[a + i] * n + i))  # deepest first, then highest index
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
                    heapq.heappush(heap, -(depth[a + p] * n + p))
        step += 1
    return step


@njit(parallel=True, **_JIT)
def _schedule_cells(parent, depth, offsets, threads):
    """Every cell list-scheduled on its own (cells spread over Numba's threads: each writes
    only its own nodes' entries, so the result does not depend on the threads)."""
    n = parent.size
    step_of = np.empty(n, np.int64)
    lane_of = np.empty(n, np.int64)
    steps = np.empty(offsets.size - 1, np.int64)
    for c in prange(offsets.size - 1):
        steps[c] = _schedule_cell(parent, depth, offsets[c], offsets[c + 1], threads[c],
                                  step_of, lane_of)
    return steps, step_of, lane_of


def dhs_steps(structure, threads) -> np.ndarray:
    """Step count of DHS with ``threads`` threads for every cell (int64[n_cells]).

    ``threads``: an int, or one per cell.
    """
    s = as_batch(structure)
    s = s.cell if isinstance(s, MonoBatch) else s
    k = np.broadcast_to(np.asarray(threads, np.int64), (s.n_cells,)).copy()
    if np.any(k < 1):
        raise ValueError(f"threads must be >= 1, got {int(k.min())}")
    parent = s.parent.astype(np.int64)
    return _schedule_cells(parent, node_depths(parent), s.cell_offsets, k)[0]


def choose_threads(structure, *, choices=THREAD_CHOICES, tolerance: float = STEP_TOLERANCE,
                   resident_threads: int | None = None, n_cells: int | None = None) -> np.ndarray:
    """Threads per cell for DHS (int64[n_cells]; see the module docstring).

    Without ``resident_threads``: the fewest of ``choices`` whose step count is within
    ``tolerance`` of the most's (the latency rule: a cell's steps barely shrink past it).
    With ``resident_threads`` (threads the GPU keeps in flight: SMs x 2048 on an H200, 132 x
    2048 = 270,336): the modelled time ``steps(k) * max(1, n_cells * k / resident_threads)``
    is minimised instead (within ``tolerance``, fewest threads), so that a batch too large
    to run at once is not slowed by idle lanes; ``n_cells`` defaults to the batch's cells.
    """
    choices = sorted(int(c) for c in choices)
    steps = np.stack([dhs_steps(structure, c) for c in choices]).astype(np.float64)
    if resident_threads is None:
        best = steps[-1]
        cost = steps
    else:
        if n_cells is None:
            s = as_batch(structure)
            n_cells = s.n_cells
        waves = np.maximum(1.0, n_cells * np.asarray(choices, np.float64) / resident_threads)
        cost = steps * waves[:, None]
        best = cost.min(axis=0)
    ok = cost <= (1.0 + tolerance) * best
    return np.asarray(choices, np.int64)[np.argmax(ok, axis=0)]


def dhs_schedule(structure, *, threads=None, reroot: bool = False,
                 resident_threads: int | None = None) -> DHSSchedule:
    """Plan DHS for a batch.

    Parameters
    ----------
    structure : HinesStructure or MonoBatch
    threads : int, optional
        Threads per cell (1 to 32). Default: chosen per shape by :func:`choose_threads`.
    reroot : bool
        Eliminate each cell from its centre (lower depth, so fewer steps at large ``k``).
    resident_threads : int, optional
        ``threads=None`` only: choose ``k`` for a batch of this batch's size on a GPU that
        keeps this many threads in flight (:func:`choose_threads`).

    Returns
    -------
    DHSSchedule
    """
    if threads is not None:
        if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) \
                or not 1 <= threads <= 32:
            raise ValueError(f"threads must be an int from 1 to 32, got {threads!r}")
    shapes = cell_shapes(structure)
    work = working_trees(shapes, reroot=reroot)
    if threads is None:
        k = choose_threads(work.structure, resident_threads=resident_threads,
                           n_cells=shapes.n_cells)
    else:
        k = np.full(shapes.n_shapes, int(threads), np.int64)
    parent = work.structure.parent.astype(np.int64)
    steps, step_of, lane_of = _schedule_cells(parent, node_depths(parent),
                                              work.structure.cell_offsets, k)
    return build_dhs(structure, shapes, work, k, steps, step_of, lane_of,
                     options=dict(threads=threads, reroot=bool(reroot),
                                  resident_threads=resident_threads))
