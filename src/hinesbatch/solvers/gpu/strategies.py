"""The GPU strategies: how one device solves its part of a batch.

Every strategy solves one cell per thread and works on a :class:`~.parts.Part`. It has a
*native layout* (where it wants the values) and two entry points:

* ``solve_canonical(d, rhs, pivots, stream)``: values in the canonical order (a view of the
  caller's arrays); layouts other than the canonical one go through a device scratch buffer
  in chunks of cells (transpose in, solve, transpose out), sized by the memory budget;
* ``solve_native(d, rhs, pivots, stream)``: values already in the native layout (no transposes).

``pivots`` is ``(flag, values)``: the part's failure flag (uint64[1]) and one pivot slot per
cell (see kernels/hines_common.cuh).

=====================  ================================  ==================================
strategy               native layout                     kernel
=====================  ================================  ==================================
``flat``               canonical                         ``hines_strided`` (paper's Flat)
``interleaved``        ``(1, n, n_cells)`` [#]_          ``hines_strided`` (Full-Interleaved)
``block-interleaved``  ``(ceil(n_cells/bs), n, bs)``     ``hines_strided`` (Block-Interleaved)
``block-shared``       ``(ceil(n_cells/bs), n, bs)``     ``hines_block_shared`` (paper §3.1),
                                                         ``hines_factors`` (keep="factors")
``tiled``              slot order [#]_                   ``hines_tiled_*`` (staged in smem)
=====================  ================================  ==================================

.. [#] With chunks (``max_bytes``), Full-Interleaved within each chunk: ``bs`` = chunk cells.
.. [#] Shared structures: ``(n_cells, pitch)``, each cell's values in its schedule's slots,
   ``pitch`` = n rounded up to 16 bytes (:meth:`SharedTiles.pitch`), copied in and out of
   shared memory by bulk copies (``hines_tiled_slots``); canonical for per-cell structures
   and for widths that kernel is not built for (:data:`.compile.SLOT_VARIANTS`).

The strategies are looked up by name in :data:`STRATEGIES`; nothing switches on names.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .compile import (FACTOR_PER_CELL_AHEAD, FACTOR_VARIANTS, SLOT_VARIANTS, TILED_VARIANTS,
                      kernel)
from .device import blocks_per_sm, cupy_module, device_properties, resident_blocks
from .parts import Part
from .schedule import (FLAG_BITS, Schedule, factor_pflags, factor_schedule, kernel_arrays, lu_len,
                       schedule_steps, tiled_schedule)

__all__ = ["STRATEGIES", "Strategy"]

NULL = np.uint64(0)  # a null pointer argument
_TRANSPOSE_BLOCK = (32, 8, 1)


def _i32(x) -> np.int32:
    return np.int32(int(x))


def _i64(x) -> np.int64:
    return np.int64(int(x))


def _positive_int(options: dict, name: str, default: int) -> int:
    value = options.pop(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return int(value)


class Strategy:
    """Base class: device uploads, transposes and the chunked canonical path.

    Subclasses set ``name``, ``native_is_canonical`` and implement ``_bs``, ``_launch``.
    """

    name = ""
    native_is_canonical = False
    options: tuple[str, ...] = ()

    def __init__(self, part: Part, dtype, device: int, options: dict, budget: int):
        self.part = part
        self.dtype = np.dtype(dtype)
        self.device = device
        self._dev: dict | None = None  # device arrays, uploaded on first use
        self._scratch = None

    # -- memory ------------------------------------------------------------------------------
    def structure_bytes(self) -> int:
        """Device bytes of the structure arrays this strategy keeps resident."""
        return 0

    def scratch_bytes(self) -> int:
        """Device bytes of the layout scratch of the canonical path (0: works in place)."""
        return 0

    def _arrays(self) -> dict:
        if self._dev is None:
            cupy = cupy_module()
            uploaded: dict[int, object] = {}  # one device copy per host array (l is u: same)
            with cupy.cuda.Device(self.device):
                self._dev = {}
                for key, value in self._host_arrays().items():
                    if id(value) not in uploaded:
                        uploaded[id(value)] = cupy.asarray(value)
                    self._dev[key] = uploaded[id(value)]
        return self._dev

    def _host_arrays(self) -> dict:
        return {}

    def _shared_cell_arrays(self) -> dict:
        """A shared structure's one cell as the kernels read it: parent (int32), u, l."""
        c = self.part.cell
        return {"parent": c.parent.astype(np.int32), "u": c.u.astype(self.dtype),
                "l": c.lower.astype(self.dtype)}

    # -- layouts -----------------------------------------------------------------------------
    def native_shape(self) -> tuple[int, ...]:
        return self.part.values_shape

    def to_native(self, a, stream):
        """A new array in the native layout from this part's canonical values ``a``."""
        return a.copy()

    def from_native(self, a, stream):
        """A new canonical array of this part from native values ``a``."""
        return a.copy()

    def describe(self) -> str:
        return self.name


class _Blocked(Strategy):
    """Layouts ``((c // bs) * n + i) * bs + c % bs`` with a chunked canonical path."""

    def __init__(self, part, dtype, device, options, budget):
        super().__init__(part, dtype, device, options, budget)
        self.bs = self._block_size(options)
        item = self.dtype.itemsize
        per_cell = 2 * part.n * item
        free = budget - self.structure_bytes()
        fit = max(0, free) // max(1, per_cell)
        if fit >= part.n_cells:
            self.chunk = max(1, part.n_cells)
        else:
            self.chunk = self._chunk_from_fit(fit, budget)
        self.bs = self._bs_for_chunk(self.bs, self.chunk)
        while self.structure_bytes() + self.scratch_bytes() > budget:  # padding of the last block
            smaller = self._shrunk(self.chunk)
            if smaller < 1:
                break  # the backend reports that max_bytes is too small
            self.chunk = smaller
            self.bs = self._bs_for_chunk(self.bs, self.chunk)

    def _shrunk(self, chunk: int) -> int:
        return chunk - self.bs

    def _block_size(self, options) -> int:
        raise NotImplementedError

    def _bs_for_chunk(self, bs: int, chunk: int) -> int:
        return bs

    def _chunk_from_fit(self, fit: int, budget: int) -> int:
        chunk = (fit // self.bs) * self.bs
        if chunk < 1:
            need = 2 * self.part.n * self.dtype.itemsize * self.bs + self.structure_bytes()
            raise ValueError(f"max_bytes={budget} is too small for strategy {self.name!r}: one block "
                             f"of {self.bs} cells of {self.part.n} nodes needs {need} bytes")
        return chunk

    @property
    def n_blocks(self) -> int:
        return -(-self.part.n_cells // self.bs)

    def native_shape(self):
        return (self.n_blocks, self.part.n, self.bs)

    def structure_bytes(self):
        p = self.part
        if p.mono:
            return p.n * (4 + 2 * self.dtype.itemsize)
        slots = self.n_blocks * self.bs * p.n
        per = 4 + self.dtype.itemsize * (1 if p.symmetric else 2)
        return slots * per + 4 * p.n_cells

    def scratch_bytes(self):
        return 2 * (-(-self.chunk // self.bs) * self.bs) * self.part.n * self.dtype.itemsize

    def _pack(self, values: np.ndarray, fill) -> np.ndarray:
        """Per-cell structure values into the native layout (host side, once)."""
        p = self.part
        out = np.full(self.n_blocks * p.n * self.bs, fill, dtype=values.dtype)
        cell = np.repeat(np.arange(p.n_cells), p.sizes)
        node = np.arange(p.n_nodes) - np.repeat(p.offsets[:-1], p.sizes)
        out[((cell // self.bs) * p.n + node) * self.bs + cell % self.bs] = values
        return out

    def _host_arrays(self):
        p = self.part
        if p.mono:
            return self._shared_cell_arrays()
        parent = self._pack(p.parent, 0)  # padding rows are never read (sizes)
        arrays = {"parent": parent, "u": self._pack(p.u.astype(self.dtype), 0),
                  "sizes": p.sizes.astype(np.int32)}
        arrays["l"] = arrays["u"] if p.symmetric else self._pack(p.l.astype(self.dtype), 0)
        return arrays

    # -- transposes ----------------------------------------------------------------------------
    def _transpose_in(self, src0, src1, dst0, dst1, cell_start, n_cells, stream):
        p, dev = self.part, self._arrays()
        fn = kernel(self.device, "layout.cu", "canonical_to_layout<{T}>", self.dtype)
        grid = (-(-n_cells // 32), -(-p.n // 32), 1 if src1 is None else 2)
        _call(fn, grid, _TRANSPOSE_BLOCK,
           (src0, src0 if src1 is None else src1, dst0, dst0 if dst1 is None else dst1,
            NULL if p.mono else self._offsets(), NULL if p.mono else dev["sizes"],
            _i64(cell_start), _i32(n_cells), _i32(p.n), _i32(self.bs)), stream)

    def _transpose_out(self, src, dst, cell_start, n_cells, stream):
        p, dev = self.part, self._arrays()
        fn = kernel(self.device, "layout.cu", "layout_to_canonical<{T}>", self.dtype)
        grid = (-(-n_cells // 32), -(-p.n // 32), 1)
        _call(fn, grid, _TRANSPOSE_BLOCK,
           (src, dst, NULL if p.mono else self._offsets(), NULL if p.mono else dev["sizes"],
            _i64(cell_start), _i32(n_cells), _i32(p.n), _i32(self.bs)), stream)

    def _offsets(self):
        dev = self._arrays()
        if "offsets" not in dev:
            cupy = cupy_module()
            with cupy.cuda.Device(self.device):
                dev["offsets"] = cupy.asarray(self.part.offsets)
        return dev["offsets"]

    def to_native(self, a, stream):
        cupy = cupy_module()
        with cupy.cuda.Device(self.device):
            out = cupy.zeros(self.native_shape(), dtype=a.dtype)
            self._transpose_in(a, None, out, None, 0, self.part.n_cells, stream)
        return out

    def from_native(self, a, stream):
        cupy = cupy_module()
        with cupy.cuda.Device(self.device):
            out = cupy.empty(self.part.values_shape, dtype=a.dtype)
            self._transpose_out(a, out, 0, self.part.n_cells, stream)
        return out

    # -- solves --------------------------------------------------------------------------------
    def solve_native(self, d, rhs, pivots, stream):
        self._launch(d, rhs, 0, self.part.n_cells, pivots, stream)

    def solve_canonical(self, d, rhs, pivots, stream):
        cupy = cupy_module()
        p = self.part
        with cupy.cuda.Device(self.device):
            if self._scratch is None:
                size = -(-self.chunk // self.bs) * p.n * self.bs
                self._scratch = (cupy.empty(size, self.dtype), cupy.empty(size, self.dtype))
            sd, sr = self._scratch
            for start in range(0, p.n_cells, self.chunk):
                count = min(self.chunk, p.n_cells - start)
                self._transpose_in(d, rhs, sd, sr, start, count, stream)
                self._launch(sd, sr, start, count, pivots, stream)
                self._transpose_out(sr, rhs, start, count, stream)

    def _launch(self, d, rhs, start, count, pivots, stream):
        raise NotImplementedError

    def _structure_args(self, start: int):
        """Structure pointers for a launch whose first cell is ``start`` (a multiple of bs)."""
        dev, p = self._arrays(), self.part
        if p.mono:
            return dev["parent"], dev["u"], dev["l"], NULL
        off = (start // self.bs) * p.n * self.bs
        return dev["parent"][off:], dev["u"][off:], dev["l"][off:], dev["sizes"][start:]

    def describe(self):
        chunks = -(-self.part.n_cells // self.chunk)
        extra = f", {chunks} chunks of {self.chunk} cells" if chunks > 1 else ""
        return f"{self.name} (bs={self.bs}{extra})"


class Interleaved(_Blocked):
    """Full-Interleaved: node-major over all cells of a chunk (Valero-Lara et al. 2017)."""

    name = "interleaved"
    options = ("threads",)

    def __init__(self, part, dtype, device, options, budget):
        self.threads = _positive_int(options, "threads", 128)
        super().__init__(part, dtype, device, options, budget)

    def _block_size(self, options):
        return max(1, self.part.n_cells)

    def _chunk_from_fit(self, fit, budget):
        if fit < 1:
            raise ValueError(f"max_bytes={budget} is too small for strategy 'interleaved': "
                             f"one cell of {self.part.n} nodes needs "
                             f"{2 * self.part.n * self.dtype.itemsize} bytes of scratch")
        return int(fit)

    def _bs_for_chunk(self, bs, chunk):
        return max(1, chunk)

    def _shrunk(self, chunk):
        return chunk - max(1, chunk // 16)

    def _launch(self, d, rhs, start, count, pivots, stream):
        p = self.part
        fn = kernel(self.device, "hines_strided.cu",
                    "hines_strided<{T}, %s>" % ("true" if p.mono else "false"), self.dtype)
        parent, u, l, sizes = self._structure_args(start)
        _call(fn, (-(-count // self.threads),), (self.threads,),
              (d, rhs, parent, u, l, NULL, sizes, _i32(count), _i32(p.n), _i32(self.bs),
               _i64(p.cell_start + start), pivots[0], pivots[1][start:]), stream)


class BlockInterleaved(Interleaved):
    """Block-Interleaved with ``bs`` cells per block (the paper sweeps 32..512)."""

    name = "block-interleaved"
    options = ("threads", "bs")

    def _block_size(self, options):
        return _positive_int(options, "bs", 128)

    def _chunk_from_fit(self, fit, budget):
        return _Blocked._chunk_from_fit(self, fit, budget)

    def _bs_for_chunk(self, bs, chunk):
        return bs

    def _shrunk(self, chunk):
        return chunk - self.bs


class BlockShared(_Blocked):
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
        self.keep = options.pop("keep", "rhs")
        if self.keep not in self.KEEP:
            raise ValueError(f"keep must be one of {', '.join(map(repr, self.KEEP))}, "
                             f"got {self.keep!r}")
        slots, lanes = options.pop("slots", None), options.pop("lanes", None)
        for name, value in (("slots", slots), ("lanes", lanes)):
            if value is not None and self.keep != "factors":
                raise ValueError(f"{name} applies to keep='factors' only")
        what = "a shared structure" if part.mono else "per-cell structures"
        valid_lanes = sorted({kb for kb, _, _ in FACTOR_VARIANTS}) if part.mono else [1]
        if lanes is not None and (isinstance(lanes, bool) or lanes not in valid_lanes):
            raise ValueError(f"lanes must be one of {tuple(valid_lanes)} for {what}, "
                             f"got {lanes!r}")
        self.lanes = int(lanes or 1)
        valid = tuple(kb * v for kb, v, _ in FACTOR_VARIANTS if kb == self.lanes) \
            if part.mono else (1,)
        if slots is not None and (isinstance(slots, bool) or slots not in valid):
            raise ValueError(f"slots must be one of {valid} for {what} with lanes={self.lanes}, "
                             f"got {slots!r}")
        default = max(self.DEFAULT_SLOTS, self.lanes) if part.mono else 1
        self.slots = int(slots or default)
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
            bs = _positive_int(options, "bs", 32)
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
        _allow_smem(fn, smem)
        parent, u, l, sizes = self._structure_args(start)
        _call(fn, (-(-count // self.bs),), (self.bs,),
              (d, rhs, parent, u, l, sizes, _i32(count), _i32(p.n), _i64(p.cell_start + start),
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
            args = (dev["entries"], dev["lu"], NULL, NULL, NULL, NULL, _i32(self.schedule.n_steps))
        else:
            fn = kernel(self.device, "hines_factors.cu",
                        f"hines_factors<{{T}}, false, 1, {FACTOR_PER_CELL_AHEAD}, 1>", self.dtype)
            off = (start // self.bs) * p.n * self.bs
            args = (NULL, NULL, dev["pflags"][off:], dev["u"][off:], dev["l"][off:],
                    dev["sizes"][start:], _i32(p.n))
        smem = self._smem()
        _allow_smem(fn, smem, carveout=True)
        _call(fn, (-(-count // self.bs),), (self.bs * self.lanes,),
              (d, rhs, *args, _i32(count), _i32(p.n), _i32(self.bs), _i64(p.cell_start + start),
               pivots[0], pivots[1][start:]), stream, smem)

    def describe(self):
        text = super().describe()
        if self.keep != "factors":
            return text
        lanes = f", {self.lanes} lanes per cell" if self.lanes > 1 else ""
        steps = (f"{lanes}, {self.slots} nodes per step: {self.schedule.n_steps} steps for "
                 f"{self.part.n} nodes" if self.schedule is not None else "")
        return f"{text[:-1]}, factors kept in shared memory{steps}, {self._smem()} B per block)"


class Flat(Strategy):
    """Flat: the canonical order itself, one thread per cell (uncoalesced: the papers' worst)."""

    name = "flat"
    native_is_canonical = True
    options = ("threads",)

    def __init__(self, part, dtype, device, options, budget):
        super().__init__(part, dtype, device, options, budget)
        self.threads = _positive_int(options, "threads", 128)

    def structure_bytes(self):
        p = self.part
        if p.mono:
            return p.n * (4 + 2 * self.dtype.itemsize)
        return p.n_nodes * (4 + 2 * self.dtype.itemsize) + 12 * p.n_cells

    def _host_arrays(self):
        p = self.part
        if p.mono:
            return self._shared_cell_arrays()
        return {"parent": p.parent, "u": p.u.astype(self.dtype), "l": p.l.astype(self.dtype),
                "offsets": p.offsets, "sizes": p.sizes}

    def solve_canonical(self, d, rhs, pivots, stream):
        p, dev = self.part, self._arrays()
        fn = kernel(self.device, "hines_strided.cu",
                    "hines_strided<{T}, %s>" % ("true" if p.mono else "false"), self.dtype)
        offsets = NULL if p.mono else dev["offsets"]
        sizes = NULL if p.mono else dev["sizes"]
        _call(fn, (-(-p.n_cells // self.threads),), (self.threads,),
              (d, rhs, dev["parent"], dev["u"], dev["l"], offsets, sizes, _i32(p.n_cells),
               _i32(p.n), _i32(1), _i64(p.cell_start), *pivots), stream)

    solve_native = solve_canonical


@dataclass(frozen=True)
class SharedTiles:
    """How ``hines_tiled_mono`` solves cells that share one structure (``tiled`` on a
    MonoBatch, every class of ``grouped``): ``batch`` nodes per elimination step, ``lanes``
    lanes per cell, the step schedule, ``tile_cells`` cells per tile, ``groups`` groups of
    threads per block (each solves its own tiles, with its own barrier; the block stages the
    schedule once for all), ``buffers`` tile buffers per group, the block's shared memory in
    bytes, whether a group with one buffer asks L2 for its next tile during the sweeps
    (``prefetch``: :data:`PREFETCH`), and whether the cells come from a member list
    (``listed``: ``grouped``'s classes; each group then keeps its tile's cell starts and the
    next tile's in shared memory, :meth:`per_cell_bytes`)."""

    batch: int
    lanes: int
    schedule: Schedule
    tile_cells: int
    groups: int
    buffers: int
    smem: int
    prefetch: bool = True
    slots: bool = False  # values in slot order (hines_tiled_slots), not canonical
    listed: bool = False  # cells from a member list (grouped), not a MonoBatch's rows

    #: Fallbacks (batch, lanes) when the preferred width's tile does not fit, in turn.
    DEFAULTS = ((8, 8), (16, 16), (4, 4), (2, 2), (1, 1))
    #: Widths (nodes per step = lanes per cell) :meth:`preferred` chooses among, and the
    #: factor by which the next width must cut the steps to be taken.
    WIDTHS = (8, 16, 32)
    WIDEN = 0.65
    THREADS = 64  # default threads per group (tile_cells = THREADS // lanes)
    #: A warp stages the 32 // lanes cells of a sweep's warp side by side (runs of ``lanes``
    #: nodes each), not one cell (runs of 32 nodes): :func:`.schedule.stage_geometry`.
    STAGE_WARP_CELLS = True
    MAX_GROUPS = 15  # named barriers 1..15 (0 is __syncthreads's)
    #: Whether :meth:`plan` has a group with one buffer ask L2 for its next tile between its
    #: sweeps (``prefetch.global.L2``), unless told. Measured on the H200 (fp64, same run,
    #: benchmarks/experiments/carry/): 313 nodes x 256000 cells 0.818 -> 0.792 ms, x 435920
    #: 1.365 -> 1.326; asked when the sweeps start instead, 0.846, slower than not at all.
    PREFETCH = True
    #: Whether ``tiled`` reads a MonoBatch's cells through an identity member list (the
    #: kernel's listed variant, as ``grouped`` does) when its arrangement has one group and
    #: one buffer, unless told (``listed``). Measured on an H100 (fp64, same run,
    #: benchmarks/experiments/tiled_listed/): 256 binary cells of 510 nodes 0.0351 -> 0.0315
    #: ms, 3000 x ca1 at 1405 nodes 0.152 -> 0.141, 100 x ca1 0.0164 both. With it on,
    #: ``bench multi`` (H100) has ``tiled`` at or below ``grouped`` on every MonoBatch.
    LISTED_ONE_GROUP = True

    @classmethod
    def preferred(cls, cell, reroot=None) -> list[tuple[int, int]]:
        """(batch, lanes) to try for ``cell`` when not given: one lane per node of a step,
        8 lanes, doubled while that cuts the steps of the schedule below :data:`WIDEN` times
        the narrower one's; then the :data:`DEFAULTS`. A large cell's sweeps are bound by the
        latency of their steps (shared memory holds few such cells per SM), so more lanes pay
        when the steps fall enough; see docs/gpu.md for the measurements that set the rule.
        Steps are counted from the root :meth:`rerooted` would choose (``reroot``)."""
        def steps(batch):
            return min(schedule_steps(cell, batch, r)
                       for r in ((False, True) if reroot is None else (reroot,)))

        width = cls.WIDTHS[0]
        fewest = steps(width)
        for wider in cls.WIDTHS[1:]:
            fewer = steps(wider)
            if fewer >= cls.WIDEN * fewest:
                break
            width, fewest = wider, fewer
        return [(width, width)] + [v for v in cls.DEFAULTS if v != (width, width)]

    @staticmethod
    def rerooted(cell, batch: int, reroot=None) -> bool:
        """Whether ``cell``'s schedule of ``batch`` nodes per step eliminates it from its
        centre (:func:`.schedule.elimination_tree`): ``reroot`` when given (a bool), by
        default when that takes fewer steps than from its own root (node 0). A shorter
        longest chain of steps: of the 17 real cells of the benchmark, 389 nodes with 8 per
        step take 58 steps from the centre against 73, 881 nodes with 16 take 68 against 76;
        ca1 (313 nodes, 8 per step) would take 46 against 45 and keeps its root."""
        if reroot is not None:
            return reroot
        return schedule_steps(cell, batch, True) < schedule_steps(cell, batch, False)

    @classmethod
    def plan(cls, cell, variants, buffers: int, tc, item: int, props: dict, n_cells: int,
             strategy: str = "tiled", groups=None, prefetch=None,
             max_threads: int = 512, slots: bool = False, reroot=None,
             listed: bool = False) -> "SharedTiles":
        """Choose among ``variants`` ((batch, lanes) pairs) the first whose smallest tile of
        ``cell`` fits in a block's shared memory (``props``: :func:`.device_properties`);
        cells per tile: ``tc``, by default :meth:`default_tile_cells`; groups per block:
        ``groups``, by default :meth:`default_groups`; L2 prefetch of the next tile:
        ``prefetch``, by default :data:`PREFETCH`; a block of at most ``max_threads`` threads
        (``hines_tiled_mono``'s bound; ``hines_tiled_classes`` takes 768). ``ValueError``
        naming ``strategy`` when nothing fits, or when ``tc`` or ``groups`` does not.
        ``slots``: for values in slot order (``hines_tiled_slots``: one buffer, and a width of
        :data:`.compile.SLOT_VARIANTS`, else ``ValueError``). ``reroot``: whether the schedule
        eliminates the cell from its centre (:meth:`rerooted`; by default when that takes
        fewer steps). ``listed``: cells from a member list (one tile buffer)."""
        if listed and (buffers != 1 or slots):
            raise ValueError("cells from a member list are solved with one tile buffer, in "
                             "canonical order")
        limit = props["smem_per_block_optin"]
        need = None
        for batch, lanes in variants:
            if slots and (buffers != 1 or (lanes, batch // lanes) not in SLOT_VARIANTS):
                raise ValueError(f"values in slot order are solved with one tile buffer and "
                                 f"(lanes, nodes per lane) among {SLOT_VARIANTS}; got {buffers} "
                                 f"buffer(s), lanes={lanes}, batch={batch}")
            schedule = tiled_schedule(cell, batch, lanes=lanes, item=item,
                                      stage_cells=32 // lanes if cls.STAGE_WARP_CELLS else 1,
                                      reroot=cls.rerooted(cell, batch, reroot))
            # bulk copies: planes on 16 bytes; a cell's pitch within its slots
            assert not slots or (schedule.slot_stride * item % 16 == 0
                                 and schedule.slot_stride >= cell.n_nodes + 16 // item)
            fixed = cls._schedule_smem(schedule, item, slots)
            per_cell = cls.per_cell_bytes(schedule, item, buffers, listed)
            granule = 32 // lanes
            fit = min((limit - fixed) // per_cell, max_threads // lanes) // granule * granule
            if fit >= granule:
                break
            need = fixed + granule * per_cell
        else:
            raise ValueError(f"strategy {strategy!r} needs {need} bytes of shared memory for "
                             f"cells of {cell.n_nodes} nodes but a block may use {limit}; use "
                             f"'interleaved'")
        if tc is None:
            tc = cls.default_tile_cells(fixed, per_cell, lanes, fit, props, n_cells,
                                        groups is None)
        elif tc % granule or tc > fit:
            raise ValueError(f"tile_cells={tc} must be a multiple of {granule} (32 // lanes) and "
                             f"at most {fit} for cells of {cell.n_nodes} nodes (shared memory: "
                             f"{fixed + tc * per_cell} bytes needed, {limit} per block; at most "
                             f"{max_threads} threads)")
        most = cls._most_groups(fixed, tc * per_cell, tc * lanes, limit, max_threads)
        if groups is None:
            groups = cls._groups_for(tc, fixed, per_cell, lanes, props, n_cells)
        elif groups > most:
            raise ValueError(f"groups={groups} must be at most {most} for tiles of {tc} cells of "
                             f"{cell.n_nodes} nodes (shared memory: "
                             f"{fixed + groups * tc * per_cell} bytes needed, {limit} per block; "
                             f"at most {max_threads} threads and {cls.MAX_GROUPS} groups)")
        return cls(batch, lanes, schedule, int(tc), int(groups), buffers,
                   fixed + int(groups * tc) * per_cell,
                   cls.PREFETCH if prefetch is None else bool(prefetch), slots, listed)

    @staticmethod
    def per_cell_bytes(schedule: Schedule, item: int, buffers: int = 1,
                       listed: bool = False) -> int:
        """Shared memory per cell of a tile: its two planes of ``slot_stride`` words in each
        tile buffer, and with a member list (``listed``) two cell starts (int64: the tile's,
        and the next tile's, loaded during the sweeps)."""
        return 2 * schedule.slot_stride * item * buffers + (16 if listed else 0)

    #: Threads of a block of several groups at most (the groups rule, :meth:`default_groups`).
    GROUP_BLOCK_THREADS = 256
    #: Hardware barriers a block of several groups reserves (its barrier ids are in a
    #: register, so ptxas reserves all 16): at most 4 such blocks per SM
    #: (:data:`.device.SM_BARRIERS`), against 32 one-group blocks (``__syncthreads`` only).
    GROUP_BARRIERS = 16

    @classmethod
    def default_groups(cls, fixed: int, tile_bytes: int, tile_threads: int, most: int,
                       props: dict, tiles: int) -> int:
        """Groups per block (up to ``most``): the number that puts the most tiles on an SM,
        counting shared memory (``fixed`` bytes of schedule per block, ``tile_bytes`` per
        tile; :func:`.device.resident_blocks`, registers not counted), among blocks of at most
        :data:`GROUP_BLOCK_THREADS` threads, the most groups at a tie; and no more groups than
        leave every SM a block when the batch has few ``tiles``. Measured on the H200 (fp64,
        16 cells of 59-1681 nodes, groups 1-15; benchmarks/experiments/staggered_groups/): with
        the persistent grid and the staggered start, several groups beat one-group blocks at
        equal tiles per SM (313 nodes, 4 tiles: 0.96 against 1.03 ms for 256000 cells; 341
        nodes: 0.082 against 0.093 ms for 15000) and by far with more tiles (1,681 nodes: 0.37
        against 0.53 ms); larger blocks lost on small cells (200 nodes, one block of 8 groups
        of 64 threads: 1.22x the best). This rule lands within 1.09x of the best on all 16.
        When leaving every SM a block costs a partial last round of resident blocks that more
        groups (up to the best) would not need, the fewest groups that need the fewest rounds
        (2560 copies of a 510-node cell, 320 tiles: 2 groups make 160 blocks of one per SM, 2
        rounds; 3 make 107 blocks, 1 round; see docs/multi-morphology.md for the timing)."""
        fits = [g for g in range(1, most + 1)
                if g == 1 or g * tile_threads <= cls.GROUP_BLOCK_THREADS]
        best = max(fits, key=lambda g: (cls._tiles_per_sm(fixed, tile_bytes, tile_threads, g,
                                                           props), g))
        spread = max(1, min(best, tiles // props["sm_count"]))

        def rounds(g):  # rounds of resident blocks for the batch's tiles
            resident = cls._tiles_per_sm(fixed, tile_bytes, tile_threads, g, props) // g
            return -(-(-(-tiles // g)) // (resident * props["sm_count"]))

        return min((g for g in fits if spread <= g <= best), key=lambda g: (rounds(g), g))

    @classmethod
    def _tiles_per_sm(cls, fixed: int, tile_bytes: int, tile_threads: int, g: int,
                      props: dict) -> int:
        return g * resident_blocks(g * tile_threads, fixed + g * tile_bytes, props,
                                   barriers=cls.GROUP_BARRIERS if g > 1 else 1)

    @classmethod
    def _most_groups(cls, fixed: int, tile_bytes: int, tile_threads: int, limit: int,
                     max_threads: int = 512) -> int:
        return max(1, min((limit - fixed) // tile_bytes, max_threads // tile_threads,
                          cls.MAX_GROUPS))

    @classmethod
    def _groups_for(cls, tc: int, fixed: int, per_cell: int, lanes: int, props: dict,
                    n_cells: int) -> int:
        """:meth:`default_groups` for tiles of ``tc`` cells of ``per_cell`` bytes."""
        most = cls._most_groups(fixed, tc * per_cell, tc * lanes, props["smem_per_block_optin"])
        return cls.default_groups(fixed, tc * per_cell, tc * lanes, most, props,
                                  -(-n_cells // tc))

    @classmethod
    def tile_sizes(cls, lanes: int, fit: int) -> range:
        """Cells per tile to choose among: multiples of the ``32 // lanes`` cells of a warp up
        to ``THREADS // lanes`` (at least one warp's, at most ``fit``)."""
        granule = 32 // lanes
        return range(granule, min(fit, max(granule, cls.THREADS // lanes)) + 1, granule)

    @classmethod
    def default_tile_cells(cls, fixed: int, per_cell: int, lanes: int, fit: int, props: dict,
                           n_cells: int, free_groups: bool = True) -> int:
        """Cells per tile: ``THREADS // lanes`` (at least the ``32 // lanes`` of a warp, at
        most ``fit``), or, with groups chosen by :meth:`default_groups` (``free_groups``) and a
        batch that fills the device at that size, the multiple of ``32 // lanes`` below it
        that puts the most cells on an SM (the larger at a tie): smaller tiles let more
        groups share what a large cell's schedule leaves of an SM's shared memory."""
        sizes = cls.tile_sizes(lanes, fit)
        top = sizes[-1]
        if not free_groups:
            return top

        cells = {tc: tc * cls._tiles_per_sm(
                     fixed, tc * per_cell, tc * lanes,
                     cls._groups_for(tc, fixed, per_cell, lanes, props, n_cells), props)
                 for tc in sizes}
        if n_cells <= cells[top] * props["sm_count"]:
            return top
        return max(cells, key=lambda tc: (cells[tc], tc))

    def blocks(self, n_cells: int) -> int:
        """Blocks that solve ``n_cells`` cells with one tile per group."""
        return -(-(-(-n_cells // self.tile_cells)) // self.groups)

    def grid(self, fn, props: dict, n_cells: int) -> int:
        """Blocks to launch for ``n_cells`` cells: one per tile with one group and one
        buffer; otherwise only the blocks resident on the device at once (a persistent
        grid), whose groups go on to further tiles: with two buffers a group loads its next
        tile during the sweeps, and several groups start out of phase (the kernel's staggered
        start), so that one group's loads overlap the others' sweeps. Blocks need not all be
        resident for the result: tiles are independent, and a group waits only for the groups
        of its own block."""
        blocks = self.blocks(n_cells)
        if self.buffers == 1 and self.groups == 1:
            return blocks
        barriers = self.GROUP_BARRIERS if self.groups > 1 else 1
        resident = blocks_per_sm(fn, self.threads, self.smem, props, barriers)
        return min(blocks, resident * props["sm_count"])

    @classmethod
    def _schedule_smem(cls, schedule: Schedule, item: int, slots: bool = False) -> int:
        """Shared memory of the schedule in a block: ``(l, u)`` per slot (:func:`.lu_len`),
        slot pairs (int2) per entry, the staging table, the groups' start flags, and in slot
        order the groups' mbarriers (8 bytes each, 8-byte aligned)."""
        return (lu_len(schedule.n_nodes) * 2 * item + 8 * schedule.jp.size
                + 4 * schedule.n_nodes + 4 * cls.MAX_GROUPS
                + (8 * (cls.MAX_GROUPS + 1) if slots else 0))

    @property
    def template(self) -> str:
        several = "true" if self.groups > 1 else "false"  # one group: __syncthreads only
        if self.slots:
            return f"hines_tiled_slots<{{T}}, {self.lanes}, {self.batch // self.lanes}, {several}>"
        listed = "true" if self.listed else "false"  # cells from a member list (grouped)
        return (f"hines_tiled_mono<{{T}}, {self.lanes}, {self.batch // self.lanes}, {several}, "
                f"{listed}>")

    def pitch(self, item: int) -> int:
        """Words per cell of values in slot order: the cell's nodes rounded up to 16 bytes,
        so that every cell's values start on 16 bytes (bulk copies)."""
        words = 16 // item
        return -(-self.schedule.n_nodes // words) * words

    @property
    def prefetches(self) -> bool:
        """Whether groups ask L2 for their next tile: with ``prefetch``, one buffer and
        several groups (a persistent grid; one group per block gets one tile)."""
        return self.prefetch and self.buffers == 1 and self.groups > 1

    @property
    def threads(self) -> int:
        return self.groups * self.tile_cells * self.lanes

    def structure_bytes(self, item: int) -> int:
        """Device bytes of the schedule: what :meth:`host_arrays` uploads."""
        return sum(a.nbytes for a in self.host_arrays(np.dtype(f"f{item}")).values())

    def host_arrays(self, dtype) -> dict:
        """The schedule as the kernel reads it (:func:`.schedule.kernel_arrays`)."""
        return kernel_arrays(self.schedule, dtype)

    def launch(self, fn, grid: int, d, rhs, arrays: dict, members, starts, n_cells: int,
               cell_base: int, pivots, stream) -> None:
        """Solve ``n_cells`` cells (positions 0.. of ``members``, with their values at
        ``starts``; or, both ``NULL``, the rows of ``d`` and ``rhs``) with ``grid`` blocks."""
        s = self.schedule
        _allow_smem(fn, self.smem, carveout=True)
        if self.slots:  # a MonoBatch in slot order: no member list, no staging table
            args = (d, rhs, arrays["jp"], arrays["lu"], arrays["node"], _i32(s.n_batches),
                    _i32(s.n_nodes), _i32(s.slot_stride), _i32(self.pitch(d.dtype.itemsize)),
                    _i32(self.tile_cells), _i32(self.prefetches), _i64(n_cells),
                    _i64(cell_base), *pivots)
        else:
            args = (d, rhs, arrays["jp"], arrays["lu"], arrays["node"], arrays["stage"], members,
                    starts, _i32(s.n_batches), _i32(s.n_nodes), _i32(s.slot_stride),
                    _i32(s.stage_cells.bit_length() - 1), _i32(self.tile_cells),
                    _i32(self.buffers), _i32(self.prefetches), _i64(n_cells), _i64(cell_base),
                    *pivots)
        _call(fn, (grid,), (self.threads,), args, stream, self.smem)

    def describe(self) -> str:
        s = self.schedule
        return (f"{self.groups} group{'s' if self.groups > 1 else ''} of {self.tile_cells} "
                f"cell{'s' if self.tile_cells > 1 else ''} per block, {self.lanes} lanes per "
                f"cell, {s.batch} nodes per step: "
                f"{s.n_batches} steps for {s.n_nodes} nodes"
                f"{' from the centre' if s.rerooted else ''}, {self.buffers} tile "
                f"buffer{'s' if self.buffers > 1 else ''} per group"
                f"{', next tile prefetched into L2' if self.prefetches else ''}"
                f"{', cells through a member list' if self.listed else ''}"
                f", {self.smem} B shared memory")


def tiled_variants(batch, lanes, cell, reroot=None) -> list[tuple[int, int]]:
    """(batch, lanes) pairs to try, from the options (validated) or the defaults for
    ``cell`` (:meth:`SharedTiles.preferred`, counting steps as ``reroot`` says)."""
    valid = [(kb * v, kb) for kb, v in TILED_VARIANTS]
    if batch is None and lanes is None:
        return SharedTiles.preferred(cell, reroot)
    chosen = [(b, l) for b, l in valid
              if (batch is None or b == batch) and (lanes is None or l == lanes)]
    if not chosen:
        raise ValueError(f"(batch, lanes) must be one of {sorted(valid)}; got batch={batch!r}, "
                         f"lanes={lanes!r}")
    return sorted(chosen, key=lambda bl: -bl[1])[:1] if lanes is None else chosen[:1]


def optional_positive_int(options: dict, name: str):
    """Pop option ``name`` (``tile_cells``, ``groups``): ``None`` or a positive int."""
    tc = options.pop(name, None)
    if tc is not None and (isinstance(tc, bool) or not isinstance(tc, (int, np.integer)) or tc < 1):
        raise ValueError(f"{name} must be a positive int, got {tc!r}")
    return tc


def optional_bool(options: dict, name: str):
    """Pop option ``name`` (``reroot``, ``one_launch``): ``None`` (the default rule) or a
    bool."""
    value = options.pop(name, None)
    if value is not None and not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return None if value is None else bool(value)


class Tiled(Strategy):
    """Canonical values staged through shared memory by tiles of cells (hines_tiled.cu).

    Shared structure: ``lanes`` lanes of a warp work on one cell and eliminate ``batch``
    independent nodes per step of the schedule (:mod:`.schedule`), ``batch // lanes`` each;
    ``tile_cells`` cells per tile (a multiple of ``32 // lanes``), ``groups`` tiles solved
    side by side in a block, which stages the schedule once for them; with one group and
    ``buffers=1`` (default) one block per tile is launched; otherwise only the blocks that stay
    resident, whose groups go on to further tiles (several groups start out of phase; with
    ``buffers=2`` a group loads its next tile while it solves the current one). Two buffers
    halve the tiles an SM holds, and the kernel is bound by shared-memory traffic, not by
    device memory: on the H200 the best two-buffer configuration took 1.25 ms against 1.04 ms
    for the best one-buffer one (256000 cells of 313 nodes; 0.245 against 0.140 ms for 3000
    of 1405 nodes), although at a few equal (batch, lanes, threads) two buffers were up to 6%
    (17%) faster (benchmarks/results/h200/hines_tiled.md). ``reroot``: eliminate the cell
    from its centre (True), from its own root (False), or from the one that takes fewer
    steps (default; :meth:`SharedTiles.rerooted`). ``listed``: read the cells through an
    identity member list, the kernel variant ``grouped`` runs (one buffer; by default with one
    group and one buffer when :data:`SharedTiles.LISTED_ONE_GROUP`). Per-cell structures: one
    lane per cell, ``tile_cells`` cells per one-warp block.

    Native layout of a shared structure (:meth:`native_shape`): each cell's values in its
    schedule's slot order, ``pitch`` words per cell, so that a tile's cells are moved by bulk
    copies (``hines_tiled_slots``, planned as :meth:`_slot_tiles`) instead of one load and one
    store per node; canonical when the width is not among :data:`.compile.SLOT_VARIANTS` or
    ``buffers=2``.
    """

    name = "tiled"
    options = ("tile_cells", "groups", "batch", "lanes", "buffers", "reroot", "listed")

    def __init__(self, part, dtype, device, options, budget):
        super().__init__(part, dtype, device, options, budget)
        item = np.dtype(dtype).itemsize
        self.limit = device_properties(device)["smem_per_block_optin"]
        batch, lanes = options.pop("batch", None), options.pop("lanes", None)
        tc = optional_positive_int(options, "tile_cells")
        groups = optional_positive_int(options, "groups")
        reroot = optional_bool(options, "reroot")
        listed = optional_bool(options, "listed")
        self._grid = None  # shared structure: blocks per launch, set at the first solve
        buffers = options.pop("buffers", None)
        if buffers not in (None, 1, 2) or isinstance(buffers, bool):
            raise ValueError(f"buffers must be 1 or 2, got {buffers!r}")
        self._slots = None  # the plan in slot order (SharedTiles, or False), when first asked
        self._slot_dev = None  # its schedule and node -> slot map on the device, when first used
        self._slot_grid = None
        if part.mono:
            self._asked = (tc, groups, reroot)
            props = device_properties(device)
            if listed and buffers == 2:
                raise ValueError("listed=True reads the cells through a member list with one "
                                 "tile buffer; got buffers=2")
            self.tiles = SharedTiles.plan(part.cell, tiled_variants(batch, lanes, part.cell,
                                                                    reroot),
                                          buffers or 1, tc, item, props, part.n_cells,
                                          groups=groups, reroot=reroot, listed=bool(listed))
            t = self.tiles
            if listed is None and SharedTiles.LISTED_ONE_GROUP and t.groups == t.buffers == 1:
                try:  # the same arrangement, each tile's cell starts in shared memory too
                    self.tiles = SharedTiles.plan(part.cell, [(t.batch, t.lanes)], 1,
                                                  t.tile_cells, item, props, part.n_cells,
                                                  groups=1, reroot=t.schedule.rerooted,
                                                  listed=True)
                except ValueError:  # the starts do not fit beside the tile: as planned
                    pass
        else:
            if listed:
                raise ValueError("listed is for shared structures (MonoBatch) only: cells that "
                                 "differ are solved one lane per cell")
            if reroot:
                raise ValueError("reroot is for shared structures (MonoBatch) only: cells that "
                                 "differ are solved one lane per cell")
            if buffers not in (None, 1):
                raise ValueError("buffers=2 is for shared structures (MonoBatch) only")
            if groups not in (None, 1):
                raise ValueError("groups is for shared structures (MonoBatch) only")
            per_node = 4 + item * (3 if part.symmetric else 4)  # d, rhs, u, (l), parent
            if part.n * per_node > self.limit:
                raise ValueError(f"strategy 'tiled' needs {part.n * per_node} bytes of shared "
                                 f"memory for cells of {part.n} nodes but a block may use "
                                 f"{self.limit}; use 'interleaved'")
            if tc is not None and tc > 32:
                raise ValueError(f"tile_cells must be at most 32 for per-cell structures, got {tc}")
            self.tile_cells = int(tc or 4)
            self.tile_first, nodes = self._tiles(part, self.tile_cells, self.limit // per_node)
            self.max_nodes = nodes
            self.smem = nodes * per_node

    @staticmethod
    def _tiles(part: Part, tc: int, max_nodes: int):
        """Greedy tiles of at most ``tc`` consecutive cells and a bounded node count."""
        sizes = part.sizes.astype(np.int64)
        budget = min(max_nodes, max(int(sizes.max(initial=1)),
                                    int(np.ceil(tc * sizes.mean())) if sizes.size else 1))
        first, count, nodes, largest = [0], 0, 0, 0
        for c, size in enumerate(sizes.tolist()):
            if count == tc or (count and nodes + size > budget):
                first.append(c)
                largest = max(largest, nodes)
                count, nodes = 0, 0
            count += 1
            nodes += size
        largest = max(largest, nodes)
        if part.n_cells:
            first.append(part.n_cells)
        return np.asarray(first, dtype=np.int32), largest

    def structure_bytes(self):
        p = self.part
        if p.mono:  # the schedule of slot order too, once asked for; the member list
            return (sum(t.structure_bytes(self.dtype.itemsize) for t in (self.tiles, self._slots)
                        if t) + (12 * p.n_cells if self.tiles.listed else 0))
        return p.n_nodes * (4 + 2 * self.dtype.itemsize) + 12 * p.n_cells

    def _host_arrays(self):
        p = self.part
        if p.mono:
            out = self.tiles.host_arrays(self.dtype)
            if self.tiles.listed:  # every cell, in order, and where its values start
                out["members"] = np.arange(p.n_cells, dtype=np.int32)
                out["starts"] = np.arange(p.n_cells, dtype=np.int64) * p.n
            return out
        u = p.u.astype(self.dtype)
        return {"parent": p.parent, "u": u, "l": u if p.symmetric else p.l.astype(self.dtype),
                "offsets": p.offsets, "tiles": self.tile_first}

    def solve_canonical(self, d, rhs, pivots, stream):
        p, dev = self.part, self._arrays()
        if p.n_cells == 0:
            return
        if p.mono:
            t = self.tiles
            fn = kernel(self.device, "hines_tiled.cu", t.template, self.dtype)
            if self._grid is None:  # once: the kernel's attributes are device queries
                self._grid = t.grid(fn, device_properties(self.device), p.n_cells)
            members, starts = ((dev["members"], dev["starts"]) if t.listed else (NULL, NULL))
            t.launch(fn, self._grid, d, rhs, dev, members, starts, p.n_cells, p.cell_start,
                     pivots, stream)
        else:
            fn = kernel(self.device, "hines_tiled.cu", "hines_tiled_multi<{T}>", self.dtype)
            _allow_smem(fn, self.smem, carveout=True)
            _call(fn, (self.tile_first.size - 1,), (32,),
                  (d, rhs, dev["parent"], dev["u"], dev["l"], dev["offsets"], dev["tiles"],
                   _i32(self.max_nodes), _i64(p.cell_start), *pivots), stream, self.smem)

    # -- the native layout: slot order ---------------------------------------------------------
    def _slot_tiles(self):
        """The plan for values in slot order (the same width and options as :attr:`tiles`,
        planned with the mbarriers' shared memory), or ``None`` where the native layout is
        the canonical one."""
        if self._slots is None:
            self._slots = False
            if self.part.mono:
                t = self.tiles
                try:
                    self._slots = SharedTiles.plan(
                        self.part.cell, [(t.batch, t.lanes)], t.buffers, self._asked[0],
                        self.dtype.itemsize, device_properties(self.device), self.part.n_cells,
                        groups=self._asked[1], slots=True, reroot=self._asked[2])
                except ValueError:  # a width or buffers without the slot-order kernel
                    pass
        return self._slots or None

    @property
    def native_is_canonical(self) -> bool:
        return self._slot_tiles() is None

    def native_shape(self):
        t = self._slot_tiles()
        if t is None:
            return self.part.values_shape
        return (self.part.n_cells, t.pitch(self.dtype.itemsize))

    def _slot_arrays(self) -> dict:
        """The slot plan's schedule as its kernel reads it, and each node's slot ("slot"), on
        the device (uploaded once)."""
        if self._slot_dev is None:
            t, cupy = self._slot_tiles(), cupy_module()
            with cupy.cuda.Device(self.device):
                self._slot_dev = {key: cupy.asarray(value)
                                  for key, value in t.host_arrays(self.dtype).items()
                                  if key != "stage"}
                self._slot_dev["slot"] = cupy.asarray(t.schedule.slot[:self.part.n])
        return self._slot_dev

    def to_native(self, a, stream):
        if self.native_is_canonical:
            return a.copy()
        cupy = cupy_module()
        with cupy.cuda.Device(self.device), stream:
            out = cupy.zeros(self.native_shape(), dtype=a.dtype)  # padding: zeros
            out[:, self._slot_arrays()["slot"]] = a
        return out

    def from_native(self, a, stream):
        if self.native_is_canonical:
            return a.copy()
        cupy = cupy_module()
        with cupy.cuda.Device(self.device), stream:
            return cupy.ascontiguousarray(a[:, self._slot_arrays()["slot"]])

    def solve_native(self, d, rhs, pivots, stream):
        t = self._slot_tiles()
        if t is None:
            self.solve_canonical(d, rhs, pivots, stream)
            return
        p = self.part
        if p.n_cells == 0:
            return
        for name, a in (("d", d), ("rhs", rhs)):  # bulk copies start on 16 bytes
            if a.data.ptr % 16:
                raise ValueError(f"{name} of the native layout must start on 16 bytes (bulk "
                                 f"copies); got an address {a.data.ptr % 16} bytes past that "
                                 f"(a view into a larger array?): pass a copy")
        fn = kernel(self.device, "hines_tiled.cu", t.template, self.dtype)
        if self._slot_grid is None:  # once: the kernel's attributes are device queries
            self._slot_grid = t.grid(fn, device_properties(self.device), p.n_cells)
        t.launch(fn, self._slot_grid, d, rhs, self._slot_arrays(), NULL, NULL, p.n_cells,
                 p.cell_start, pivots, stream)

    def describe(self):
        if self.part.mono:
            t = self._slot_tiles()
            native = (f"; native layout: slot order, {t.describe()}" if t else "")
            return f"tiled ({self.tiles.describe()}{native})"
        return (f"tiled ({self.tile_first.size - 1} tiles of <= {self.tile_cells} cells, "
                f"{self.smem} B shared memory)")


def _call(fn, grid, block, args, stream, shared_mem: int = 0) -> None:
    """Launch ``fn`` on ``stream`` (CuPy launches on the current stream)."""
    with stream:
        fn(grid, block, args, shared_mem=shared_mem)


def _allow_smem(fn, nbytes: int, *, carveout: bool = False) -> None:
    """Raise a kernel's dynamic shared-memory limit when it needs more than the 48 KB default;
    ``carveout``: ask for the largest shared-memory part of L1 (kernels that stage in it)."""
    if nbytes > 48 * 1024 and fn.max_dynamic_shared_size_bytes < nbytes:
        fn.max_dynamic_shared_size_bytes = nbytes
    if carveout and fn.preferred_shared_memory_carveout != 100:
        fn.preferred_shared_memory_carveout = 100


#: Strategy name -> class (``strategy=`` option of the GPU backend).
STRATEGIES: dict[str, type[Strategy]] = {
    cls.name: cls for cls in (Flat, Interleaved, BlockInterleaved, BlockShared, Tiled)
}
