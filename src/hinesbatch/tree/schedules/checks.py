"""Structural checks of the schedules: the rules a GPU kernel relies on, checked on the host.

A kernel trusts its schedule blindly (no bounds tests, no locks). These functions verify,
independently of how the schedule was built, that running it is a valid elimination:

* every value has exactly one slot and every slot at most one value;
* the tasks of one phase (or step) write disjoint slots, and read only what earlier phases
  (steps) finished: a branch's children are in a deeper phase of the same group, its
  parent in a shallower one; a DHS node's children in earlier steps;
* every child appears in exactly one child list, the one of its parent;
* ``fine``: blocks stay within ``block_size`` threads and hold whole cells, each once.

Each raises ``ValueError`` naming the first broken rule; they return None when all hold.
"""
from __future__ import annotations

import numpy as np

from .branch_schedule import BranchSchedule

__all__ = ["check_branch_schedule", "check_dhs_schedule"]


def _check_slot_maps(node_slot, slot_node, n_slots) -> None:
    n = node_slot.size
    if n and (node_slot.min() < 0 or node_slot.max() >= n_slots):
        raise ValueError("node_slot points outside the slots")
    if not np.array_equal(slot_node[node_slot], np.arange(n)):
        raise ValueError("slot_node is not the inverse of node_slot")
    if np.count_nonzero(slot_node >= 0) != n:
        raise ValueError("some slots claim a value whose slot is elsewhere")


def _branch_slots(s: BranchSchedule):
    """``(slot of every branch node, its branch, its position)``."""
    length = s.length.astype(np.int64)
    owner = np.repeat(np.arange(s.n_branches), length)
    j = np.arange(owner.size) - np.repeat(np.cumsum(length) - length, length)
    return s.base[owner].astype(np.int64) + j * s.stride[owner], owner, j


def check_branch_schedule(s: BranchSchedule) -> None:
    """Verify a ``levels`` or ``fine`` schedule (see the module docstring)."""
    _check_slot_maps(s.node_slot, s.slot_node, s.n_slots)
    slots, owner, j = _branch_slots(s)
    if np.any(s.length < 1) or np.any(s.stride < 1):
        raise ValueError("every branch needs a length and a stride >= 1")
    real = np.flatnonzero(s.slot_node >= 0)
    if slots.size != real.size or not np.array_equal(np.sort(slots), real):
        raise ValueError("the branches' slots are not exactly the slots that hold values")
    if np.any(np.diff(s.phase_offsets) < 1) or np.any(np.diff(s.group_offsets) < 0) \
            or s.group_offsets[-1] != s.n_phases or s.phase_offsets[-1] != s.n_branches:
        raise ValueError("phase_offsets/group_offsets are not increasing ranges that cover all")
    phase = np.repeat(np.arange(s.n_phases), np.diff(s.phase_offsets))
    group = np.repeat(np.arange(s.n_groups), np.diff(s.group_offsets))[phase]
    branch_of_slot = np.full(s.n_slots, -1, np.int64)
    branch_of_slot[slots] = owner
    last = s.base.astype(np.int64) + (s.length.astype(np.int64) - 1) * s.stride
    has = np.flatnonzero(s.parent_slot >= 0)
    up = branch_of_slot[s.parent_slot[has]]
    bad = has[(up < 0) | (group[up] != group[has]) | (phase[up] >= phase[has])
              | (last[np.maximum(up, 0)] != s.parent_slot[has])]
    if bad.size:
        raise ValueError(f"branch {int(bad[0])} hangs on slot {int(s.parent_slot[bad[0]])}, "
                         "which is not the last node of a branch in an earlier phase of its "
                         "group")
    roots = np.flatnonzero(s.parent_slot < 0)
    if np.any(phase[roots] != s.group_offsets[group[roots]]):
        raise ValueError("a root branch is not in its group's first phase")
    _check_children(s, branch_of_slot, has, up)
    if s.block_threads is not None:
        _check_blocks(s, phase, group)


def _check_children(s: BranchSchedule, branch_of_slot, has, up) -> None:
    entries = s.children.astype(np.int64)
    listed_by = np.repeat(np.arange(s.n_branches), np.diff(s.child_offsets))
    child = branch_of_slot[entries]
    if np.any(child < 0) or np.any(s.base[np.maximum(child, 0)] != entries):
        raise ValueError("a child list holds a slot that is not a branch's first node")
    expected = np.zeros(s.n_branches, np.int64)
    expected[has] = up + 1  # parent branch + 1, 0 for roots
    got = np.zeros(s.n_branches, np.int64)
    np.add.at(got, child, 1)
    if np.any(got != (s.parent_slot >= 0)) or np.any(expected[child] != listed_by + 1):
        raise ValueError("child lists do not list every child branch exactly once, under "
                         "its parent branch")


def _check_blocks(s: BranchSchedule, phase, group) -> None:
    if np.any(s.block_threads > s.block_size) or np.any(s.block_threads < 1):
        raise ValueError(f"a block has more than block_size={s.block_size} threads")
    width = np.diff(s.phase_offsets)
    widest = np.maximum.reduceat(width, s.group_offsets[:-1]) if s.n_groups else width
    if not np.array_equal(s.block_threads, np.minimum(widest, s.block_size)):
        raise ValueError("block_threads is not the block's widest level (capped)")
    cells = np.sort(s.block_cells)
    if not np.array_equal(cells, np.arange(cells.size)):
        raise ValueError("block_cells does not hold every cell exactly once")
    if s.block_cell_offsets[-1] != cells.size or s.block_cell_offsets.size != s.n_groups + 1:
        raise ValueError("block_cell_offsets does not match the blocks")


def check_dhs_schedule(s, *, cell_sizes) -> None:
    """Verify a DHS schedule; ``cell_sizes``: nodes of every cell (canonical order)."""
    _check_slot_maps(s.node_slot, s.slot_node, s.n_slots)
    cells = np.sort(s.cells)
    if not np.array_equal(cells, np.arange(cell_sizes.size)):
        raise ValueError("cells does not hold every cell exactly once")
    per_cell = (s.n_steps.astype(np.int64) * s.threads)[s.cell_shape]
    if not np.array_equal(s.cell_base, np.cumsum(per_cell) - per_cell):
        raise ValueError("cell regions are not consecutive")
    for sh in range(s.threads.size):
        _check_dhs_shape(s, sh)


def _check_dhs_shape(s, sh: int) -> None:
    a, b = int(s.shape_slot_offsets[sh]), int(s.shape_slot_offsets[sh + 1])
    k = int(s.threads[sh])
    if b - a != int(s.n_steps[sh]) * k:
        raise ValueError(f"shape {sh}: {b - a} slots for {s.n_steps[sh]} steps of {k}")
    real = s.slot_node_local[a:b] >= 0
    parent = s.parent_slot[a:b].astype(np.int64)
    step = np.arange(b - a) // k
    roots = np.flatnonzero(real & (parent < 0))
    if roots.size != 1 or step[roots[0]] != s.n_steps[sh] - 1:
        raise ValueError(f"shape {sh}: one root, eliminated last, expected; got {roots.size}")
    kids = np.flatnonzero(real & (parent >= 0))
    if np.any(~real[parent[kids]]) or np.any(step[parent[kids]] <= step[kids]):
        raise ValueError(f"shape {sh}: a node is eliminated before its child")
    owner = np.repeat(np.arange(b - a), np.diff(s.child_offsets[a:b + 1]))
    listed = s.children[s.child_offsets[a]:s.child_offsets[b]].astype(np.int64)
    if listed.size != kids.size or not np.array_equal(np.sort(listed), kids) \
            or np.any(parent[listed] != owner):
        raise ValueError(f"shape {sh}: child lists do not list every node once, under its "
                         "parent")
