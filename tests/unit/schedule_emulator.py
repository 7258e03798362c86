"""CPU emulators of the GPU schedules: each runs a schedule exactly as its kernel will.

These are test utilities (not registered backends): they prove on the CPU that a schedule
(:mod:`hinesbatch.tree.schedules`) is a correct elimination order before any GPU kernel
runs it, and they are the reference the GPU kernels are compared with.

* :func:`run_branch_schedule` (``levels`` and ``fine``): for every group (the whole batch, or
  one CUDA block), the phases deepest first; in a phase every branch is one thread's task:
  pull the child branches into its last node, then eliminate the chain towards its first
  node. Then the phases root first: the first node reads its parent slot, then the chain.
* :func:`run_dhs_schedule`: for every cell, the steps in order; in a step every lane
  eliminates one node, pulling its children; then the steps in reverse.

The threads of a phase (or step) are independent on a GPU; the emulator runs them one after
another, in the given order or reversed (``reverse=True``). A schedule whose tasks
depended on each other within a phase would give different results in the two orders.

The arithmetic is Algorithm 1's, node for node, with the pivots and the subtraction order
of the serial solver on the schedule's working tree: the results are bit-identical to it.
Values are packed float64 slot arrays, changed in place; padding slots are never read.
"""
from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["run_branch_schedule", "run_dhs_schedule", "emulate"]

_JIT = dict(cache=True, nogil=True, error_model="numpy")


@njit(**_JIT)
def _branch_backward(b, base, stride, length, child_offsets, children, u, l, d, rhs):
    s = base[b]
    h = stride[b]
    last = s + (length[b] - 1) * h
    for e in range(child_offsets[b], child_offsets[b + 1]):
        c = children[e]
        factor = u[c] / d[c]
        d[last] -= factor * l[c]
        rhs[last] -= factor * rhs[c]
    for j in range(last, s, -h):
        factor = u[j] / d[j]
        d[j - h] -= factor * l[j]
        rhs[j - h] -= factor * rhs[j]


@njit(**_JIT)
def _branch_forward(b, base, stride, length, parent_slot, l, d, rhs):
    s = base[b]
    h = stride[b]
    p = parent_slot[b]
    if p >= 0:
        rhs[s] -= l[s] * rhs[p]
    rhs[s] /= d[s]
    for j in range(s + h, s + length[b] * h, h):
        rhs[j] -= l[j] * rhs[j - h]
        rhs[j] /= d[j]


@njit(**_JIT)
def run_branch_schedule(group_offsets, phase_offsets, base, stride, length, parent_slot,
                        child_offsets, children, u, l, d, rhs, reverse):
    """Solve in place: ``d`` ends with the pivots, ``rhs`` with the solution (slot order)."""
    for g in range(group_offsets.size - 1):
        for p in range(group_offsets[g + 1] - 1, group_offsets[g] - 1, -1):
            lo, hi = phase_offsets[p], phase_offsets[p + 1]
            for i in range(lo, hi):
                b = hi - 1 - (i - lo) if reverse else i
                _branch_backward(b, base, stride, length, child_offsets, children, u, l, d, rhs)
        for p in range(group_offsets[g], group_offsets[g + 1]):
            lo, hi = phase_offsets[p], phase_offsets[p + 1]
            for i in range(lo, hi):
                b = hi - 1 - (i - lo) if reverse else i
                _branch_forward(b, base, stride, length, parent_slot, l, d, rhs)


@njit(**_JIT)
def run_dhs_schedule(cell_base, cell_shape, threads, n_steps, shape_slot_offsets,
                     slot_node, parent_slot, child_offsets, children, u, l, d, rhs, reverse):
    """Solve every cell in place by its shape's DHS steps (slots are cell-local)."""
    for c in range(cell_base.size):
        s = cell_shape[c]
        k = threads[s]
        first = shape_slot_offsets[s]
        v0 = cell_base[c]
        for step in range(n_steps[s]):
            for t in range(k):
                q = step * k + ((k - 1 - t) if reverse else t)
                if slot_node[first + q] < 0:
                    continue
                v = v0 + q
                for e in range(child_offsets[first + q], child_offsets[first + q + 1]):
                    w = v0 + children[e]
                    factor = u[w] / d[w]
                    d[v] -= factor * l[w]
                    rhs[v] -= factor * rhs[w]
        for step in range(n_steps[s] - 1, -1, -1):
            for t in range(k):
                q = step * k + ((k - 1 - t) if reverse else t)
                if slot_node[first + q] < 0:
                    continue
                v = v0 + q
                p = parent_slot[first + q]
                if p >= 0:
                    rhs[v] -= l[v] * rhs[v0 + p]
                rhs[v] /= d[v]


def emulate(schedule, d, rhs, *, reverse: bool = False) -> np.ndarray:
    """Solve ``d``, ``rhs`` (canonical shape) by running ``schedule`` on the CPU (float64).

    ``schedule`` is a :class:`~hinesbatch.tree.schedules.BranchSchedule` or
    :class:`~hinesbatch.tree.schedules.DHSSchedule`. Padding gets the identity row
    (``d = 1``, ``rhs = 0``). Returns the solution in the canonical shape.
    """
    from hinesbatch.tree.schedules import BranchSchedule

    pd = schedule.pack(np.asarray(d, np.float64), fill=1.0)
    pr = schedule.pack(np.asarray(rhs, np.float64), fill=0.0)
    if isinstance(schedule, BranchSchedule):
        run_branch_schedule(schedule.group_offsets, schedule.phase_offsets, schedule.base,
                            schedule.stride, schedule.length, schedule.parent_slot,
                            schedule.child_offsets, schedule.children, schedule.u,
                            schedule.lower, pd, pr, reverse)
    else:
        run_dhs_schedule(schedule.cell_base, schedule.cell_shape, schedule.threads,
                         schedule.n_steps, schedule.shape_slot_offsets, schedule.slot_node_local,
                         schedule.parent_slot, schedule.child_offsets, schedule.children,
                         schedule.u, schedule.lower, pd, pr, reverse)
    return schedule.unpack(pr)
