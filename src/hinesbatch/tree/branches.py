"""Branch decomposition of a batch: unbranched runs of nodes, their parents and levels.

A *branch* is a maximal run of nodes in which every node but the last has exactly one
child. A node starts a branch when it is a root or when its parent has two or more children;
the branch then follows single children down to a tip or to a node with several children
(that node ends the branch, its children start new ones). So a root with one child belongs
to the branch of that child, and a root with several children is a branch of its own.
Every node is in exactly one branch. The *level* of a branch is its depth in the tree of
branches: a cell's root branch is level 0, its children are level 1, and so on.

These feed the GPU strategies that work on branches: the level-by-level solver, Arbor's
one-thread-per-branch "fine" solver, DHS.

Contiguity: in a Hines order (parents before children) the nodes of a branch come in
parent-to-tip order but need not be adjacent (NEURON's order interleaves them, a random
order does). :func:`contiguous_order` gives a renumbering, Arbor's, in which they are: within
each cell the branches are laid out level by level (ties by their first node's old index),
each branch's nodes adjacent and parent to tip. It keeps the Hines order (a branch's parent
node lies in a branch of a lower level, hence earlier; a node's parent within its branch is
the node just before it) and keeps every cell on its node range, so values are renumbered
with one gather: ``values[..., order]``.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from .structure import HinesStructure, MonoBatch, _owned, as_batch

__all__ = ["Branches", "branches", "contiguous_order", "depth_order", "make_branches_contiguous",
           "node_depths"]


@dataclass(frozen=True, eq=False)
class Branches:
    """The branches of a batch; all index arrays are int64 and use the structure's numbering.

    Branches are numbered by their first node (so cell by cell, and a branch's parent
    branch always has a lower number).

    Attributes (per branch, length ``n_branches``)
    ----------------------------------------------
    start : first node (global index; the node nearest the root)
    length : number of nodes
    parent_node : parent of the first node, ``-1`` for a root branch
    parent_branch : branch holding ``parent_node``, ``-1`` for a root branch
    level : depth in the branch tree (root branch 0)
    cell : cell the branch belongs to

    Attributes (per node, length ``n_nodes``)
    -----------------------------------------
    node_branch : branch of each node
    nodes : the nodes grouped by branch, each branch parent to tip: branch ``b`` is
        ``nodes[offsets[b]:offsets[b + 1]]``
    offsets : int64[n_branches + 1], see ``nodes``

    The arrays are read-only int64 of the object's own (copied unless they already are a
    structure's or another ``Branches``'), also through copies and pickles.
    """

    start: np.ndarray
    length: np.ndarray
    parent_node: np.ndarray
    parent_branch: np.ndarray
    level: np.ndarray
    cell: np.ndarray
    node_branch: np.ndarray
    nodes: np.ndarray
    offsets: np.ndarray

    def __post_init__(self):
        for f in fields(self):
            object.__setattr__(self, f.name, _owned(getattr(self, f.name), np.int64))

    def __reduce__(self):
        return (Branches, tuple(getattr(self, f.name) for f in fields(self)))

    @property
    def n_branches(self) -> int:
        return int(self.start.size)

    @property
    def n_levels(self) -> int:
        """Number of levels (the deepest branch's level + 1; 0 for an empty batch)."""
        return int(self.level.max()) + 1 if self.level.size else 0

    @property
    def contiguous(self) -> bool:
        """Whether every branch's nodes are ``start, start + 1, ..., start + length - 1``."""
        return bool(np.array_equal(self.nodes, np.arange(self.nodes.size)))


def branches(structure) -> Branches:
    """Decompose ``structure`` into branches (see the module docstring for the rules).

    Parameters
    ----------
    structure : HinesStructure or MonoBatch
        For a :class:`MonoBatch` the branches of its one shared cell are returned (every
        cell of the batch has the same ones; ``cell`` is 0 throughout).

    Returns
    -------
    Branches

    Vectorized (pointer jumping, ``O(n log depth)``): about a second for 10^7 nodes.
    """
    s = as_batch(structure)
    s = s.cell if isinstance(s, MonoBatch) else s
    parent = s.parent.astype(np.int64)
    n = parent.size
    idx = np.arange(n)
    has_parent = parent >= 0
    n_children = np.bincount(parent[has_parent], minlength=n)
    is_start = ~has_parent
    is_start[has_parent] = n_children[parent[has_parent]] >= 2
    head = _jump_to_start(np.where(is_start, idx, parent), is_start)
    start = np.flatnonzero(is_start)
    node_branch = (np.cumsum(is_start) - 1)[head]
    parent_node = parent[start]
    parent_branch = np.where(parent_node >= 0, node_branch[np.maximum(parent_node, 0)], -1)
    length = np.bincount(node_branch, minlength=start.size)
    return Branches(
        start=start,
        length=length,
        parent_node=parent_node,
        parent_branch=parent_branch,
        level=node_depths(parent_branch),
        cell=np.searchsorted(s.cell_offsets, start, side="right") - 1,
        node_branch=node_branch,
        nodes=np.argsort(node_branch, kind="stable"),  # stable: index order = parent to tip
        offsets=np.concatenate([[0], np.cumsum(length)]).astype(np.int64),
    )


def _jump_to_start(head: np.ndarray, is_start: np.ndarray) -> np.ndarray:
    """Follow ``head`` pointers (each node's parent, or itself at a start) to the start."""
    while True:
        pending = np.flatnonzero(~is_start[head])
        if pending.size == 0:
            return head
        head[pending] = head[head[pending]]


def node_depths(parent_branch: np.ndarray) -> np.ndarray:
    """Depth of every node of a forest given by parent pointers (``-1`` at roots, depth 0), as
    int64 (list ranking: the pointers double each round, so the rounds are ``log2`` of the
    depth). The one depth function of the package: branch levels, depth orders, and the
    list schedules (:mod:`hinesbatch.tree.schedules.list_scheduling`)."""
    depth = (parent_branch >= 0).astype(np.int64)
    ptr = parent_branch.copy()
    live = np.flatnonzero(ptr >= 0)
    while live.size:
        up = ptr[live]
        add, hop = depth[up], ptr[up]  # gathered before writing: every pointer jumps at once
        depth[live] += add
        ptr[live] = hop
        live = live[hop >= 0]
    return depth


def contiguous_order(structure) -> np.ndarray:
    """The renumbering that makes every branch's nodes adjacent (int64, new -> old).

    Within each cell, branches are laid out by level, then by their first node's old index;
    each branch's nodes adjacent, parent to tip. New node ``j`` is old node ``order[j]``: apply
    to values with ``values[..., order]`` and undo with ``x[..., np.argsort(order)]``. For a
    :class:`MonoBatch` the order is that of the shared cell. The result keeps the Hines order
    and every cell's node range (see the module docstring).
    """
    b = branches(structure)
    rank = np.empty(b.n_branches, dtype=np.int64)
    rank[np.lexsort((b.start, b.level, b.cell))] = np.arange(b.n_branches)
    return np.argsort(rank[b.node_branch], kind="stable")  # stable: parent to tip within a branch


def depth_order(structure) -> np.ndarray:
    """The renumbering that sorts each cell's nodes by depth (int64, new -> old).

    Depth is the number of edges to the cell's root; ties keep their old order. The result
    keeps the Hines order and every cell's node range. In this order the backward sweep meets
    nodes of different branches one after another, so their eliminations do not wait on each
    other: a CPU overlaps them (the same arithmetic per node as Algorithm 1, about twice as
    fast on one core for a real cell). Apply with ``values[..., order]``, undo with
    ``x[..., np.argsort(order)]``; for a :class:`MonoBatch` it is the shared cell's order.
    """
    s = as_batch(structure)
    cell = s.cell if isinstance(s, MonoBatch) else s
    depth = node_depths(cell.parent.astype(np.int64))
    cell_of = np.repeat(np.arange(cell.n_cells), cell.cell_sizes)
    return np.lexsort((np.arange(depth.size), depth, cell_of))


def make_branches_contiguous(structure):
    """``(renumbered structure, order)``: ``structure`` renumbered by :func:`contiguous_order`.

    A :class:`HinesStructure` gives a :class:`HinesStructure`, a :class:`MonoBatch` a
    :class:`MonoBatch` whose shared cell is renumbered. Values move with ``values[..., order]``.
    """
    s = as_batch(structure)
    order = contiguous_order(s)
    if isinstance(s, MonoBatch):
        return MonoBatch(s.cell.renumber(order), s.n_cells), order
    return s.renumber(order), order
