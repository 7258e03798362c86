"""Slots and arrays of a DHS plan, from the step and lane of every node (see ``dhs.py``)."""
from __future__ import annotations

import numpy as np
from numba import njit

from ..structure import MonoBatch

__all__ = ["build_dhs"]

_JIT = dict(cache=True, nogil=True)
_INT32_MAX = 2**31 - 1


@njit(**_JIT)
def _place(shape_of_cell, value_start, coupling_start, node_offsets, slot_of_node, cell_base,
           source, swapped, u, lower, n_slots):
    """Slot of every value, value of every slot, couplings in slot order."""
    node_slot = np.empty(value_start[-1], np.int32)
    slot_node = np.full(n_slots, -1, np.int32)
    u_slot = np.zeros(n_slots)
    l_slot = np.zeros(n_slots)
    for c in range(shape_of_cell.size):
        s = shape_of_cell[c]
        for o in range(node_offsets[s + 1] - node_offsets[s]):
            g = node_offsets[s] + o
            slot = cell_base[c] + slot_of_node[g]
            v = value_start[c] + o
            node_slot[v] = slot
            slot_node[slot] = v
            if source[g] >= 0:
                src = coupling_start[c] + source[g] - node_offsets[s]
                if swapped[g]:
                    u_slot[slot] = lower[src]
                    l_slot[slot] = u[src]
                else:
                    u_slot[slot] = u[src]
                    l_slot[slot] = lower[src]
    return node_slot, slot_node, u_slot, l_slot


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
    """Assemble the :class:`~hinesbatch.tree.schedules.dhs.DHSSchedule`."""
    from .dhs import DHSSchedule

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
    node_slot, slot_node, u, lower = _place(
        s, value_start, coupling_start, work.structure.cell_offsets, slot_of_node, cell_base,
        work.source, work.swapped, cell.u, cell.lower, n_slots)
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
