"""Elimination schedules for the ``tiled`` strategy on a shared structure (NumPy only).

One thread solves one cell in shared memory. Eliminating the nodes in descending index
order makes every step wait for the previous one (in an unbranched run the next pivot needs
the last division). Any order in which children come before their parent is valid, so the
schedule groups the nodes into *batches* of ``batch`` nodes that do not depend on each other:

* every child of a node sits in an earlier batch (so its pivot is final when loaded);
* the nodes of a batch have distinct parents (so the batch's parent updates never collide,
  and a thread may load all of a batch's values before storing any).

Nodes are picked by list scheduling, deepest first (the longest chain to the root is the
critical path). Batches are padded with dummy slots ``n .. n+batch-1`` (an identity row
that is its own parent, so it stays ``d = 1, rhs = 0``); the root's parent is slot
``n + batch``. Real nodes are stored in schedule order (:attr:`Schedule.slot`). The forward
sweep runs the batches in reverse: a parent's batch comes later in the backward order,
hence earlier in the forward one.

Example: the 5-node tree ``parent = [-1, 0, 1, 0, 3]`` (two branches of two nodes) with
``batch = 2`` gives the batches ``[2, 4]``, ``[1]``, ``[3]``, ``[0]`` (each padded with a
dummy): four steps instead of five; 1 and 3 share the parent 0, so they go to different
batches.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

__all__ = ["Schedule", "tiled_schedule"]

#: Slot indices are packed in 16 bits (node | parent << 16).
MAX_SLOTS = 1 << 15


@dataclass(frozen=True)
class Schedule:
    """A batched elimination order of one cell (see the module docstring).

    Attributes
    ----------
    batch : int
        Nodes per batch (``KB`` in the kernel).
    n_nodes : int
        Nodes of the cell.
    slot_stride : int
        Shared-memory slots per cell (``n_nodes + batch + 1``).
    jp : int32[n_batches * batch]
        ``slot of the node | slot of its parent << 16`` per entry (dummies: their own slot
        ``n + k`` twice; the root's parent: slot ``n + batch``).
    l, u : float64[n_batches * batch]
        The node's ``l`` and ``u`` (0 for the root and the dummies).
    node : int32[n_batches * batch]
        The node of each entry (-1 for dummies), for error reports.
    slot : int32[n_nodes]
        Where each node lives in shared memory: nodes in schedule order, so that the nodes
        of a step are adjacent and a warp's accesses to them are free of bank conflicts.
    """

    batch: int
    n_nodes: int
    slot_stride: int
    jp: np.ndarray
    l: np.ndarray
    u: np.ndarray
    node: np.ndarray
    slot: np.ndarray

    @property
    def n_batches(self) -> int:
        return self.jp.size // self.batch

    @property
    def fill(self) -> float:
        """Fraction of the batch slots that hold real nodes."""
        return self.n_nodes / max(1, self.jp.size)

    def order(self) -> np.ndarray:
        """The real nodes in backward elimination order (for tests)."""
        return self.node[self.node >= 0]


def _depths(parent: np.ndarray) -> np.ndarray:
    depth = np.zeros(parent.size, dtype=np.int64)
    for i in range(1, parent.size):  # Hines order: a parent precedes its children
        depth[i] = depth[parent[i]] + 1
    return depth


def _batches(parent: np.ndarray, batch: int) -> list[list[int]]:
    n = parent.size
    remaining = np.bincount(parent[parent >= 0], minlength=n)
    depth = _depths(parent)
    ready = [(-int(depth[j]), j) for j in np.flatnonzero(remaining == 0).tolist()]
    heapq.heapify(ready)
    batches = []
    while ready:
        picked, deferred, parents = [], [], set()
        while ready and len(picked) < batch:
            item = heapq.heappop(ready)
            p = int(parent[item[1]])
            if p >= 0 and p in parents:  # a sibling already updates this parent in this batch
                deferred.append(item)
                continue
            picked.append(item[1])
            if p >= 0:
                parents.add(p)
        for item in deferred:
            heapq.heappush(ready, item)
        for j in picked:  # parents become ready for the *next* batch
            p = int(parent[j])
            if p >= 0:
                remaining[p] -= 1
                if remaining[p] == 0:
                    heapq.heappush(ready, (-int(depth[p]), p))
        batches.append(picked)
    return batches


def tiled_schedule(cell, batch: int) -> Schedule:
    """The batched schedule of a one-cell :class:`~hinesbatch.tree.HinesStructure`.

    Raises ``ValueError`` when the cell has too many nodes for 16-bit slot indices.
    """
    parent = np.asarray(cell.parent, dtype=np.int64)
    n = parent.size
    if n + batch + 1 >= MAX_SLOTS:
        raise ValueError(f"the tiled strategy handles cells of fewer than {MAX_SLOTS - batch - 1} "
                         f"nodes; this cell has {n}")
    groups = _batches(parent, batch)
    order = np.asarray([j for nodes in groups for j in nodes], dtype=np.int64)
    slot = np.empty(n, dtype=np.int64)
    slot[order] = np.arange(n)  # a step's nodes sit side by side in shared memory
    jp = np.empty((len(groups), batch), dtype=np.int64)
    node = np.full((len(groups), batch), -1, dtype=np.int64)
    lv = np.zeros((len(groups), batch))
    uv = np.zeros((len(groups), batch))
    lower, upper = np.asarray(cell.lower), np.asarray(cell.u)
    for b, nodes in enumerate(groups):
        for k in range(batch):
            if k < len(nodes):
                j = nodes[k]
                p = int(parent[j])
                node[b, k] = j
                if p < 0:
                    jp[b, k] = slot[j] | ((n + batch) << 16)
                else:
                    jp[b, k] = slot[j] | (slot[p] << 16)
                    lv[b, k], uv[b, k] = lower[j], upper[j]
            else:
                jp[b, k] = (n + k) | ((n + k) << 16)
    return Schedule(batch, n, n + batch + 1, jp.reshape(-1).astype(np.int32),
                    lv.reshape(-1), uv.reshape(-1), node.reshape(-1).astype(np.int32),
                    slot.astype(np.int32))
