"""The one data format of the branch schedules (``levels`` and ``fine``), and its assembly.

See ``FORMAT.md`` beside this file for the format with a worked example. In short: every
branch (an unbranched chain of nodes whose child branches all hang on its last node) is one
thread's task; its node ``j`` (0 nearest the root) lives at slot ``base + j*stride`` of the
packed value arrays; branches are grouped into *phases* (the branches of one level that run
between two barriers) and phases into *groups* (what a barrier spans: the whole batch for
``levels``, one CUDA block for ``fine``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from ..structure import MonoBatch
from .slots import SlotMap, fill_slot
from .program import BranchProgram

__all__ = ["BranchSchedule", "assemble"]

_JIT = dict(cache=True, nogil=True)
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True, eq=False)
class BranchSchedule(SlotMap):
    """A branch schedule: which thread eliminates which branch, when, and where it lives.

    All index arrays are int32 (device-ready); ``u`` and ``l`` float64.

    Attributes
    ----------
    kind : str
        ``"levels"`` or ``"fine"``.
    lanes : int
        Branches per interleaved group (a warp: 32). Consecutive branches of a phase, up to
        ``lanes`` of them, store their nodes interleaved: ``stride`` is the group's size.
    group_offsets : int32[n_groups + 1]
        Phases of group ``g``: ``group_offsets[g]:group_offsets[g + 1]``, root level first.
    phase_offsets : int32[n_phases + 1]
        Branches of phase ``p``: ``phase_offsets[p]:phase_offsets[p + 1]``, longest first.
    block_threads : int32[n_groups] or None
        ``fine``: threads of each CUDA block (<= ``block_size``); a phase wider than that is
        run in rounds (thread ``t`` takes branches ``t, t + threads, ...``).
    block_size : int or None
        ``fine``: the most threads a block may have.
    block_cells, block_cell_offsets : int32 arrays or None
        ``fine``: the cells of block ``g`` are
        ``block_cells[block_cell_offsets[g]:block_cell_offsets[g + 1]]``.
    base, stride, length : int32[n_branches]
        Node ``j`` of a branch is slot ``base + j*stride``, ``0 <= j < length``.
    parent_slot : int32[n_branches]
        Slot of the node the branch's first node hangs on; ``-1`` for a cell's root branch.
    child_offsets : int32[n_branches + 1], children : int32[...]
        The first-node slots of the branches hanging on each branch's last node, in the
        order the backward sweep subtracts them.
    node_slot : int32[n_values]
        Slot of every value (flat canonical index: ``values.reshape(-1)``).
    slot_node : int32[n_slots]
        Flat canonical index of every slot, ``-1`` for padding.
    u, l : float64[n_slots]
        Couplings in slot order (``u`` of a slot couples it to its parent slot: the previous
        node of the branch, or ``parent_slot`` for a first node); 0 in padding and roots.
        ``l`` is None for symmetric structures.
    values_shape : tuple
        Shape of the canonical value arrays.
    options : dict
        The planning options (``reroot``, ``split``, ...), for ``describe``.
    """

    kind: str
    lanes: int
    group_offsets: np.ndarray
    phase_offsets: np.ndarray
    block_threads: np.ndarray | None
    block_size: int | None
    block_cells: np.ndarray | None
    block_cell_offsets: np.ndarray | None
    base: np.ndarray
    stride: np.ndarray
    length: np.ndarray
    parent_slot: np.ndarray
    child_offsets: np.ndarray
    children: np.ndarray

    @property
    def n_branches(self) -> int:
        return int(self.base.size)

    @property
    def n_groups(self) -> int:
        return int(self.group_offsets.size - 1)

    @property
    def n_phases(self) -> int:
        return int(self.phase_offsets.size - 1)

    def describe(self) -> str:
        padding = 1 - self.node_slot.size / self.n_slots if self.n_slots else 0.0
        text = (f"{self.kind} schedule: {self.n_branches} branches in {self.n_phases} phases, "
                f"{self.n_groups} group(s), {self.n_slots} slots ({padding:.1%} padding), "
                f"lanes {self.lanes}")
        if self.block_size is not None:
            text += f", blocks of at most {self.block_size} threads"
        return text + "; " + ", ".join(f"{k}={v}" for k, v in self.options.items())


# -- assembly --------------------------------------------------------------------------------
@njit(**_JIT)
def _positions_of_copies(shape_of_cell, rank, cell_copy_offset, class_offsets, class_start):
    """``levels``: copy ``k`` of class ``q`` in a cell of rank ``r`` sits at
    ``class_start[q] + r`` (copies of a class adjacent, cells in order)."""
    n = cell_copy_offset[-1]
    pos = np.empty(n, np.int64)
    for c in range(shape_of_cell.size):
        s = shape_of_cell[c]
        k = cell_copy_offset[c]
        for q in range(class_offsets[s], class_offsets[s + 1]):
            pos[k] = class_start[q] + rank[c]
            k += 1
    return pos


@njit(**_JIT)
def _class_at(shape_of_cell, cell_copy_offset, class_offsets, pos_of_copy, out):
    """Fill ``out`` with the class of the branch at every schedule position."""
    for c in range(shape_of_cell.size):
        s = shape_of_cell[c]
        k = cell_copy_offset[c]
        for q in range(class_offsets[s], class_offsets[s + 1]):
            out[pos_of_copy[k]] = q
            k += 1


@njit(**_JIT)
def _lay_out(phase_offsets, length, lanes):
    """Slots: each phase cut into groups of ``lanes`` consecutive branches, each group a
    rectangle of (its longest branch) x (its size), branch ``j``-th node at
    ``group base + j*size + lane``. Returns ``base``, ``stride``, number of slots."""
    n = length.size
    base = np.empty(n, np.int64)
    stride = np.empty(n, np.int64)
    slot = 0
    for p in range(phase_offsets.size - 1):
        for g0 in range(phase_offsets[p], phase_offsets[p + 1], lanes):
            g1 = min(g0 + lanes, phase_offsets[p + 1])
            depth = 0
            for b in range(g0, g1):
                depth = max(depth, length[b])
                base[b] = slot + (b - g0)
                stride[b] = g1 - g0
            slot += depth * (g1 - g0)
    return base, stride, slot


@njit(parallel=True, **_JIT)
def _link(visit, shape_of_cell, cell_copy_offset, class_offsets, pos_of_copy, base, stride,
          parent_class, parent_pos, kid_offsets, kids, child_offsets, parent_slot, children):
    """Fill the parent slots (``parent_slot`` starts at -1) and child lists (first-node
    slots), in schedule order; cells are visited in the order ``visit`` (any order gives
    the same result; one that follows the slots is faster)."""
    for i in prange(visit.size):  # cells write disjoint entries
        c = visit[i]
        s = shape_of_cell[c]
        first = cell_copy_offset[c] - class_offsets[s]  # copy of class q: first + q
        for q in range(class_offsets[s], class_offsets[s + 1]):
            p = pos_of_copy[first + q]
            if parent_class[q] >= 0:
                pp = pos_of_copy[first + parent_class[q]]
                parent_slot[p] = base[pp] + parent_pos[q] * stride[pp]
            e = child_offsets[p]
            for t in range(kid_offsets[q], kid_offsets[q + 1]):
                children[e] = base[pos_of_copy[first + kids[t]]]
                e += 1


@njit(parallel=True, **_JIT)
def _place(visit, shape_of_cell, value_start, coupling_start, node_offsets, class_offsets,
           cell_copy_offset, node_class, node_pos, source, swapped, pos_of_copy, base, stride,
           u, lower, node_slot, slot_node, u_slot, l_slot):
    """Fill the slot of every value, the value of every slot (``slot_node`` starts at -1),
    and the couplings in slot order (``u_slot``, ``l_slot`` start at 0), visiting the cells
    in the order ``visit`` as in :func:`_link`."""
    for i in prange(visit.size):  # cells write disjoint entries
        c = visit[i]
        s = shape_of_cell[c]
        first = cell_copy_offset[c] - class_offsets[s]
        for o in range(node_offsets[s + 1] - node_offsets[s]):
            g = node_offsets[s] + o
            p = pos_of_copy[first + node_class[g]]
            slot = base[p] + node_pos[g] * stride[p]
            v = value_start[c] + o
            fill_slot(v, slot, g, coupling_start[c] - node_offsets[s], source, swapped, u, lower,
                       node_slot, slot_node, u_slot, l_slot)


def check_positive(name: str, value) -> int:
    """``value`` as an int, or ``ValueError`` naming ``name`` unless it is a positive int."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


def class_order_positions(program: BranchProgram, class_start: np.ndarray) -> np.ndarray:
    """Schedule position of every copy when class ``q``'s copies start at ``class_start[q]``
    and follow the cells' ranks (the ``levels`` order)."""
    sh = program.shapes
    return _positions_of_copies(sh.shape_of_cell, sh.rank, copy_offsets(program),
                                program.class_offsets, class_start)


def copy_offsets(program: BranchProgram) -> np.ndarray:
    """First copy (cell-major numbering) of every cell, int64[n_cells + 1]."""
    per_cell = np.diff(program.class_offsets)[program.shapes.shape_of_cell]
    return np.concatenate([[0], np.cumsum(per_cell)]).astype(np.int64)


def assemble(program: BranchProgram, structure, pos_of_copy, phase_offsets, group_offsets, *,
             kind: str, lanes: int, visit, block_threads=None, block_size=None, blocks=None,
             options=None) -> BranchSchedule:
    """Build the :class:`BranchSchedule` once the order of the branches is decided.

    ``pos_of_copy`` gives the schedule position of every copy (cell-major numbering:
    cell ``c``'s copy of class ``q`` of its shape is ``copy_offsets[c] + q - class_offsets[s]``);
    positions are grouped into phases by ``phase_offsets`` and phases into groups by
    ``group_offsets``. Phases must list their branches longest first (then a group's
    rectangle is tight). ``visit``: the cells in an order close to the slots' (only speed
    depends on it). ``blocks``: ``(cells in packing order, block ranges)`` for ``fine``.
    """
    sh = program.shapes
    cco = copy_offsets(program)
    cls = np.empty(pos_of_copy.size, np.int64)
    _class_at(sh.shape_of_cell, cco, program.class_offsets, pos_of_copy, cls)
    length = program.length[cls]
    base, stride, n_slots = _lay_out(np.asarray(phase_offsets, np.int64), length, int(lanes))
    kid_counts = np.diff(program.kid_offsets)[cls]
    child_offsets = np.concatenate([[0], np.cumsum(kid_counts)]).astype(np.int64)
    sizes = np.diff(program.node_offsets)[sh.shape_of_cell]
    value_start = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    if max(n_slots, int(child_offsets[-1]), int(value_start[-1])) > _INT32_MAX:
        raise ValueError(f"the schedule needs {n_slots} slots: more than int32 indices hold; "
                         "split the batch")
    base, stride = base.astype(np.int32), stride.astype(np.int32)
    visit = np.asarray(visit, np.int64)
    parent_slot = np.full(pos_of_copy.size, -1, np.int32)
    children = np.empty(int(child_offsets[-1]), np.int32)
    _link(visit, sh.shape_of_cell, cco, program.class_offsets, pos_of_copy, base, stride,
          program.parent_class, program.parent_pos, program.kid_offsets, program.kids,
          child_offsets, parent_slot, children)
    cell = structure.cell if isinstance(structure, MonoBatch) else structure
    coupling_start = (np.zeros(sh.n_cells, np.int64) if isinstance(structure, MonoBatch)
                      else value_start[:-1])
    # allocated and touched here, in order: first touches scattered over the loop below
    # cost twice its own time (page faults)
    node_slot = np.full(int(value_start[-1]), -1, np.int32)
    slot_node = np.full(n_slots, -1, np.int32)
    u = np.full(n_slots, 0.0)
    lower = u if cell.l is None else np.full(n_slots, 0.0)  # symmetric: writes agree
    _place(visit, sh.shape_of_cell, value_start, coupling_start, program.node_offsets,
           program.class_offsets, cco, program.node_class, program.node_pos,
           program.working.source, program.working.swapped, pos_of_copy, base, stride,
           cell.u, cell.lower, node_slot, slot_node, u, lower)
    i32 = lambda a: np.ascontiguousarray(a, dtype=np.int32)  # noqa: E731
    return BranchSchedule(
        kind=kind, lanes=int(lanes), group_offsets=i32(group_offsets),
        phase_offsets=i32(phase_offsets),
        block_threads=None if block_threads is None else i32(block_threads),
        block_size=block_size,
        block_cells=None if blocks is None else i32(blocks[0]),
        block_cell_offsets=None if blocks is None else i32(blocks[1]),
        base=i32(base), stride=i32(stride), length=i32(length),
        parent_slot=i32(parent_slot), child_offsets=i32(child_offsets), children=i32(children),
        node_slot=i32(node_slot), slot_node=i32(slot_node), u=u,
        l=None if cell.l is None else lower, values_shape=structure.values_shape,
        options=dict(options or {}),
    )
