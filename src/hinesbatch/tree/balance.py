"""Work balancing for the branch solvers: re-rooting at the tree centre, branch splitting.

Huber (2018, §6) balances Arbor's fine solver two ways, both done once at setup:

* **Re-rooting.** A Hines matrix may be eliminated from any node: choosing the node that
  minimises the tree's depth (the *centre*: the middle of a longest path) shortens the
  longest chain of dependent eliminations and spreads the branches over fewer levels.
  :func:`reroot` renumbers each cell from a new root, in Hines order with every branch's
  nodes adjacent (:func:`~hinesbatch.tree.contiguous_order`). The matrix is the same matrix
  with rows and columns permuted, so the solution is the same up to rounding. Where an edge
  now points the other way (its old child is its new parent), the two off-diagonals of the
  edge trade places: the new ``u`` of the edge is the old ``l`` and vice versa.
* **Branch splitting.** One long branch keeps a thread busy while the others of its level
  wait at the barrier. :func:`split_branches` cuts it into two consecutive branches of the
  same chain: the first keeps the level, the second hangs on the first one's last node one
  level deeper (with everything below it). Level by level, from the root, every branch
  longer than the level's threshold is cut at the threshold, so a very long branch is cut
  again on the next level. The node numbering does not change; only the decomposition.
  Thresholds: Arbor's (the level's mean length, at least 10 nodes), a fixed length, or the
  fixed length (or none) that minimises a cost model of levels and barriers (``"cost"``,
  see :func:`cost_threshold` and ``docs/multi-morphology.md`` for why).

Example: the chain 0-1-2-3-4 with a side node 5 on node 1 has depth 4 from node 0; its
centre is node 2 (depth 2). A 5-node chain split at a fixed threshold of 2 nodes becomes the
branches ``[0, 1], [2, 3], [4]`` on levels 0, 1, 2.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from .._numba import light_cache_loads_in
from .branches import Branches, contiguous_order
from .structure import HinesStructure, MonoBatch, as_batch

__all__ = ["Rerooted", "tree_centres", "reroot", "split_branches", "split_threshold",
           "cost_threshold", "SPLIT_RULES", "COST_CANDIDATES"]

_JIT = dict(cache=True, nogil=True)


@njit(**_JIT)
def _eccentricities(parent):
    """Eccentricity (longest path in edges to any node) of every node of every cell.

    Two passes over the batch: subtree heights leaves-up (children have larger indices),
    then the longest path leaving each node through its parent, root-down. Cells do not
    interact (their roots have no parent).
    """
    n = parent.size
    best1 = np.zeros(n, np.int64)  # longest downward path (edges) from each node
    best2 = np.zeros(n, np.int64)  # second longest, through another child
    for i in range(n - 1, -1, -1):
        p = parent[i]
        if p >= 0:
            h = best1[i] + 1
            if h > best1[p]:
                best2[p] = best1[p]
                best1[p] = h
            elif h > best2[p]:
                best2[p] = h
    up = np.zeros(n, np.int64)  # longest path that leaves the node through its parent
    for i in range(n):
        p = parent[i]
        if p >= 0:
            sibling = best2[p] if best1[i] + 1 == best1[p] else best1[p]
            up[i] = 1 + max(up[p], sibling)
    return np.maximum(best1, up)


def tree_centres(structure) -> np.ndarray:
    """The centre of every cell: the node whose farthest node is nearest (int64[n_cells]).

    Parameters
    ----------
    structure : HinesStructure or MonoBatch
        For a :class:`MonoBatch`, the centre of its one shared cell (one entry).

    Returns
    -------
    int64 array, one index per cell *within the cell* (0 is the root). A tree has one or two
    centres (the middle node or the two middle nodes of a longest path); of two, the lower
    index is returned, so the answer is deterministic.
    """
    s = as_batch(structure)
    s = s.cell if isinstance(s, MonoBatch) else s
    if s.n_nodes == 0:
        return np.zeros(0, np.int64)
    ecc = _eccentricities(s.parent)
    cell = np.repeat(np.arange(s.n_cells), s.cell_sizes)
    first = np.lexsort((np.arange(ecc.size), ecc, cell))  # per cell: least ecc, lowest index
    starts = np.searchsorted(cell[first], np.arange(s.n_cells))
    return first[starts] - s.cell_offsets[:-1]


@njit(**_JIT)
def _bfs_from(parent, offsets, roots, child_offsets, children):
    """Breadth-first renumbering of every cell from ``roots`` (local indices).

    Returns ``order`` (new -> old, global), ``new_parent`` (global, new numbering),
    ``source`` (old node whose ``u``/``l`` couple each new node to its new parent; -1 at
    the roots) and ``swapped`` (True where that edge changed direction). Neighbours are
    visited in a fixed order: the old parent first, then the children by index.
    """
    n = parent.size
    order = np.empty(n, np.int64)
    new_index = np.full(n, -1, np.int64)
    new_parent = np.full(n, -1, np.int64)
    source = np.full(n, -1, np.int64)
    swapped = np.zeros(n, np.bool_)
    for c in range(offsets.size - 1):
        a = offsets[c]
        head = a
        tail = a + 1
        r = a + roots[c]
        order[a] = r
        new_index[r] = a
        while head < tail:
            x = order[head]
            p = parent[x]
            if p >= 0 and new_index[p] < 0:  # the old parent becomes a child: edge reversed
                order[tail] = p
                new_index[p] = tail
                new_parent[tail] = head
                source[tail] = x
                swapped[tail] = True
                tail += 1
            for e in range(child_offsets[x], child_offsets[x + 1]):
                y = children[e]
                if new_index[y] < 0:
                    order[tail] = y
                    new_index[y] = tail
                    new_parent[tail] = head
                    source[tail] = y
                    tail += 1
            head += 1
    return order, new_parent, source, swapped


@dataclass(frozen=True, eq=False)
class Rerooted:
    """A batch renumbered from new roots (see :func:`reroot`).

    Attributes
    ----------
    structure : HinesStructure or MonoBatch
        The re-rooted batch: Hines order, each branch's nodes adjacent, every cell on its
        old node range. Same kind as the input.
    order : int64[n]
        New node ``j`` is old node ``order[j]`` (per cell for a :class:`MonoBatch`):
        ``d[..., order]``, ``rhs[..., order]`` give the re-rooted values and
        ``x_new[..., np.argsort(order)]`` maps a solution back.
    source : int64[n]
        For new node ``j``: the old node whose ``u[source]``, ``l[source]`` couple it to its
        new parent (``-1`` at roots).
    swapped : bool[n]
        Whether that edge changed direction (then the new ``u`` is the old ``l`` and the new
        ``l`` the old ``u``).
    """

    structure: HinesStructure | MonoBatch
    order: np.ndarray
    source: np.ndarray
    swapped: np.ndarray


def reroot(structure, roots=None) -> Rerooted:
    """Renumber every cell from a new root, keeping the matrix (permuted) and Hines order.

    Parameters
    ----------
    structure : HinesStructure or MonoBatch
    roots : int array, optional
        The new root of every cell, as an index within the cell (one entry for a
        :class:`MonoBatch`). Default: :func:`tree_centres`.

    Returns
    -------
    Rerooted
        The new structure (branches contiguous, laid out level by level as in
        :func:`~hinesbatch.tree.contiguous_order`) and the maps between the numberings.

    Raises
    ------
    ValueError
        ``roots`` has the wrong length or an index outside its cell.
    """
    batch = as_batch(structure)
    s = batch.cell if isinstance(batch, MonoBatch) else batch
    roots = tree_centres(s) if roots is None else _check_roots(roots, s)
    child_offsets, children = _children(s.parent)
    order, new_parent, source, swapped = _bfs_from(
        s.parent.astype(np.int64), s.cell_offsets, roots, child_offsets, children)
    bfs = HinesStructure(new_parent, np.zeros(s.n_nodes), None, s.cell_offsets)
    contiguous = contiguous_order(bfs)  # branches adjacent, level by level
    order, source, swapped = order[contiguous], source[contiguous], swapped[contiguous]
    rerooted = _renumbered(s, order, source, swapped)
    if isinstance(batch, MonoBatch):
        rerooted = MonoBatch(rerooted, batch.n_cells)
    return Rerooted(rerooted, order, source, swapped)


def _check_roots(roots, s: HinesStructure) -> np.ndarray:
    roots = np.asarray(roots)
    if roots.shape != (s.n_cells,) or (roots.size and not np.issubdtype(roots.dtype, np.integer)):
        raise ValueError(f"roots must be {s.n_cells} integers (one per cell), got shape "
                         f"{roots.shape}, dtype {roots.dtype}")
    roots = roots.astype(np.int64)
    bad = np.flatnonzero((roots < 0) | (roots >= s.cell_sizes))
    if bad.size:
        c = int(bad[0])
        raise ValueError(f"roots[{c}] = {int(roots[c])} is not a node of cell {c} "
                         f"({int(s.cell_sizes[c])} nodes)")
    return roots


def _children(parent: np.ndarray):
    """Children of every node, in index order, as CSR ``(offsets int64[n+1], children)``."""
    n = parent.size
    has_parent = np.flatnonzero(parent >= 0)
    kids = has_parent[np.argsort(parent[has_parent], kind="stable")]
    counts = np.bincount(parent[has_parent], minlength=n)
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64), kids.astype(np.int64)


def _renumbered(s: HinesStructure, order, source, swapped) -> HinesStructure:
    """``s`` in the new numbering ``order`` with the couplings of reversed edges swapped."""
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    has = source >= 0
    # the neighbour each new node hangs on: its old parent, or the old child it was reached from
    partner = np.where(swapped, source, s.parent.astype(np.int64)[order])
    new_parent = np.where(has, inverse[np.maximum(partner, 0)], -1)
    src = np.maximum(source, 0)
    u = np.where(swapped, s.lower[src], s.u[src])
    u[~has] = 0.0
    lower = None
    if s.l is not None:
        lower = np.where(swapped, s.u[src], s.l[src])
        lower[~has] = 0.0
    return HinesStructure(new_parent, u, lower, s.cell_offsets)


#: Thresholds :func:`split_branches` knows (see :func:`split_threshold`).
SPLIT_RULES = ("mean", "cost")

#: Fixed thresholds the ``"cost"`` rule chooses from (nodes), besides not splitting.
COST_CANDIDATES = (64, 48, 32, 24, 16, 12, 8, 6, 4, 3, 2, 1)
#: The ``"cost"`` rule judges the split on at most this many cells (spread evenly).
COST_SAMPLE = 4096


def split_threshold(lengths, weights=None, *, rule: str | int = "mean",
                    min_length: int = 10) -> int:
    """The length above which a branch of one level is cut, and where it is cut [nodes].

    Parameters
    ----------
    lengths : int array
        Lengths of the level's branches (nodes).
    weights : array, optional
        How many cells each branch stands for (shape representatives), default 1.
    rule : {"mean"} or int
        ``"mean"``: Arbor's rule, the level's mean length rounded down. An int: that fixed
        length on every level. (``"cost"`` is resolved to an int by
        :func:`split_branches`.)
    min_length : int
        Never cut pieces shorter than this (Arbor uses 10: very short pieces add a barrier
        each and save little).
    """
    if isinstance(rule, (int, np.integer)) and not isinstance(rule, bool):
        return max(int(rule), int(min_length), 1)
    if rule != "mean":
        raise ValueError(f"split_threshold takes the rule 'mean' or a length (int), got "
                         f"{rule!r} (split_branches resolves 'cost')")
    lengths = np.asarray(lengths, np.float64)
    w = np.ones_like(lengths) if weights is None else np.asarray(weights, np.float64)
    mean = float(np.dot(lengths, w) / w.sum()) if lengths.size else 0.0
    return max(int(mean), int(min_length), 1)


def split_branches(b: Branches, *, rule: str | int = "mean", min_length: int | None = None,
                   weights=None, barrier_cost: float = 4.0) -> Branches:
    """Cut long branches into consecutive pieces, level by level from the root (Huber §6).

    Parameters
    ----------
    b : Branches
        A decomposition from :func:`~hinesbatch.tree.branches` (or an earlier split).
    rule : {"mean", "cost"} or int
        The threshold of each level: a branch longer than it is cut after that many nodes;
        the rest becomes a branch on the next level, judged again against that level's
        threshold. ``"mean"`` is Arbor's (the level's mean length, at least
        ``min_length``); an int is a fixed threshold; ``"cost"`` picks the fixed threshold
        (or no split) that minimises the modelled time of the cells,
        ``sum over levels of the longest branch + barrier_cost x levels`` (see
        :func:`cost_threshold`).
    min_length : int, optional
        Never cut a piece shorter than this [nodes]. Default: 10 for ``"mean"`` (Arbor's
        choice), 1 otherwise.
    weights : array, optional
        Multiplicity of each *cell* (``n_cells`` entries), for batches given by one
        representative per distinct shape: thresholds are taken over the whole batch.
        Default: every cell once.
    barrier_cost : float
        ``"cost"`` only: a barrier's cost in node eliminations.

    Returns
    -------
    Branches
        The same nodes (``nodes`` unchanged), more branches. A piece's parent node is the
        last node of the previous piece. Pieces are numbered in ``nodes`` order (so a parent
        branch still has a lower number than its children), which after a split is no
        longer the order of first nodes; runs need no longer be maximal.
    """
    if min_length is None:
        min_length = 10 if isinstance(rule, str) and rule == "mean" else 1
    if isinstance(min_length, bool) or int(min_length) != min_length or min_length < 1:
        raise ValueError(f"min_length must be an int >= 1, got {min_length!r}")
    if isinstance(rule, str) and rule not in SPLIT_RULES:
        raise ValueError(f"unknown split rule {rule!r}; valid: {', '.join(SPLIT_RULES)} "
                         "or a length (int)")
    n_cells = int(b.cell.max()) + 1 if b.n_branches else 0
    w_cell = np.ones(n_cells) if weights is None else np.asarray(weights, np.float64)
    if w_cell.shape != (n_cells,):
        raise ValueError(f"weights must have one entry per cell ({n_cells}), got {w_cell.shape}")
    if isinstance(rule, str) and rule == "cost":
        if not np.isfinite(barrier_cost) or barrier_cost < 0:
            raise ValueError(f"barrier_cost must be a finite number >= 0, got {barrier_cost!r}")
        rule = cost_threshold(b, weights=w_cell, min_length=min_length,
                              barrier_cost=barrier_cost)
        if rule is None:
            return b
    first_level, cut_branch, cut_at = _cut_level_by_level(
        b.length.astype(np.int64), b.parent_branch.astype(np.int64), w_cell[b.cell], rule,
        min_length)
    return _pieces(b, first_level, cut_branch, cut_at)


def cost_threshold(b: Branches, *, weights=None, min_length: int = 1,
                   barrier_cost: float = 4.0) -> int | None:
    """The fixed split threshold (or ``None``: no split) of least modelled cost.

    The cost of a cell is its critical path (the sum over its levels of its longest
    branch, in node eliminations) plus ``barrier_cost`` per level: the time of the cell in
    a block of its own, where every level ends at a barrier. Summed over the cells (times
    ``weights``); candidates :data:`COST_CANDIDATES` (not below ``min_length``) and no
    split; ties go to fewer splits. Judged on at most :data:`COST_SAMPLE` cells spread
    evenly over the batch.
    """
    n_cells = int(b.cell.max()) + 1 if b.n_branches else 0
    w = np.ones(n_cells) if weights is None else np.asarray(weights, np.float64)
    length, parent_branch, cell = _sample(b, n_cells)
    weight = w[cell]
    no_split = np.full(length.size, np.iinfo(np.int64).max // 2)  # a threshold never reached
    best, best_cost = None, np.inf
    for h in (None,) + COST_CANDIDATES:
        if h is not None and h < min_length:
            continue
        thresholds = no_split if h is None else h
        first_level, cut_branch, cut_at = _cut_level_by_level(length, parent_branch, weight,
                                                              thresholds, 1)
        cost = _modelled_cost(length, cell, weight, first_level, cut_branch, cut_at,
                              barrier_cost)
        if cost < best_cost:
            best, best_cost = h, cost
    return best


def _sample(b: Branches, n_cells: int):
    """``(length, parent_branch, cell)`` of the branches of at most COST_SAMPLE cells."""
    if n_cells <= COST_SAMPLE:
        return b.length.astype(np.int64), b.parent_branch.astype(np.int64), b.cell
    keep = np.zeros(n_cells, np.bool_)
    keep[np.linspace(0, n_cells - 1, COST_SAMPLE).astype(np.int64)] = True
    pick = np.flatnonzero(keep[b.cell])
    renumber = np.full(b.n_branches, -1, np.int64)
    renumber[pick] = np.arange(pick.size)
    parent = b.parent_branch[pick]
    return (b.length[pick].astype(np.int64),
            np.where(parent >= 0, renumber[np.maximum(parent, 0)], -1), b.cell[pick])


def _modelled_cost(length, cell, weight, first_level, cut_branch, cut_at, barrier_cost):
    """Sum over cells of weight x (sum over levels of the longest piece + barriers)."""
    if length.size == 0:
        return 0.0
    order = np.lexsort((cut_at, cut_branch))
    cut_branch, cut_at = cut_branch[order], cut_at[order]
    n_pieces = 1 + np.bincount(cut_branch, minlength=length.size)
    owner = np.repeat(np.arange(length.size), n_pieces)
    k = np.arange(owner.size) - np.repeat(np.cumsum(n_pieces) - n_pieces, n_pieces)
    ends = np.zeros(owner.size, np.int64)  # where each piece ends within its branch
    is_last = k == n_pieces[owner] - 1
    ends[is_last] = length
    ends[~is_last] = cut_at
    starts = np.zeros(owner.size, np.int64)
    starts[~(k == 0)] = cut_at
    level = first_level[owner] + k
    piece_cell = cell[owner]
    cells, cell_index = np.unique(piece_cell, return_inverse=True)
    top = int(level.max()) + 1
    longest = np.zeros(cells.size * top, np.int64)
    np.maximum.at(longest, cell_index * top + level, ends - starts)
    levels = np.zeros(cells.size, np.int64)
    np.maximum.at(levels, cell_index, level + 1)
    per_cell = longest.reshape(cells.size, top).sum(axis=1) + barrier_cost * levels
    cell_weight = np.zeros(cells.size)
    cell_weight[cell_index] = weight[owner]
    return float(np.dot(cell_weight, per_cell))


def _cut_level_by_level(length, parent_branch, weight, rule, min_length):
    """Where to cut: ``(level of each branch's first piece, cut branches, cut offsets)``.

    ``rule`` as in :func:`split_threshold`, or an int array: a fixed threshold per branch.
    """
    kid_offsets, kids = _children(parent_branch)
    remaining = length.copy()
    consumed = np.zeros(length.size, np.int64)
    first_level = np.full(length.size, -1, np.int64)
    active = np.flatnonzero(parent_branch < 0)
    first_level[active] = 0
    cut_branch, cut_at, level = [], [], 0
    while active.size:
        if isinstance(rule, np.ndarray):
            threshold = rule[active]
        else:
            threshold = split_threshold(remaining[active], weight[active], rule=rule,
                                        min_length=min_length)
        cut = remaining[active] > threshold
        again = active[cut]
        cut_branch.append(again)
        step = threshold[cut] if isinstance(threshold, np.ndarray) else threshold
        cut_at.append(consumed[again] + step)
        consumed[again] += step
        remaining[again] -= step
        done = active[~cut]
        counts = kid_offsets[done + 1] - kid_offsets[done]
        pick = np.repeat(kid_offsets[done] - np.cumsum(counts) + counts, counts)
        nxt = kids[pick + np.arange(pick.size)]
        first_level[nxt] = level + 1
        active = np.sort(np.concatenate([again, nxt]))
        level += 1
    return first_level, np.concatenate(cut_branch or [[]]).astype(np.int64), \
        np.concatenate(cut_at or [[]]).astype(np.int64)


def _pieces(b: Branches, first_level, cut_branch, cut_at) -> Branches:
    """The decomposition with branch ``cut_branch[k]`` cut after ``cut_at[k]`` nodes."""
    offsets = np.sort(np.concatenate([b.offsets, b.offsets[cut_branch] + cut_at]))
    begin = offsets[:-1]
    old = np.searchsorted(b.offsets, begin, side="right") - 1
    first = begin == b.offsets[old]
    piece_index = np.arange(begin.size) - np.searchsorted(begin, b.offsets[old])
    start = b.nodes[begin]
    parent_node = np.where(first, b.parent_node[old], b.nodes[np.maximum(begin - 1, 0)])
    length = np.diff(offsets)
    node_branch = np.empty_like(b.node_branch)
    node_branch[b.nodes] = np.repeat(np.arange(begin.size), length)
    return Branches(
        start=start,
        length=length,
        parent_node=parent_node,
        parent_branch=np.where(parent_node >= 0, node_branch[np.maximum(parent_node, 0)], -1),
        level=first_level[old] + piece_index,
        cell=b.cell[old],
        node_branch=node_branch,
        nodes=b.nodes,
        offsets=offsets.astype(np.int64),
    )


light_cache_loads_in(globals())  # cached machine code loads without compiler set-up
