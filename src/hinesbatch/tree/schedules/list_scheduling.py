"""List scheduling of one cell's nodes into steps of independent nodes, deepest first.

A node may be eliminated once all its children are; nodes that wait for nothing are *ready*.
Each step takes up to ``width`` ready nodes, the deepest first (the longest chain to the root
is the critical path: Hu's rule for in-trees), never two with the same parent (so that a
step's updates of their parents never collide, and a kernel may load all of a step's values
before it stores any). A node whose children were all taken becomes ready from the next step
on. The ``tiled`` schedules (:mod:`.tiled`) and ``block-shared``'s factor schedules
(:mod:`.factors`) are this rule; ``dhs`` (:mod:`.dhs`) applies it without the distinct
parents, compiled, to whole batches.
"""
from __future__ import annotations

import heapq

import numpy as np

from ..branches import node_depths

__all__ = ["list_schedule", "node_depths"]


def list_schedule(parent, width: int, *, ties: str = "low", carry: bool = False
                  ) -> list[list[int]]:
    """Steps of ``width`` positions over the nodes of one cell in Hines order.

    Parameters
    ----------
    parent : int array, shape ``(n,)``
        Each node's parent, ``-1`` at the root.
    width : int
        Nodes per step (at least 1).
    ties : {"low", "high"}
        Among ready nodes of equal depth, the lower or the higher index first.
    carry : bool
        Before filling a step from the ready nodes, each position takes the parent of the
        node it held in the previous step when that parent is ready (its chain goes on in the
        same position: the factor kernels keep it in registers).

    Returns
    -------
    list of list of int
        Each step's node per position, ``-1`` where a position is empty. Every node appears
        once; its children appear in earlier steps.
    """
    if ties not in ("low", "high"):
        raise ValueError(f"ties must be 'low' or 'high', got {ties!r}")
    parent = np.asarray(parent, dtype=np.int64)
    n = parent.size
    sign = 1 if ties == "low" else -1
    remaining = np.bincount(parent[parent >= 0], minlength=n)
    depth = node_depths(parent)
    ready = [(-int(depth[j]), sign * j, j) for j in np.flatnonzero(remaining == 0).tolist()]
    heapq.heapify(ready)
    taken = np.zeros(n, dtype=bool)
    steps: list[list[int]] = []
    previous = [-1] * width
    done = 0
    while done < n:
        step = [-1] * width
        parents: set[int] = set()
        if carry:
            _carry(parent, previous, remaining, taken, step, parents)
        _fill(parent, ready, taken, step, parents)
        for j in step:  # parents become ready for the *next* step
            if j >= 0:
                done += 1
                p = int(parent[j])
                if p >= 0:
                    remaining[p] -= 1
                    if remaining[p] == 0:
                        heapq.heappush(ready, (-int(depth[p]), sign * p, p))
        steps.append(step)
        previous = step
    return steps


def _take(parent, j: int, taken, step, v: int, parents: set) -> None:
    step[v] = j
    taken[j] = True
    if parent[j] >= 0:
        parents.add(int(parent[j]))


def _carry(parent, previous, remaining, taken, step, parents: set) -> None:
    """Each position takes the parent of its previous node when that parent is ready, not
    taken, and its own parent is not yet updated by this step (chains go on in place)."""
    for v, c in enumerate(previous):
        p = int(parent[c]) if c >= 0 else -1
        if p >= 0 and remaining[p] == 0 and not taken[p] and int(parent[p]) not in parents:
            _take(parent, p, taken, step, v, parents)


def _fill(parent, ready, taken, step, parents: set) -> None:
    """The empty positions take ready nodes in heap order, skipping nodes already taken and
    deferring those whose parent this step already updates (back on the heap afterwards)."""
    deferred = []
    for v in range(len(step)):
        while step[v] < 0 and ready:
            item = heapq.heappop(ready)
            j = item[2]
            if taken[j]:  # carried already
                continue
            if parent[j] >= 0 and int(parent[j]) in parents:  # a sibling is in this step
                deferred.append(item)
                continue
            _take(parent, j, taken, step, v, parents)
    for item in deferred:
        heapq.heappush(ready, item)
