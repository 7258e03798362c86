"""The branch decomposition of every distinct shape, balanced or not: what the planners
replicate over the cells of a batch.

A *class* is one branch of one shape; a cell of that shape holds one *copy* of it. Classes
are numbered shape by shape (``class_offsets``), in the order of
:func:`~hinesbatch.tree.branches` (after :func:`~hinesbatch.tree.balance.split_branches`:
the pieces in chain order), so a class's parent class has a lower number.

The *working tree* of a shape is its tree as the schedule eliminates it: the cell itself, or
the cell re-rooted at its centre (:func:`~hinesbatch.tree.balance.reroot`). A schedule
eliminates the working tree with exactly the arithmetic of the serial solver (Algorithm 1) on
that tree: every branch in chain order, and the children hanging on one node in descending
order of their working index, as the serial backward sweep meets them. So the emulated
solve is bit-for-bit the serial solve of the working tree.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..balance import reroot as _reroot
from ..balance import split_branches
from ..branches import branches
from ..structure import HinesStructure
from .shapes import CellShapes

__all__ = ["WorkingTrees", "working_trees", "BranchProgram", "branch_program"]


@dataclass(frozen=True, eq=False)
class WorkingTrees:
    """The shapes' representatives as they will be eliminated.

    Attributes
    ----------
    structure : HinesStructure
        One cell per shape (couplings zero): the representative, re-rooted if asked.
    order : int64[n]
        Working node ``j`` is representative node ``order[j]`` (global over the
        representatives; identity without re-rooting).
    source : int64[n]
        Per *representative* node ``o`` (global): the representative node whose ``u`` and
        ``l`` couple ``o`` to its working parent (``-1`` at working roots).
    swapped : bool[n]
        Per representative node: whether that coupling's ``u`` and ``l`` trade places.
    """

    structure: HinesStructure
    order: np.ndarray
    source: np.ndarray
    swapped: np.ndarray


def working_trees(shapes: CellShapes, *, reroot: bool = False) -> WorkingTrees:
    """The trees the schedules eliminate: the representatives, re-rooted at their centres
    when ``reroot``."""
    reps = shapes.representatives
    n = reps.n_nodes
    if not reroot:
        return WorkingTrees(reps, np.arange(n, dtype=np.int64),
                            np.where(reps.parent >= 0, np.arange(n), -1).astype(np.int64),
                            np.zeros(n, np.bool_))
    r = _reroot(reps)
    source = np.empty(n, np.int64)
    swapped = np.empty(n, np.bool_)
    source[r.order] = r.source
    swapped[r.order] = r.swapped
    return WorkingTrees(r.structure, r.order, source, swapped)


@dataclass(frozen=True, eq=False)
class BranchProgram:
    """Branch classes of every shape (see the module docstring); all arrays int64.

    Per shape: ``node_offsets`` (n_shapes + 1, nodes of the representatives),
    ``class_offsets`` (n_shapes + 1).

    Per class: ``level``, ``length``, ``parent_class`` (-1 for a root class),
    ``parent_pos`` (position of the parent node within the parent class, -1),
    ``kid_offsets`` (n_classes + 1) and ``kids``: the child classes of every class, all
    hanging on its last node, in serial elimination order (descending working index).

    Per representative node (global over the representatives, original numbering):
    ``node_class`` and ``node_pos`` (position within the class, 0 nearest the root), and
    ``source``/``swapped`` from :class:`WorkingTrees`.
    """

    shapes: CellShapes
    working: WorkingTrees
    node_offsets: np.ndarray
    class_offsets: np.ndarray
    level: np.ndarray
    length: np.ndarray
    parent_class: np.ndarray
    parent_pos: np.ndarray
    kid_offsets: np.ndarray
    kids: np.ndarray
    node_class: np.ndarray
    node_pos: np.ndarray

    @property
    def n_classes(self) -> int:
        return int(self.level.size)

    @property
    def class_shape(self) -> np.ndarray:
        """Shape of every class (int64)."""
        return np.repeat(np.arange(self.shapes.n_shapes), np.diff(self.class_offsets))

    def shape_levels(self) -> np.ndarray:
        """Number of levels of every shape (int64)."""
        top = np.zeros(self.shapes.n_shapes, np.int64)
        np.maximum.at(top, self.class_shape, self.level + 1)
        return top


def branch_program(shapes: CellShapes, *, reroot: bool = False, split=None,
                   min_length: int | None = None, barrier_cost: float = 4.0) -> BranchProgram:
    """Branch classes of every shape of ``shapes``.

    Parameters
    ----------
    shapes : CellShapes
    reroot : bool
        Eliminate each shape from its centre (:func:`~hinesbatch.tree.balance.reroot`).
    split : None, "mean" or int
        Split long branches (:func:`~hinesbatch.tree.balance.split_branches` with this rule,
        thresholds taken over the whole batch: every shape weighs its cell count).
    min_length : int
        Shortest piece a split leaves (nodes).
    """
    work = working_trees(shapes, reroot=reroot)
    b = branches(work.structure)
    if split is not None:
        b = split_branches(b, rule=split, min_length=min_length, weights=shapes.counts,
                           barrier_cost=barrier_cost)
    n_shapes = shapes.n_shapes
    class_offsets = np.searchsorted(b.cell, np.arange(n_shapes + 1)).astype(np.int64)
    pos = np.empty(b.nodes.size, np.int64)
    pos[b.nodes] = np.arange(b.nodes.size) - b.offsets[b.node_branch[b.nodes]]
    node_class = np.empty_like(pos)
    node_pos = np.empty_like(pos)
    node_class[work.order] = b.node_branch  # working node j is representative node order[j]
    node_pos[work.order] = pos
    has_parent = b.parent_node >= 0
    parent_pos = np.where(has_parent, pos[np.maximum(b.parent_node, 0)], -1)
    child = np.flatnonzero(has_parent)
    child = child[np.lexsort((-b.start[child], b.parent_branch[child]))]
    kid_counts = np.bincount(b.parent_branch[child], minlength=b.n_branches)
    return BranchProgram(
        shapes=shapes, working=work,
        node_offsets=work.structure.cell_offsets.astype(np.int64),
        class_offsets=class_offsets,
        level=b.level.astype(np.int64), length=b.length.astype(np.int64),
        parent_class=b.parent_branch.astype(np.int64), parent_pos=parent_pos.astype(np.int64),
        kid_offsets=np.concatenate([[0], np.cumsum(kid_counts)]).astype(np.int64),
        kids=child.astype(np.int64),
        node_class=node_class, node_pos=node_pos,
    )
