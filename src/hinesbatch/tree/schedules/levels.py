"""The ``levels`` schedule (Valero-Lara et al. 2018, §4): the batch solved level by level.

Every cell is cut into branches; the branches of one level, over the whole batch, are a
batch of independent tridiagonal systems (one per branch) that one kernel launch solves,
one thread per branch. The backward sweep runs the deepest level first: a branch thread
first subtracts the contributions of the child branches hanging on its last node (they
belong to the level below, finished by the previous launch), then eliminates its chain
towards its first node. The forward sweep runs level 0 first: a branch's first node reads
its parent node (finished by the previous launch), then its chain.

No two threads ever write one value: a node's children are pulled by the one thread that
owns the node, in a fixed order (the order of the serial backward sweep), so the result is
deterministic, free of atomics, and bit-for-bit the serial solve of the same tree.

Within a level the branches are sorted longest first (copies of one branch of one shape
adjacent, cells in order), so the ``lanes`` branches of a warp have nearly equal lengths and
their interleaved rectangle has little padding (``lanes=1`` gives each branch a contiguous
run of slots, the "contiguous renumbering").
"""
from __future__ import annotations

import numpy as np

from .branch_schedule import BranchSchedule, assemble, check_positive, class_order_positions
from .program import branch_program
from .shapes import cell_shapes

__all__ = ["level_schedule"]


def level_schedule(structure, *, lanes: int = 32, reroot: bool = False, split=None,
                   min_length: int | None = None, barrier_cost: float = 4.0) -> BranchSchedule:
    """Plan the ``levels`` strategy for a batch.

    Parameters
    ----------
    structure : HinesStructure or MonoBatch
    lanes : int
        Branches per interleaved group (32: a warp reads one node of each of its branches in
        one coalesced access). ``1``: every branch's nodes contiguous.
    reroot : bool
        Eliminate every cell from its centre (fewer levels; see
        :mod:`hinesbatch.tree.balance`).
    split : None, "mean", "cost" or int
        Split branches longer than the level's threshold (see
        :func:`~hinesbatch.tree.balance.split_branches`).
    min_length : int, optional
        Shortest piece a split cuts off [nodes] (default 10 for ``"mean"``, else 1).
    barrier_cost : float
        ``split="cost"``: a barrier's cost in node eliminations.

    Returns
    -------
    BranchSchedule
        One group; phase ``L`` holds the branches of level ``L`` of all cells.
    """
    lanes = check_positive("lanes", lanes)
    shapes = cell_shapes(structure)
    program = branch_program(shapes, reroot=reroot, split=split, min_length=min_length,
                             barrier_cost=barrier_cost)
    counts = shapes.counts[program.class_shape]
    ids = np.arange(program.n_classes)
    by_key = np.lexsort((ids, program.class_shape, -program.length, program.level))
    class_start = np.empty(program.n_classes, np.int64)
    class_start[by_key] = np.cumsum(counts[by_key]) - counts[by_key]
    pos_of_copy = class_order_positions(program, class_start)
    n_levels = int(program.level.max()) + 1 if program.n_classes else 0
    per_level = np.bincount(program.level, weights=counts, minlength=n_levels).astype(np.int64)
    phase_offsets = np.concatenate([[0], np.cumsum(per_level)])
    return assemble(program, structure, pos_of_copy, phase_offsets, np.array([0, n_levels]),
                    kind="levels", lanes=lanes,
                    visit=np.lexsort((shapes.rank, shapes.shape_of_cell)),
                    options=dict(reroot=bool(reroot), split=split, min_length=min_length,
                                 barrier_cost=barrier_cost))
