"""The DHS plan's data (:class:`DHSSchedule`) and its assembly from the step and lane of
every node (the scheduling itself is in ``dhs.py``)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from ..structure import MonoBatch
from .slots import SlotMap, fill_slot

__all__ = ["DHSSchedule", "build_dhs"]

_JIT = dict(cache=True, nogil=True)
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True, eq=False)
class DHSSchedule(SlotMap):
    """A DHS plan (see the module docstring). Index arrays int32, couplings float64.

    Per shape: ``threads`` (k), ``n_steps``, ``shape_slot_offsets`` (n_shapes + 1; shape
    ``s`` has ``n_steps[s] * threads[s]`` slots).

    Per shape slot (concatenated over shapes; values are *cell-local* slots):
    ``slot_node_local`` (node of the representative, working tree's original numbering,
    ``-1`` for an idle lane), ``parent_slot`` (``-1`` at the root and idle lanes),
    ``child_offsets`` (total + 1) and ``children`` (the children's slots, in subtraction
    order).

    Per cell, in schedule order: ``cells`` (the cell, canonical index), ``cell_shape``,
    ``cell_base`` (its first value slot); ``thread_offsets`` groups them by ``k``
    (``thread_values[i]`` for cells ``thread_offsets[i]:thread_offsets[i + 1]``).

    Per value slot: ``slot_node`` (flat canonical index, ``-1`` padding), ``u``, ``l``
    (``l`` None if symmetric); ``node_slot`` per canonical value.
    """

    threads: np.ndarray
    n_steps: np.ndarray
    shape_slot_offsets: np.ndarray
    slot_node_local: np.ndarray
    parent_slot: np.ndarray
    child_offsets: np.ndarray
    children: np.ndarray
    cells: np.ndarray
    cell_shape: np.ndarray
    cell_base: np.ndarray
    thread_values: np.ndarray
    thread_offsets: np.ndarray

    @property
    def work_steps(self) -> np.ndarray:
        """Per shape: the sum over steps of the busiest lane's work (1 + its children):
        the steps weighted by the pulls (int64[n_shapes])."""
        counts = np.diff(self.child_offsets) + (self.slot_node_local >= 0)
        out = np.zeros(self.threads.size, np.int64)
        for s in range(self.threads.size):
            a, b = self.shape_slot_offsets[s], self.shape_slot_offsets[s + 1]
            out[s] = counts[a:b].reshape(-1, self.threads[s]).max(axis=1).sum()
        return out

    def describe(self) -> str:
        padding = 1 - self.node_slot.size / self.n_slots if self.n_slots else 0.0
        ks = ", ".join(f"k={k}: {int(np.diff(self.thread_offsets)[i])} cells"
                       for i, k in enumerate(self.thread_values))
        steps = (f"{int(self.n_steps.min())}..{int(self.n_steps.max())}" if self.n_steps.size
                 else "none")
        return (f"dhs schedule: {self.threads.size} shape(s), {ks}; steps {steps}, "
                f"{self.n_slots} slots ({padding:.1%} padding); "
                + ", ".join(f"{k}={v}" for k, v in self.options.items()))



@njit(**_JIT)
def _place(shape_of_cell, value_start, coupling_start, node_offsets, slot_of_node, cell_base,
           source, swapped, u, lower, node_slot, slot_node, u_slot, l_slot):
    """Fill the slot of every value, the value of every slot (``slot_node`` starts at -1)
    and the couplings in slot order (``u_slot``, ``l_slot`` start at 0)."""
    for c in range(shape_of_cell.size):
        s = shape_of_cell[c]
        for o in range(node_offsets[s + 1] - node_offsets[s]):
            g = node_offsets[s] + o
            slot = cell_base[c] + slot_of_node[g]
            v = value_start[c] + o
            fill_slot(v, slot, g, coupling_start[c] - node_offsets[s], source, swapped, u, lower,
                       node_slot, slot_node, u_slot, l_slot)


def _shape_slots(work, k, steps, step_of, lane_of):
    """Per-shape slot arrays: ``(shape_slot_offsets, slot_of_node, slot_node_local,
    parent_slot, child_offsets, children)`` (see :class:`DHSSchedule`)."""
    ws = work.structure
    node_offsets = ws.cell_offsets
    shape_of_node = np.repeat(np.arange(ws.n_cells), ws.cell_sizes)
    shape_slot_offsets = np.concatenate([[0], np.cumsum(steps * k)]).astype(np.int64)
    local_slot = step_of * k[shape_of_node] + lane_of  # per working node, within the cell
    flat = shape_slot_offsets[shape_of_node] + local_slot
    total = int(shape_slot_offsets[-1])
    slot_node_local = np.full(total, -1, np.int64)
    slot_node_local[flat] = work.order - node_offsets[shape_of_node]  # original local node
    parent = ws.parent.astype(np.int64)
    parent_slot = np.full(total, -1, np.int64)
    has = parent >= 0
    parent_slot[flat[has]] = local_slot[parent[has]]
    child = np.flatnonzero(has)
    child = child[np.lexsort((-child, parent[child]))]  # per parent, descending index
    counts = np.zeros(total, np.int64)
    np.add.at(counts, flat[parent[child]], 1)
    child_offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    children = np.empty(child.size, np.int64)
    # children grouped by parent node; parents' slots ascend differently: place per parent
    first_entry = child_offsets[flat[parent[child]]]
    rank = np.arange(child.size) - np.searchsorted(parent[child], parent[child])
    children[first_entry + rank] = local_slot[child]
    slot_of_node = np.empty_like(local_slot)
    slot_of_node[work.order] = local_slot  # indexed by original (representative) node
    return shape_slot_offsets, slot_of_node, slot_node_local, parent_slot, child_offsets, \
        children


def build_dhs(structure, shapes, work, k, steps, step_of, lane_of, *, options):
    """Assemble the :class:`DHSSchedule`."""
    sso, slot_of_node, slot_node_local, parent_slot, child_offsets, children = _shape_slots(
        work, k, steps, step_of, lane_of)
    s = shapes.shape_of_cell
    cells = np.lexsort((np.arange(shapes.n_cells), s, -steps[s], k[s]))
    per_cell = (steps * k)[s[cells]]
    cell_base = np.empty(shapes.n_cells, np.int64)
    cell_base[cells] = np.cumsum(per_cell) - per_cell
    n_slots = int(per_cell.sum())
    if n_slots > _INT32_MAX:
        raise ValueError(f"the schedule needs {n_slots} slots: more than int32 indices hold; "
                         "split the batch")
    sizes = np.diff(work.structure.cell_offsets)[s]
    value_start = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    mono = isinstance(structure, MonoBatch)
    cell = structure.cell if mono else structure
    coupling_start = np.zeros(shapes.n_cells, np.int64) if mono else value_start[:-1]
    node_slot = np.full(int(value_start[-1]), -1, np.int32)
    slot_node = np.full(n_slots, -1, np.int32)
    u = np.full(n_slots, 0.0)
    lower = u if cell.l is None else np.full(n_slots, 0.0)  # symmetric: writes agree
    _place(s, value_start, coupling_start, work.structure.cell_offsets, slot_of_node,
           cell_base, work.source, work.swapped, cell.u, cell.lower, node_slot, slot_node, u,
           lower)
    thread_values, first = np.unique(k[s[cells]], return_index=True)
    i32 = lambda a: np.ascontiguousarray(a, dtype=np.int32)  # noqa: E731
    return DHSSchedule(
        threads=i32(k), n_steps=i32(steps), shape_slot_offsets=i32(sso),
        slot_node_local=i32(slot_node_local), parent_slot=i32(parent_slot),
        child_offsets=i32(child_offsets), children=i32(children),
        cells=i32(cells), cell_shape=i32(s[cells]), cell_base=i32(cell_base[cells]),
        thread_values=i32(thread_values),
        thread_offsets=i32(np.concatenate([first, [shapes.n_cells]])),
        node_slot=i32(node_slot), slot_node=i32(slot_node), u=u,
        l=None if cell.l is None else lower, values_shape=structure.values_shape,
        options=options)
