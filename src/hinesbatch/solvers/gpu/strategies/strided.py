"""The strided strategies ``flat``, ``interleaved`` and ``block-interleaved`` (``hines_strided``),
and the blocked layouts they share with ``block-shared``.

A blocked layout stores node ``i`` of cell ``c`` at ``((c // bs) * n + i) * bs + c % bs``:
``bs = 1`` is the canonical order of a shared structure, ``bs = n_cells`` Full-Interleaved,
anything between Block-Interleaved (Valero-Lara et al. 2017).
"""
from __future__ import annotations

import numpy as np

from .. import options as check
from ..device import cupy_module
from ..kernel_build import kernel
from .base import NULL, Strategy, call_kernel, i32, i64

__all__ = ["Blocked", "Flat", "Interleaved", "BlockInterleaved"]

_TRANSPOSE_BLOCK = (32, 8, 1)


class Blocked(Strategy):
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
        call_kernel(fn, grid, _TRANSPOSE_BLOCK,
           (src0, src0 if src1 is None else src1, dst0, dst0 if dst1 is None else dst1,
            NULL if p.mono else self._offsets(), NULL if p.mono else dev["sizes"],
            i64(cell_start), i32(n_cells), i32(p.n), i32(self.bs)), stream)

    def _transpose_out(self, src, dst, cell_start, n_cells, stream):
        p, dev = self.part, self._arrays()
        fn = kernel(self.device, "layout.cu", "layout_to_canonical<{T}>", self.dtype)
        grid = (-(-n_cells // 32), -(-p.n // 32), 1)
        call_kernel(fn, grid, _TRANSPOSE_BLOCK,
           (src, dst, NULL if p.mono else self._offsets(), NULL if p.mono else dev["sizes"],
            i64(cell_start), i32(n_cells), i32(p.n), i32(self.bs)), stream)

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


class Interleaved(Blocked):
    """Full-Interleaved: node-major over all cells of a chunk (Valero-Lara et al. 2017)."""

    name = "interleaved"
    options = ("threads",)

    def __init__(self, part, dtype, device, options, budget):
        self.threads = check.positive_int("threads", options.pop("threads", 128))
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
        call_kernel(fn, (-(-count // self.threads),), (self.threads,),
              (d, rhs, parent, u, l, NULL, sizes, i32(count), i32(p.n), i32(self.bs),
               i64(p.cell_start + start), pivots[0], pivots[1][start:]), stream)


class BlockInterleaved(Interleaved):
    """Block-Interleaved with ``bs`` cells per block (the paper sweeps 32..512)."""

    name = "block-interleaved"
    options = ("threads", "bs")

    def _block_size(self, options):
        return check.positive_int("bs", options.pop("bs", 128))

    def _chunk_from_fit(self, fit, budget):
        return Blocked._chunk_from_fit(self, fit, budget)

    def _bs_for_chunk(self, bs, chunk):
        return bs

    def _shrunk(self, chunk):
        return chunk - self.bs



class Flat(Strategy):
    """Flat: the canonical order itself, one thread per cell (uncoalesced: the papers' worst)."""

    name = "flat"
    native_is_canonical = True
    options = ("threads",)

    def __init__(self, part, dtype, device, options, budget):
        super().__init__(part, dtype, device, options, budget)
        self.threads = check.positive_int("threads", options.pop("threads", 128))

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
        call_kernel(fn, (-(-p.n_cells // self.threads),), (self.threads,),
              (d, rhs, dev["parent"], dev["u"], dev["l"], offsets, sizes, i32(p.n_cells),
               i32(p.n), i32(1), i64(p.cell_start), *pivots), stream)

    solve_native = solve_canonical

