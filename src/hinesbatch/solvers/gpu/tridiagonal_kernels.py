"""Launchers of the batched tridiagonal CUDA kernels (``kernels/tridiagonal_*.cu``).

The sources are compiled through the GPU backend's compile cache
(:func:`hinesbatch.solvers.gpu.kernel_build.kernel`), whose table
(:data:`hinesbatch.solvers.gpu.kernel_build.KERNELS`) lists their template instantiations.

Two solvers (docs/tridiagonal.md):

* :class:`ThomasLaunch`: cuThomasBatch / cuThomasVBatch, one thread per system (Valero-Lara
  et al. 2018, section 4.1), on the interleaved ``(n, batch)`` layout (or the flat one),
  variable sizes with computing padding (CP) or without (NCP).
* :class:`ChunkedLaunch`: several threads per system, the system held in registers (a
  partitioned Thomas / PCR hybrid); systems longer than 512 rows are cut into segments and
  solved in three launches (reduce, segment boundaries, solve).

Every launch takes ``status`` (uint32 per system, reset to ``0xFFFFFFFF``) and ``flag`` (one
uint64, reset to ``~0``) in which the kernels record zero, tiny or non-finite pivots.
"""
from __future__ import annotations

import numpy as np

from . import kernel_build
from . import options as check
from .kernel_build import CHUNK_CONFIGS, SEGMENT_ROWS
from .device import blocks_per_sm, cupy_module, device_properties

__all__ = ["CHUNK_CONFIGS", "SEGMENT_ROWS", "THREADS", "ThomasLaunch",
           "ChunkedLaunch", "chunk_config", "reset_flags", "tile_smem_bytes", "NULL"]

NULL = np.uint64(0)  # a null pointer argument
THREADS = 128  # TRI_THREADS of tridiagonal_chunked.cu


def _bool(b: bool) -> str:
    return "true" if b else "false"


def _i32(x) -> np.int32:
    return np.int32(int(x))


def _i64(x) -> np.int64:
    return np.int64(int(x))


def _ptr(a):
    return NULL if a is None else a


def reset_flags(cupy, status, flag) -> None:
    """Clear the pivot records before a launch (asynchronous, current stream)."""
    stream = cupy.cuda.get_current_stream().ptr
    rt = cupy.cuda.runtime
    if status.size:
        rt.memsetAsync(status.data.ptr, 0xFF, status.nbytes, stream)
    rt.memsetAsync(flag.data.ptr, 0xFF, flag.nbytes, stream)


def chunk_config(n: int) -> tuple[int, int, int]:
    """``(Q, G, L)`` of the single-segment configuration for systems of ``n`` rows (``n <= 512``):
    the smallest group that holds ``n`` rows."""
    for q, (g, l) in CHUNK_CONFIGS.items():
        if n <= q:
            return q, g, l
    raise ValueError(f"systems of {n} rows need segments (n > {max(CHUNK_CONFIGS)})")


class ThomasLaunch:
    """cuThomasBatch (one thread per system) for one batch shape, dtype and device.

    ``cp``: for variable sizes, computing padding (every thread walks all ``n`` rows) or not
    (each thread stops at its own length). Element ``(row i, system k)`` at
    ``k * s_sys + i * s_row``: interleaved ``(n, batch)`` or flat ``(batch, n)``.
    """

    block = 256

    def __init__(self, n: int, batch: int, dtype, device: int, *, cp: bool = True):
        self.n, self.batch, self.dtype, self.device, self.cp = n, batch, np.dtype(dtype), device, cp

    def _fn(self, template: str):
        return kernel_build.kernel(self.device, "tridiagonal_thomas.cu", template, self.dtype)

    def solve(self, dl, d, du, rhs, cbuf, x, lengths, status, flag, *, interleaved: bool) -> None:
        """One thread per system; ``cbuf`` receives c' (it may be ``d``), ``x`` d' then the
        solution (it may be ``rhs``). Rows past a system's length are not written."""
        n, batch = self.n, self.batch
        if not n or not batch:
            return
        s_row, s_sys = (batch, 1) if interleaved else (1, n)
        fn = self._fn(f"tri_thomas<{{T}}, {_bool(self.cp)}>")
        grid = (-(-batch // self.block),)
        fn(grid, (self.block,), (dl, d, du, rhs, cbuf, x, _ptr(lengths), _i32(n), _i64(batch),
                                 _i64(s_row), _i64(s_sys), status, flag))

    def interleave(self, sources, targets) -> None:
        """Four ``(batch, n)`` arrays -> four ``(n, batch)`` arrays."""
        n, batch = self.n, self.batch
        if not n or not batch:
            return
        fn = self._fn("tri_interleave4<{T}>")
        grid = (-(-batch // 32), min(-(-n // 32), 65535), 4)
        fn(grid, (32, 8), (*sources, *targets, _i32(n), _i64(batch)))

    def deinterleave(self, source, target, lengths, status) -> None:
        """``(n, batch)`` -> ``(batch, n)``, only rows below each length of unflagged systems."""
        n, batch = self.n, self.batch
        if not n or not batch:
            return
        fn = self._fn("tri_deinterleave<{T}>")
        grid = (-(-batch // 32), min(-(-n // 32), 65535))
        fn(grid, (32, 8), (source, target, _i32(n), _i64(batch), _ptr(lengths), status))


class ChunkedLaunch:
    """The several-threads-per-system solver for one batch shape, dtype and device.

    ``segment_rows``: rows per segment when ``n > 512`` (128, 256 or 512); ignored (a single
    segment of the smallest configuration holding ``n`` rows) otherwise.
    """

    def __init__(self, n: int, batch: int, dtype, device: int, *, segment_rows: int = 512):
        self.n, self.batch, self.dtype, self.device = n, batch, np.dtype(dtype), device
        if n <= max(CHUNK_CONFIGS):
            self.q, self.g, self.l = chunk_config(n)
            self.segs = 1
        else:
            check.one_of("segment_rows", segment_rows, SEGMENT_ROWS)
            self.q = segment_rows
            self.g, self.l = CHUNK_CONFIGS[segment_rows]
            self.segs = -(-n // segment_rows)
        if self.segs > 65535 or n > 2**31 - 1024:
            raise ValueError(f"systems of {n} rows are too long for the chunked solver "
                             f"(at most {65535 * max(SEGMENT_ROWS)} rows)")
        self.sb = THREADS // self.g  # groups per tile
        self.smem = tile_smem_bytes(self.g, self.l, self.dtype.itemsize)
        self.tiles = -(-batch // self.sb) * self.segs
        self._scratch = None  # (red, bound) for segmented solves
        self._grid: dict[tuple[bool, bool], int] = {}

    # -- kernels ---------------------------------------------------------------------------
    def _template(self, interleaved: bool, reduce: bool) -> str:
        return (f"tri_chunked<{{T}}, {self.g}, {self.l}, {_bool(interleaved)}, "
                f"{_bool(reduce)}>")

    def _kernel(self, template: str):
        return kernel_build.kernel(self.device, "tridiagonal_chunked.cu", template, self.dtype)

    def _fn(self, interleaved: bool, reduce: bool):
        fn = self._kernel(self._template(interleaved, reduce))
        if self.smem > 48 * 1024 and fn.max_dynamic_shared_size_bytes < self.smem:
            fn.max_dynamic_shared_size_bytes = self.smem
        if fn.preferred_shared_memory_carveout != 100:  # tiles live in shared memory
            fn.preferred_shared_memory_carveout = 100
        return fn

    def _blocks(self, fn, key) -> int:
        """Persistent grid: as many blocks as fit on the device at once, at most one per tile."""
        grid = self._grid.get(key)
        if grid is None:
            props = device_properties(self.device)
            resident = blocks_per_sm(fn, THREADS, self.smem, props)
            grid = self._grid[key] = max(1, min(self.tiles, resident * props["sm_count"]))
        return grid

    def scratch_bytes(self) -> int:
        """Device memory of the segment buffers (0 for single-segment systems)."""
        return 0 if self.segs == 1 else 8 * self.segs * self.batch * self.dtype.itemsize

    def _segment_buffers(self):
        if self._scratch is None:
            cupy = cupy_module()
            with cupy.cuda.Device(self.device):
                shape = (self.segs, self.batch)
                self._scratch = (cupy.empty((6, *shape), self.dtype),
                                 cupy.empty((2, *shape), self.dtype))
        return self._scratch

    def _launch(self, interleaved: bool, reduce: bool, args) -> None:
        fn = self._fn(interleaved, reduce)
        grid = self._blocks(fn, (interleaved, reduce))
        fn((grid,), (THREADS,), args, shared_mem=self.smem)

    def solve(self, dl, d, du, rhs, x, lengths, status, flag, *, interleaved: bool) -> None:
        """Solve into ``x`` (it may be ``rhs``); ``interleaved``: arrays are ``(n, batch)``,
        else ``(batch, n)``. Rows past a system's length and flagged systems are not written."""
        n, batch = self.n, self.batch
        if not n or not batch:
            return
        common = (_ptr(lengths), _i32(n), _i64(batch), _i32(self.segs))
        if self.segs == 1:
            self._launch(interleaved, False, (dl, d, du, rhs, x, *common, NULL, NULL, status, flag))
            return
        red, bound = self._segment_buffers()
        self._launch(interleaved, True, (dl, d, du, rhs, x, *common, NULL, red, status, flag))
        seg_fn = kernel_build.kernel(self.device, "tridiagonal_chunked.cu", "tri_segments<{T}>",
                                 self.dtype)
        seg_fn((-(-batch // 256),), (256,), (red, bound, _i32(self.segs), _i32(self.q),
                                            _i64(batch), status, flag))
        self._launch(interleaved, False, (dl, d, du, rhs, x, *common, bound, NULL, status, flag))

    def describe(self) -> str:
        how = (f"{self.g} lanes x {self.l} rows per system" if self.segs == 1 else
               f"{self.segs} segments of {self.q} rows ({self.g} lanes x {self.l} rows), "
               f"reduce / boundaries / solve")
        return f"chunked ({how}; {self.sb} systems per 128-thread block)"


def tile_smem_bytes(g: int, l: int, itemsize: int) -> int:
    """Dynamic shared memory [bytes] of one ``tri_chunked`` block: four input tiles and the x
    tile of ``128 / g`` groups, then two int32 per group. Sized for the padded tile (``g (l + 1)
    + 1`` values per group, the larger of the two layouts of ``tridiagonal_chunked.cu``), so one
    size serves every staging mode."""
    sb = THREADS // g
    return 5 * sb * (g * (l + 1) + 1) * itemsize + 2 * sb * 4
