"""The ``block-shared`` strategy: one CUDA block per block of cells, staged in shared memory."""
from __future__ import annotations

import numpy as np

from .. import options as check
from ..device import device_properties
from ..kernel_build import FACTOR_PER_CELL_AHEAD, FACTOR_VARIANTS, kernel
from ....tree.schedules.factors import FLAG_BITS, factor_pflags, factor_schedule
from .base import NULL, allow_smem, call_kernel, i32, i64
from .strided import Blocked

__all__ = ["BlockShared"]


class BlockShared(Blocked):
    """Block-Interleaved, one CUDA block per block of ``bs`` cells, shared memory per cell.

    ``keep="rhs"`` (default): the paper's Block-Shared (§3.1), the block's rhs staged in
    shared memory, d read and written in global memory (``hines_block_shared``).
    ``keep="factors"``: d and rhs are read once into registers and x written once; what stays
    in shared memory is what the forward sweep needs of the backward one, two values per node
    (``hines_factors.cu``). A shared structure follows a schedule of ``slots`` independent
    nodes per step (1, 2, 4 or 8; default 4), per-cell structures their descending node order.
    ``lanes`` (shared structure: 1, 2, 4 or 8, default 1) threads share a cell, each taking
    ``slots / lanes`` nodes of every step. Default ``bs``: the one that puts the most cells on
    an SM (a multiple of 4, so that a node's row fills whole 32-byte sectors, and of the cells
    per warp; ties to more blocks).

    Measured on the H200 (256000 cells of 313 nodes, fp64, native layout): keep="factors"
    2.22 ms against 8.58 ms for the paper's staging; two values per node of shared memory
    leave room for only ~44 cells per SM, one or two warps, each running its cell's chain of
    dependent steps with little to hide the latency behind. ``lanes=8`` (8 nodes per step,
    20 cells per block) makes ten warps of the same cells: 0.99 ms, the fastest native solve
    measured (``tiled`` 1.04 ms; benchmarks/results/h200/hines_tiled.md).
    """

    name = "block-shared"
    options = ("bs", "keep", "slots", "lanes")
    KEEP = ("rhs", "factors")
    DEFAULT_SLOTS = 4

    def __init__(self, part, dtype, device, options, budget):
        self.keep = check.one_of("keep", options.pop("keep", "rhs"), self.KEEP)
        slots, lanes = options.pop("slots", None), options.pop("lanes", None)
        for name, value in (("slots", slots), ("lanes", lanes)):
            if value is not None and self.keep != "factors":
                raise ValueError(f"{name} applies to keep='factors' only")
        what = "a shared structure" if part.mono else "per-cell structures"
        valid_lanes = sorted({kb for kb, _, _ in FACTOR_VARIANTS}) if part.mono else [1]
        lanes = check.optional(check.one_of, "lanes", lanes, choices=valid_lanes,
                               context=f" for {what}")
        self.lanes = lanes or 1
        valid = tuple(kb * v for kb, v, _ in FACTOR_VARIANTS if kb == self.lanes) \
            if part.mono else (1,)
        slots = check.optional(check.one_of, "slots", slots, choices=valid,
                               context=f" for {what} with lanes={self.lanes}")
        default = max(self.DEFAULT_SLOTS, self.lanes) if part.mono else 1
        self.slots = slots or default
        self.schedule = None
        if self.keep == "factors" and part.mono:
            self.schedule = factor_schedule(part.cell, self.slots)
        super().__init__(part, dtype, device, options, budget)

    def _per_cell_smem(self) -> int:
        if self.keep == "factors":  # m and y of every node and of a scratch slot per lane
            return 2 * (self.part.n + self.lanes) * self.dtype.itemsize
        return self.part.n * self.dtype.itemsize

    def _fixed_smem(self) -> int:
        """Shared memory of a block besides its cells: the staged schedule (8-byte entry and
        the (l, u) pair per slot of every step)."""
        if self.schedule is None:
            return 0
        return self.schedule.entries.shape[0] * (8 + 2 * self.dtype.itemsize)

    def _smem(self) -> int:
        return self._fixed_smem() + self._per_cell_smem() * self.bs

    def _block_size(self, options):
        props = device_properties(self.device)
        limit = props["smem_per_block_optin"] - self._fixed_smem()
        per_cell = self._per_cell_smem()
        if per_cell > limit:
            raise ValueError(f"strategy 'block-shared' (keep={self.keep!r}) needs {per_cell} "
                             f"bytes of shared memory per cell ({self.part.n} nodes) but a "
                             f"block may use {limit}; use 'interleaved'")
        if "bs" in options:
            bs = check.positive_int("bs", options.pop("bs"))
            threads = (256 if self.lanes == 1 else 512) if self.keep == "factors" else 1024
            if bs * self.lanes > threads:
                raise ValueError(f"bs={bs} needs {bs * self.lanes} threads per block; strategy "
                                 f"'block-shared' (keep={self.keep!r}) runs at most {threads}")
            if self.lanes > 1 and bs % (32 // self.lanes):
                raise ValueError(f"bs={bs} must be a multiple of {32 // self.lanes} with "
                                 f"lanes={self.lanes} (a warp holds whole cells)")
            if bs * per_cell > limit:
                raise ValueError(f"bs={bs} needs {bs * per_cell} bytes of shared memory for "
                                 f"cells of {self.part.n} nodes; a block may use {limit}")
            return bs
        if self.keep == "factors":  # the most cells per SM (latency-bound: see the docstring)
            return self._most_cells_per_sm(props["smem_per_sm"], limit, per_cell)
        bs = 32
        while bs > 1 and bs * per_cell > limit:
            bs //= 2
        return bs

    def _most_cells_per_sm(self, smem_per_sm: int, limit: int, per_cell: int) -> int:
        """Cells per block that put the most cells on an SM (1 KB reserved per block); bs a
        multiple of 4 (whole 32-byte sectors per node row) when 4 fit, and of the cells per warp
        with several lanes per cell; ties to the smaller bs (more blocks per SM, which do not
        wait for each other: 0.98 against 1.18 ms for 40 cells of 313 nodes per SM in two blocks
        or one, 8 lanes; equal times with one lane)."""
        step = max(4, 32 // self.lanes) if self.lanes > 1 else 4
        threads = 256 if self.lanes == 1 else 512 // self.lanes
        fits = [bs for bs in range(1, threads + 1) if bs * per_cell <= limit]
        aligned = [bs for bs in fits if bs % step == 0]
        if self.lanes > 1 and not aligned:
            raise ValueError(f"strategy 'block-shared' (keep='factors', lanes={self.lanes}) "
                             f"needs {step} cells of {self.part.n} nodes per block, "
                             f"{step * per_cell} bytes of shared memory; a block "
                             f"may use {limit}")
        best, best_cells = 1, 0
        for bs in aligned or fits:
            blocks = smem_per_sm // (bs * per_cell + self._fixed_smem() + 1024)
            if blocks * bs > best_cells:
                best, best_cells = bs, blocks * bs
        return best

    def structure_bytes(self):
        if self.schedule is not None:
            return self._fixed_smem()  # the same arrays in device memory
        return super().structure_bytes()  # per-cell factors: pflags instead of parent, same size

    def _host_arrays(self):
        if self.keep != "factors":
            return super()._host_arrays()
        p = self.part
        if p.mono:
            s = self.schedule
            packed = np.stack([s.entries[:, 0], (s.entries[:, 1] << FLAG_BITS) | s.entries[:, 2]],
                              axis=1)
            return {"entries": np.ascontiguousarray(packed, dtype=np.int32),
                    "lu": np.ascontiguousarray(s.lu.astype(self.dtype))}
        arrays = super()._host_arrays()
        arrays["pflags"] = self._pack(factor_pflags(p.parent, p.offsets), -1)
        del arrays["parent"]
        return arrays

    def _launch(self, d, rhs, start, count, pivots, stream):
        p = self.part
        if self.keep == "factors":
            self._launch_factors(d, rhs, start, count, pivots, stream)
            return
        fn = kernel(self.device, "hines_strided.cu",
                    "hines_block_shared<{T}, %s>" % ("true" if p.mono else "false"), self.dtype)
        smem = p.n * self.bs * self.dtype.itemsize
        allow_smem(fn, smem)
        parent, u, l, sizes = self._structure_args(start)
        call_kernel(fn, (-(-count // self.bs),), (self.bs,),
              (d, rhs, parent, u, l, sizes, i32(count), i32(p.n), i64(p.cell_start + start),
               pivots[0], pivots[1][start:]), stream, smem)

    def _launch_factors(self, d, rhs, start, count, pivots, stream):
        p, dev = self.part, self._arrays()
        if count == 0:
            return
        if p.mono:
            v = self.slots // self.lanes
            ahead = next(a for kb, vv, a in FACTOR_VARIANTS if (kb, vv) == (self.lanes, v))
            fn = kernel(self.device, "hines_factors.cu",
                        f"hines_factors<{{T}}, true, {v}, {ahead}, {self.lanes}>", self.dtype)
            args = (dev["entries"], dev["lu"], NULL, NULL, NULL, NULL, i32(self.schedule.n_steps))
        else:
            fn = kernel(self.device, "hines_factors.cu",
                        f"hines_factors<{{T}}, false, 1, {FACTOR_PER_CELL_AHEAD}, 1>", self.dtype)
            off = (start // self.bs) * p.n * self.bs
            args = (NULL, NULL, dev["pflags"][off:], dev["u"][off:], dev["l"][off:],
                    dev["sizes"][start:], i32(p.n))
        smem = self._smem()
        allow_smem(fn, smem, carveout=True)
        call_kernel(fn, (-(-count // self.bs),), (self.bs * self.lanes,),
              (d, rhs, *args, i32(count), i32(p.n), i32(self.bs), i64(p.cell_start + start),
               pivots[0], pivots[1][start:]), stream, smem)

    def describe(self):
        text = super().describe()
        if self.keep != "factors":
            return text
        lanes = f", {self.lanes} lanes per cell" if self.lanes > 1 else ""
        steps = (f"{lanes}, {self.slots} nodes per step: {self.schedule.n_steps} steps for "
                 f"{self.part.n} nodes" if self.schedule is not None else "")
        return f"{text[:-1]}, factors kept in shared memory{steps}, {self._smem()} B per block)"
