"""The multi-morphology GPU strategies ``levels``, ``fine`` and ``dhs`` (kernels/hines_multi.cu).

Each one plans its schedule once, in its constructor (:mod:`hinesbatch.tree.schedules`; the
format is ``FORMAT.md`` there), keeps the schedule's arrays on the device, and solves values
held in the schedule's *slot* order:

* ``solve_canonical``: canonical values are gathered into two slot-ordered scratch buffers
  (``multi_gather``), solved there, and the solution is scattered back over ``rhs``
  (``multi_scatter``); ``d`` is left as it was;
* ``solve_native``: values already in slot order (:meth:`to_native`), solved in place, with
  the pivots left in ``d``.

=========  ============================================  ======================================
strategy   work of one thread                            synchronisation
=========  ============================================  ======================================
``levels`` one branch; a level of the whole batch at once  one launch per level and sweep
``fine``   one branch; whole cells per CUDA block          ``__syncthreads()`` between levels
``dhs``    one node per step; ``k`` threads per cell       ``__syncwarp(group)`` between steps
=========  ============================================  ======================================

Every value has one writer (children are pulled by the thread owning their parent), so no
atomics are used and two solves of the same values give bitwise the same result. After every
solve ``multi_failure`` turns a zero or non-finite pivot into the backend's failure record
(lowest failing cell; its failing node eliminated first), read by the backend's pivot check.

The launches of a solve are built as plain ``(template, grid, block, args)`` tuples by
:meth:`_MultiStrategy.canonical_launches` / :meth:`_MultiStrategy.solve_launches`, with no
CuPy in them, so that ``tests/unit/test_multi_kernels_host.py`` runs the very same sequence
through a CPU emulator of the CUDA sources.
"""
from __future__ import annotations

import numpy as np

from .. import options as check
from ..device import cupy_module, device_properties
from ..kernel_build import kernel
from .base import NULL, Strategy, call_kernel, i32, i64

__all__ = ["SOURCE", "Levels", "Fine", "DHS", "working_rank"]

SOURCE = "hines_multi.cu"  # its templates: kernel_build.KERNELS

FIND_THREADS = 256  # HBM_FIND_THREADS of hines_multi.cu
MAX_THREADS = 1024  # HBM_MAX_THREADS
MOVE_THREADS = 256  # block of the gather and scatter
#: Threads an SM keeps in flight (sm_80 / sm_90), for DHS's choice of threads per cell.
THREADS_PER_SM = 2048

Launch = tuple  # (template, grid, block, args)


def _block(options: dict, name: str, default: int) -> int:
    """A block size: a multiple of 32 (whole warps keep the interleaved groups aligned)."""
    return check.positive_int(name, options.pop(name, default), multiple_of=32,
                              at_most=MAX_THREADS)


# -- the failure search's ranks ------------------------------------------------------------------
def working_rank(structure) -> np.ndarray:
    """Index of every node in its cell's re-rooted tree (the tree the schedules eliminate
    with ``reroot=True``), int32: per node of the shared cell for a :class:`MonoBatch`, per
    value otherwise. The failure search reports the failing node of highest rank (eliminated
    first, so failing on its own rather than from a failed child)."""
    from ....tree.schedules import cell_shapes, working_trees
    from ....tree.structure import MonoBatch

    shapes = cell_shapes(structure)
    work = working_trees(shapes, reroot=True)
    off = shapes.representatives.cell_offsets
    n_rep = int(off[-1])
    inverse = np.empty(n_rep, np.int64)
    inverse[work.order] = np.arange(n_rep)
    rank = inverse - np.repeat(off[:-1], np.diff(off))  # per representative node
    if isinstance(structure, MonoBatch):
        return rank.astype(np.int32)
    sizes = structure.cell_sizes
    start = np.repeat(off[:-1][shapes.shape_of_cell], sizes)
    local = np.arange(structure.n_nodes) - np.repeat(structure.cell_offsets[:-1], sizes)
    return rank[start + local].astype(np.int32)


# -- the common strategy ---------------------------------------------------------------------
class _MultiStrategy(Strategy):
    """A schedule planned once; values in slot order; canonical path through scratch buffers.

    Subclasses set ``name``, ``options`` and implement ``_plan``, ``_schedule_arrays``,
    ``_schedule_bytes`` and ``_kernel_launches``.
    """

    def __init__(self, part, dtype, device, options, budget):
        super().__init__(part, dtype, device, options, budget)
        self.reroot = check.flag("reroot", options.pop("reroot", False))
        structure = part.structure
        self.schedule = self._plan(structure, options)
        self.rank = working_rank(structure) if self.reroot else None
        self._inner = None  # (flag buffer, the solve's launches on the scratch buffers)
        self._functions: dict = {}

    def _plan(self, structure, options):
        raise NotImplementedError

    # -- memory ------------------------------------------------------------------------------
    @property
    def n_slots(self) -> int:
        return self.schedule.n_slots

    def structure_bytes(self) -> int:
        s, p = self.schedule, self.part
        item = self.dtype.itemsize
        total = self.n_slots * item * (1 if s.l is None else 2) + 4 * s.node_slot.size
        if not p.mono:
            total += 8 * (p.n_cells + 1)
        if self.rank is not None:
            total += 4 * self.rank.size
        return total + self._schedule_bytes() + 4

    def scratch_bytes(self) -> int:
        return 2 * self.n_slots * self.dtype.itemsize

    def _schedule_bytes(self) -> int:
        raise NotImplementedError

    def _host_arrays(self) -> dict:
        s, p = self.schedule, self.part
        u = s.u.astype(self.dtype)
        arrays = {"u": u, "l": u if s.l is None else s.l.astype(self.dtype),
                  "node_slot": s.node_slot, "failed": np.zeros(1, np.int32)}
        if not p.mono:
            arrays["offsets"] = p.offsets
        if self.rank is not None:
            arrays["rank"] = self.rank
        arrays.update(self._schedule_arrays())
        return arrays

    def _schedule_arrays(self) -> dict:
        raise NotImplementedError

    # -- launch sequences (no CuPy: the host tests run them through an emulator) ---------------
    def solve_launches(self, dev: dict, d, rhs, pivots) -> list[Launch]:
        """The launches that solve slot-ordered ``d``, ``rhs`` in place, then the failure search."""
        return self._kernel_launches(dev, d, rhs) + [self._failure_launch(dev, d, pivots)]

    def canonical_launches(self, dev: dict, d, rhs, pivots, scratch, inner=None) -> list[Launch]:
        """Gather canonical ``d``, ``rhs`` into ``scratch`` (two slot arrays), solve there
        (``inner``: the solve's launches on ``scratch`` if already built), scatter the
        solution over ``rhs``. ``d`` is not written."""
        sd, sr = scratch
        if inner is None:
            inner = self.solve_launches(dev, sd, sr, pivots)
        return [self._move("multi_gather<{T}>", (d, rhs, sd, sr), dev), *inner,
                self._move("multi_scatter<{T}>", (sr, rhs), dev)]

    def _move(self, template: str, arrays: tuple, dev: dict) -> Launch:
        n = self.part.n_nodes
        return (template, (max(1, -(-n // MOVE_THREADS)),), (MOVE_THREADS,),
                (*arrays, dev["node_slot"], i64(n)))

    def _kernel_launches(self, dev: dict, d, rhs) -> list[Launch]:
        raise NotImplementedError

    def _failure_launch(self, dev: dict, d, pivots) -> Launch:
        p = self.part
        return ("multi_failure<{T}>", (1,), (FIND_THREADS,),
                (d, dev["node_slot"], NULL if p.mono else dev["offsets"],
                 dev.get("rank", NULL), i32(p.n), i32(p.n_cells), i64(p.n_nodes),
                 i64(p.cell_start), dev["failed"], pivots[0], pivots[1]))

    # -- device entry points -------------------------------------------------------------------
    def _run(self, launches, stream) -> None:
        for template, grid, block, args in launches:
            call_kernel(self._function(template, block[0]), grid, block, args, stream)

    def _function(self, template: str, threads: int):
        """The compiled kernel, checked once for ``threads`` per block."""
        fn = self._functions.get(template)
        if fn is None:
            fn = kernel(self.device, SOURCE, template, self.dtype)
            if threads > fn.max_threads_per_block:
                raise ValueError(f"strategy {self.name!r}: {template.format(T='T')} runs at most "
                                 f"{fn.max_threads_per_block} threads per block on device "
                                 f"{self.device}, {threads} asked; use a smaller block")
            self._functions[template] = fn
        return fn

    def native_shape(self) -> tuple[int, ...]:
        return (self.n_slots,)

    def solve_native(self, d, rhs, pivots, stream):
        self._run(self.solve_launches(self._arrays(), d, rhs, pivots), stream)

    def solve_canonical(self, d, rhs, pivots, stream):
        cupy = cupy_module()
        dev = self._arrays()
        with cupy.cuda.Device(self.device):
            if self._scratch is None:
                self._scratch = (cupy.empty(self.n_slots, self.dtype),
                                 cupy.empty(self.n_slots, self.dtype))
            if self._inner is None or self._inner[0] is not pivots[0]:  # a new flag buffer
                self._inner = (pivots[0], self.solve_launches(dev, *self._scratch, pivots))
            self._run(self.canonical_launches(dev, d, rhs, pivots, self._scratch,
                                              inner=self._inner[1]), stream)

    def to_native(self, a, stream):
        cupy = cupy_module()
        with cupy.cuda.Device(self.device):
            out = cupy.zeros(self.n_slots, dtype=a.dtype)  # padding is never read
            self._run([self._move("multi_gather<{T}>", (a, a, out, NULL), self._arrays())],
                      stream)
        return out

    def from_native(self, a, stream):
        cupy = cupy_module()
        with cupy.cuda.Device(self.device):
            out = cupy.empty(self.part.values_shape, dtype=a.dtype)
            self._run([self._move("multi_scatter<{T}>", (a, out), self._arrays())], stream)
        return out

    def describe(self) -> str:
        return f"{self.name} ({self.schedule.describe()})"


# -- levels ----------------------------------------------------------------------------------
def _branch_arrays(s) -> dict:
    """The branch records {base, stride, length, parent slot} (int32[n, 4]) and child lists."""
    branch = np.ascontiguousarray(np.stack([s.base, s.stride, s.length, s.parent_slot], axis=1),
                                  dtype=np.int32)
    return {"branch": branch, "child_offsets": s.child_offsets, "children": s.children}


def _branch_bytes(s) -> int:
    return 16 * s.n_branches + 4 * (s.child_offsets.size + s.children.size)


class Levels(_MultiStrategy):
    """``levels`` (Valero-Lara et al. 2018, §4): the branches of one level of the whole batch
    solved together as tridiagonal chains, one thread per branch and one launch per level and
    sweep (deepest level first backward, root level first forward; the root level's two
    sweeps share one launch).

    Options: ``reroot``, ``split`` (see :func:`~hinesbatch.tree.schedules.level_schedule`),
    ``threads`` (threads per block, a multiple of 32; default 128).
    """

    name = "levels"
    options = ("reroot", "split", "threads")

    def _plan(self, structure, options):
        from ....tree.schedules import level_schedule

        self.threads = _block(options, "threads", 128)
        return level_schedule(structure, reroot=self.reroot, split=options.pop("split", None))

    def _schedule_arrays(self):
        return _branch_arrays(self.schedule)

    def _schedule_bytes(self):
        return _branch_bytes(self.schedule)

    def _kernel_launches(self, dev, d, rhs):
        s = self.schedule
        po = s.phase_offsets.tolist()
        last = len(po) - 2

        def launch(mode: int, p: int) -> Launch:
            count = po[p + 1] - po[p]
            return (f"multi_levels<{{T}}, {mode}>", (-(-count // self.threads),), (self.threads,),
                    (d, rhs, dev["u"], dev["l"], dev["branch"], dev["child_offsets"],
                     dev["children"], i32(po[p]), i32(po[p + 1]), dev["failed"]))

        if last < 0:
            return []
        return ([launch(0, p) for p in range(last, 0, -1)] + [launch(2, 0)]
                + [launch(1, p) for p in range(1, last + 1)])

    def describe(self):
        return (f"levels ({self.schedule.n_phases} levels, {max(0, 2 * self.schedule.n_phases - 1)} "
                f"launches per solve, {self.threads} threads per block; "
                f"{self.schedule.describe()})")


# -- fine ------------------------------------------------------------------------------------
class Fine(_MultiStrategy):
    """``fine`` (Huber 2018, Arbor's fine solver): whole cells packed into CUDA blocks, one
    thread per branch, the block's levels separated by ``__syncthreads()``; a level wider
    than the block runs in rounds (no limit on branches per level).

    Options: ``reroot``, ``split`` (see :func:`~hinesbatch.tree.schedules.fine_schedule`),
    ``block_size`` (most threads per block, a multiple of 32; default 128).
    """

    name = "fine"
    options = ("reroot", "split", "block_size")

    def _plan(self, structure, options):
        from ....tree.schedules import fine_schedule

        self.block_size = _block(options, "block_size", 128)
        s = fine_schedule(structure, block_size=self.block_size, reroot=self.reroot,
                          split=options.pop("split", None))
        widest = int(s.block_threads.max(initial=1))
        self.threads = -(-widest // 32) * 32  # whole warps: the groups of 32 lanes align
        return s

    def _schedule_arrays(self):
        s = self.schedule
        arrays = _branch_arrays(s)
        arrays.update(group_offsets=s.group_offsets, phase_offsets=s.phase_offsets)
        return arrays

    def _schedule_bytes(self):
        s = self.schedule
        return _branch_bytes(s) + 4 * (s.group_offsets.size + s.phase_offsets.size)

    def _kernel_launches(self, dev, d, rhs):
        s = self.schedule
        if s.n_groups == 0:
            return []
        return [("multi_fine<{T}>", (s.n_groups,), (self.threads,),
                 (d, rhs, dev["u"], dev["l"], dev["branch"], dev["child_offsets"],
                  dev["children"], dev["group_offsets"], dev["phase_offsets"], dev["failed"]))]

    def describe(self):
        return f"fine ({self.threads} threads per block; {self.schedule.describe()})"


# -- dhs -------------------------------------------------------------------------------------
def _resident_threads(device: int) -> int:
    """Threads the device keeps in flight (its SMs x 2048)."""
    return device_properties(device)["sm_count"] * THREADS_PER_SM


class DHS(_MultiStrategy):
    """``dhs`` (Zhang et al. 2023, DeepDendrite): ``k`` threads per cell (a group of adjacent
    lanes of one warp), each eliminating one node per step, deepest ready nodes first, with
    ``__syncwarp(group)`` between steps; one launch per distinct ``k``.

    Options: ``reroot``; ``threads_per_cell`` (1, 2, 4, 8, 16 or 32; default: chosen per cell
    shape for this batch size on this device, :func:`~hinesbatch.tree.schedules.choose_threads`);
    ``threads`` (threads per block, a multiple of 32; default 128).
    """

    name = "dhs"
    options = ("reroot", "threads_per_cell", "threads")

    def _plan(self, structure, options):
        from ....tree.schedules import dhs_schedule

        self.threads = _block(options, "threads", 128)
        k = check.optional(check.one_of, "threads_per_cell",
                           options.pop("threads_per_cell", None), choices=(1, 2, 4, 8, 16, 32))
        resident = None if k is not None else _resident_threads(self.device)
        return dhs_schedule(structure, threads=None if k is None else int(k),
                            reroot=self.reroot, resident_threads=resident)

    def _schedule_arrays(self):
        s = self.schedule
        cell = np.zeros((s.cells.size, 4), np.int32)
        cell[:, 0] = s.cell_base
        cell[:, 1] = s.shape_slot_offsets[s.cell_shape]
        cell[:, 2] = s.n_steps[s.cell_shape]
        shape_slot = np.ascontiguousarray(np.stack([s.parent_slot, s.slot_node_local], axis=1),
                                          dtype=np.int32)
        return {"cell": cell, "shape_slot": shape_slot, "child_offsets": s.child_offsets,
                "children": s.children}

    def _schedule_bytes(self):
        s = self.schedule
        return (16 * s.cells.size + 8 * s.slot_node_local.size
                + 4 * (s.child_offsets.size + s.children.size))

    def _kernel_launches(self, dev, d, rhs):
        s = self.schedule
        out = []
        for i, k in enumerate(s.thread_values.tolist()):
            c0, c1 = int(s.thread_offsets[i]), int(s.thread_offsets[i + 1])
            total = (c1 - c0) * k
            out.append(("multi_dhs<{T}>", (-(-total // self.threads),), (self.threads,),
                        (d, rhs, dev["u"], dev["l"], dev["shape_slot"], dev["child_offsets"],
                         dev["children"], dev["cell"], i32(c0), i32(c1),
                         i32(k.bit_length() - 1), dev["failed"])))
        return out

    def describe(self):
        return f"dhs ({self.threads} threads per block; {self.schedule.describe()})"

