"""Elimination schedules of ``block-shared`` with ``keep="factors"`` (kernels/hines_factors.cu),
host side, NumPy only: :class:`FactorSchedule` for a shared structure, :func:`factor_pflags`
for per-cell structures."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .list_scheduling import list_schedule

__all__ = ["FactorSchedule", "factor_schedule", "factor_flags", "factor_pflags", "CARRY_IN",
           "ACC", "CARRY_OUT", "ACC_INIT", "ROOT", "FLAG_BITS"]

#: Entry flags, as in kernels/hines_factors.cu.
CARRY_IN, ACC, CARRY_OUT, ACC_INIT, ROOT = 1, 2, 4, 8, 16
FLAG_BITS = 5


@dataclass(frozen=True)
class FactorSchedule:
    """Steps of ``slots`` independent nodes of one cell, with where each contribution goes.

    One thread eliminates its cell step by step, the ``slots`` nodes of a step together (their
    dependency chains overlap; their parents are distinct). A node's contribution to its
    parent stays in the slot's registers when the parent is the same slot's node one step
    later (``CARRY_OUT``; the parent has ``CARRY_IN``); otherwise it is summed in the parent's
    shared-memory slot (the parent has ``ACC``; its first such child ``ACC_INIT`` stores
    instead of adding). ``ROOT`` marks the root. The forward sweep runs the steps in reverse
    and takes x of the parent from the same registers (``CARRY_OUT``) or from the parent's
    slot (``ACC`` nodes store x there).

    Attributes
    ----------
    slots : int
        Nodes per step (``V`` in the kernel).
    n_nodes : int
    entries : int32[n_steps * slots, 4]
        ``(node, parent, flags, 0)``; dummies pad the last steps with node -1.
    lu : float64[n_steps * slots, 2]
        ``(l, u)`` of each entry's node (0 for dummies).
    """

    slots: int
    n_nodes: int
    entries: np.ndarray
    lu: np.ndarray

    @property
    def n_steps(self) -> int:
        return self.entries.shape[0] // self.slots

    @property
    def carried(self) -> float:
        """Fraction of the non-root nodes whose contribution stays in registers."""
        flags = self.entries[:, 2]
        real = (self.entries[:, 0] >= 0) & ((flags & ROOT) == 0)
        return float(((flags & CARRY_OUT) != 0)[real].mean()) if real.any() else 1.0

    def order(self) -> np.ndarray:
        """The real nodes in backward elimination order (for tests)."""
        node = self.entries[:, 0]
        return node[node >= 0]


def _factor_steps(parent: np.ndarray, slots: int) -> list[list[int]]:
    """Steps of ``slots`` nodes (-1: empty): list scheduling, deepest ready node first (ties to
    the higher index), except that a slot whose last node's parent has just become ready
    takes that parent (carry). The nodes of a step have distinct parents, so that the kernel
    may load all of a step's slots before it stores any."""
    if slots == 1:
        return [[j] for j in range(parent.size - 1, -1, -1)]  # Hines order: runs carry
    return list_schedule(parent, slots, ties="high", carry=True)


def factor_flags(parent: np.ndarray, steps: list[list[int]]) -> np.ndarray:
    """The flags of every node of one cell for the given steps (see :class:`FactorSchedule`)."""
    n = parent.size
    step_of = np.empty(n, dtype=np.int64)
    slot_of = np.empty(n, dtype=np.int64)
    for s, nodes in enumerate(steps):
        for v, j in enumerate(nodes):
            if j >= 0:
                step_of[j], slot_of[j] = s, v
    flags = np.zeros(n, dtype=np.int32)
    started = np.zeros(n, dtype=bool)  # the parent's slot already holds a contribution
    for nodes in steps:  # program order: steps, then slots
        for j in nodes:
            if j < 0:
                continue
            p = int(parent[j])
            if p < 0:
                flags[j] |= ROOT
            elif step_of[p] == step_of[j] + 1 and slot_of[p] == slot_of[j]:
                flags[j] |= CARRY_OUT
                flags[p] |= CARRY_IN
            else:
                flags[p] |= ACC
                if not started[p]:
                    flags[j] |= ACC_INIT
                    started[p] = True
    return flags


def factor_schedule(cell, slots: int) -> FactorSchedule:
    """The :class:`FactorSchedule` of a one-cell :class:`~hinesbatch.tree.HinesStructure`."""
    parent = np.asarray(cell.parent, dtype=np.int64)
    steps = _factor_steps(parent, slots)
    flags = factor_flags(parent, steps)
    lower, upper = np.asarray(cell.lower, dtype=np.float64), np.asarray(cell.u, dtype=np.float64)
    entries = np.zeros((len(steps) * slots, 4), dtype=np.int32)
    lu = np.zeros((len(steps) * slots, 2))
    node = np.asarray(steps, dtype=np.int64).reshape(-1)
    real = node >= 0
    j = node[real]
    entries[:, 0] = node
    entries[real, 1] = parent[j]
    entries[real, 2] = flags[j]
    root = parent[j] < 0
    lu[real, 0] = np.where(root, 0.0, lower[j])
    lu[real, 1] = np.where(root, 0.0, upper[j])
    return FactorSchedule(slots, parent.size, entries, lu)


def factor_pflags(parent: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per-cell structures, one slot per step in descending node order (what
    :func:`factor_flags` gives each cell, vectorised over the batch): ``parent << 5 | flags``
    of every node of the concatenated cells, parents local to their cell (-1 at the roots)."""
    parent = np.asarray(parent, dtype=np.int64)
    n = parent.size
    sizes = np.diff(np.asarray(offsets, dtype=np.int64))
    start = np.repeat(np.asarray(offsets[:-1], dtype=np.int64), sizes)
    local = np.arange(n, dtype=np.int64) - start
    flags = np.zeros(n, dtype=np.int64)
    root = parent < 0
    flags[root] |= ROOT
    carry = ~root & (parent == local - 1)  # the parent is the very next node eliminated
    flags[carry] |= CARRY_OUT
    flags[np.flatnonzero(carry) - 1] |= CARRY_IN
    other = np.flatnonzero(~root & ~carry)  # summed in the parent's slot
    gp = start[other] + parent[other]
    flags[gp] |= ACC
    first = np.full(n, -1, dtype=np.int64)  # descending order: the largest child comes first
    np.maximum.at(first, gp, other)
    flags[first[first >= 0]] |= ACC_INIT
    return ((parent << FLAG_BITS) | flags).astype(np.int32)
