"""The ``fine`` schedule (Huber 2018; Arbor's fine solver): whole cells packed into blocks.

One thread per branch, as in ``levels``, but every cell lives in one CUDA block, so the
levels synchronise with the block's barrier instead of a kernel launch, and a block runs
its own number of levels. Packing (done once, here):

1. Sort the cells: most levels first, then widest level, then most nodes (then shape and
   index, so the order is deterministic and copies of one shape are adjacent).
2. Fill blocks in that order ("next fit", Arbor's greedy packing): a cell joins the current
   block if, on every level, the block's branches plus the cell's stay within
   ``block_size`` threads (and, if ``max_shared_bytes`` is given, the block's nodes times
   ``bytes_per_node`` stay within it); otherwise it starts a new block.
3. A cell wider than a block on some level (Arbor refuses those, its issue 644) gets a block
   of its own with ``block_size`` threads; the thread ``t`` of such a level takes the
   branches ``t, t + block_size, ...`` in turn (*rounds*), longest first.
4. In every block, each level's branches sorted longest first (equal lengths: cells and
   classes in order), laid out in interleaved groups of ``lanes``.

A block's ``block_threads`` is its widest level (at most ``block_size``). See
:mod:`hinesbatch.tree.schedules.branch_schedule` for the arrays and
:func:`~hinesbatch.tree.schedules.metrics.fine_metrics` for the balance metrics.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .branch_schedule import BranchSchedule, assemble, check_positive, copy_offsets
from .program import BranchProgram, branch_program
from .shapes import cell_shapes

__all__ = ["fine_schedule", "pack_cells"]

_JIT = dict(cache=True, nogil=True)


@njit(**_JIT)
def _next_fit(cell_seq, cell_shape, width_offsets, widths, shape_nodes, block_size,
              max_nodes):
    """Block boundaries (indices into ``cell_seq``) of next-fit packing."""
    top = 1
    for s in range(width_offsets.size - 1):
        top = max(top, width_offsets[s + 1] - width_offsets[s])
    used = np.zeros(top, np.int64)
    starts = np.empty(cell_seq.size + 1, np.int64)
    n_blocks = 0
    levels = 0
    nodes = 0
    for i in range(cell_seq.size):
        s = cell_shape[cell_seq[i]]
        w0, w1 = width_offsets[s], width_offsets[s + 1]
        fits = n_blocks > 0 and nodes + shape_nodes[s] <= max_nodes
        for L in range(w1 - w0):
            if not fits:
                break
            fits = used[L] + widths[w0 + L] <= block_size
        if not fits:  # start a new block with this cell
            used[:levels] = 0
            levels = 0
            nodes = 0
            starts[n_blocks] = i
            n_blocks += 1
        for L in range(w1 - w0):
            used[L] += widths[w0 + L]
        levels = max(levels, w1 - w0)
        nodes += shape_nodes[s]
    starts[n_blocks] = cell_seq.size
    return starts[:n_blocks + 1]


@njit(**_JIT)
def _block_order(cell_seq, block_starts, cell_shape, cell_copy_offset, class_offsets,
                 class_level, class_length, block_size):
    """Schedule positions of every copy, block by block, level by level, longest first.

    Returns ``pos_of_copy``, ``phase_offsets``, ``group_offsets``, ``block_threads``.
    """
    n_copies = cell_copy_offset[-1]
    pos_of_copy = np.empty(n_copies, np.int64)
    phase_offsets = np.empty(n_copies + 1, np.int64)
    n_blocks = block_starts.size - 1
    group_offsets = np.empty(n_blocks + 1, np.int64)
    block_threads = np.empty(n_blocks, np.int64)
    top = np.int64(1)
    for q in range(class_length.size):
        top = max(top, class_length[q] + 1)
    pos = 0
    n_phases = 0
    group_offsets[0] = 0
    for blk in range(n_blocks):
        m = 0
        for i in range(block_starts[blk], block_starts[blk + 1]):
            s = cell_shape[cell_seq[i]]
            m += class_offsets[s + 1] - class_offsets[s]
        keys = np.empty(m, np.int64)
        copies = np.empty(m, np.int64)
        m = 0
        for i in range(block_starts[blk], block_starts[blk + 1]):
            c = cell_seq[i]
            s = cell_shape[c]
            for q in range(class_offsets[s], class_offsets[s + 1]):
                keys[m] = class_level[q] * top + (top - 1 - class_length[q])
                copies[m] = cell_copy_offset[c] + q - class_offsets[s]
                m += 1
        order = np.argsort(keys, kind="mergesort")  # stable: cells and classes in order
        widest = 0
        level = -1
        start = pos
        for r in range(m):
            lv = keys[order[r]] // top
            if lv != level:
                phase_offsets[n_phases] = pos
                n_phases += 1
                widest = max(widest, pos - start)
                start = pos
                level = lv
            pos_of_copy[copies[order[r]]] = pos
            pos += 1
        widest = max(widest, pos - start)
        block_threads[blk] = min(widest, block_size)
        group_offsets[blk + 1] = n_phases
    phase_offsets[n_phases] = pos
    return pos_of_copy, phase_offsets[:n_phases + 1], group_offsets, block_threads


def pack_cells(program: BranchProgram, *, block_size: int = 128,
               max_shared_bytes: int | None = None, bytes_per_node: int = 16):
    """Sort the cells and pack them into blocks (steps 1-3 of the module docstring).

    Returns ``(cell_seq, block_starts)``: the cells in packing order (int64[n_cells]) and
    the blocks as ranges of it (int64[n_blocks + 1]).
    """
    sh = program.shapes
    n_levels = program.shape_levels()
    width_offsets = np.concatenate([[0], np.cumsum(n_levels)]).astype(np.int64)
    widths = np.bincount(width_offsets[:-1][program.class_shape] + program.level,
                         minlength=int(width_offsets[-1])).astype(np.int64)
    widest = (np.maximum.reduceat(widths, width_offsets[:-1]) if sh.n_shapes
              else np.zeros(0, np.int64))
    shape_nodes = np.diff(program.node_offsets)
    s = sh.shape_of_cell
    cells = np.arange(sh.n_cells)
    cell_seq = np.lexsort((cells, s, -shape_nodes[s], -widest[s], -n_levels[s]))
    max_nodes = (np.iinfo(np.int64).max if max_shared_bytes is None
                 else int(max_shared_bytes) // int(bytes_per_node))
    starts = _next_fit(cell_seq, s, width_offsets, widths, shape_nodes,
                       int(block_size), max_nodes)
    return cell_seq.astype(np.int64), starts


def fine_schedule(structure, *, block_size: int = 128, lanes: int = 32, reroot: bool = False,
                  split=None, min_length: int | None = None, barrier_cost: float = 4.0,
                  max_shared_bytes: int | None = None,
                  bytes_per_node: int = 16) -> BranchSchedule:
    """Plan Arbor's ``fine`` strategy: whole cells per CUDA block, one thread per branch.

    Parameters
    ----------
    structure : HinesStructure or MonoBatch
    block_size : int
        Most threads per block (128 or 256 are typical).
    lanes : int
        Branches per interleaved group (32, a warp).
    reroot, split, min_length, barrier_cost :
        Work balancing, as in :func:`~hinesbatch.tree.schedules.level_schedule` (Huber §6).
    max_shared_bytes : int, optional
        If the kernel keeps a block's values in shared memory: the most bytes per block.
        Cells are packed so that their nodes times ``bytes_per_node`` stay within it; a cell
        that alone exceeds it still gets a block of its own (the kernel must fall back to
        global memory there). Default: no limit.
    bytes_per_node : int
        Shared memory per node (16: ``d`` and ``rhs`` in float64).

    Returns
    -------
    BranchSchedule
        One group per block (``block_threads`` threads), phases = the block's levels.
    """
    block_size = check_positive("block_size", block_size)
    lanes = check_positive("lanes", lanes)
    if max_shared_bytes is not None:
        check_positive("max_shared_bytes", max_shared_bytes)
    shapes = cell_shapes(structure)
    program = branch_program(shapes, reroot=reroot, split=split, min_length=min_length,
                             barrier_cost=barrier_cost)
    cell_seq, starts = pack_cells(program, block_size=block_size,
                                  max_shared_bytes=max_shared_bytes,
                                  bytes_per_node=check_positive("bytes_per_node",
                                                                 bytes_per_node))
    pos_of_copy, phase_offsets, group_offsets, threads = _block_order(
        cell_seq, starts, shapes.shape_of_cell, copy_offsets(program), program.class_offsets,
        program.level, program.length, block_size)
    return assemble(
        program, structure, pos_of_copy, phase_offsets, group_offsets, kind="fine",
        lanes=lanes, visit=cell_seq, block_threads=threads, block_size=block_size,
        blocks=(cell_seq, starts),
        options=dict(reroot=bool(reroot), split=split, min_length=min_length,
                     barrier_cost=barrier_cost, max_shared_bytes=max_shared_bytes))
