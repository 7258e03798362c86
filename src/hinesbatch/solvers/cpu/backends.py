"""The CPU backends: ``serial`` and ``multicore`` (Numba), for Hines and tridiagonal batches.

Each class implements the backend protocol of :mod:`hinesbatch.solvers.registry`: analysis
in ``__init__`` (structure arrays converted once to the plan's dtype, scratch allocated
once), the hot loop in ``solve``. Validation, dtype and aliasing rules live in the front ends
(:mod:`hinesbatch.solvers.plan`, :mod:`hinesbatch.solvers.tridiagonal`).
"""
from __future__ import annotations

import numba
import numpy as np

from ...errors import SingularSystemError
from ...tree.structure import MonoBatch
from .. import registry
from .hines_kernels import hines_parallel, hines_serial
from .tridiagonal_kernels import thomas_parallel, thomas_serial

__all__ = ["SerialHines", "MulticoreHines", "SerialTridiagonal", "MulticoreTridiagonal"]


def _readonly(a: np.ndarray, dtype) -> np.ndarray:
    """``a`` as a read-only C-contiguous array of ``dtype`` (no copy when it already is)."""
    out = np.ascontiguousarray(a, dtype=dtype)
    if out.flags.writeable:
        out = out.view()
        out.flags.writeable = False
    return out


def _check_options(name: str, options: dict, allowed: tuple[str, ...]) -> None:
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        valid = ", ".join(allowed) if allowed else "none"
        raise TypeError(f"backend {name!r} got unknown option(s) {', '.join(unknown)}; "
                        f"its options: {valid}")


def _check_threads(threads) -> int | None:
    if threads is None:
        return None
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)):
        raise TypeError(f"threads must be an int, got {type(threads).__name__}")
    top = numba.config.NUMBA_NUM_THREADS
    if not 1 <= threads <= top:
        raise ValueError(f"threads must be between 1 and {top} (NUMBA_NUM_THREADS), got {threads}")
    return int(threads)


class _Threads:
    """Run a Numba parallel kernel on ``threads`` threads, or on Numba's current setting."""

    def __init__(self, threads: int | None):
        self.threads = threads

    def count(self) -> int:
        return self.threads or numba.get_num_threads()

    def __enter__(self):
        self._old = numba.get_num_threads()
        if self.threads is not None:
            numba.set_num_threads(self.threads)

    def __exit__(self, *exc):
        numba.set_num_threads(self._old)
        return False


def _singular(kind: str, cell: int, node: int, pivot: float) -> SingularSystemError:
    what = "system" if kind == "tridiagonal" else "cell"
    return SingularSystemError(
        f"zero or non-finite pivot {pivot!r} at {what} {cell}, node {node}: the {kind} system "
        f"is singular or too far from diagonally dominant for elimination without pivoting",
        cell=cell, node=node,
    )


class _CpuHines:
    """Shared set-up of the CPU Hines backends."""

    kind = "hines"
    xp = np
    _options: tuple[str, ...] = ()

    @classmethod
    def available(cls) -> tuple[bool, str]:
        return True, ""

    def __init__(self, structure, *, dtype, **options):
        _check_options(self.name, options, self._options)
        self.dtype = np.dtype(dtype)
        self._mono = isinstance(structure, MonoBatch)
        s = structure.cell if self._mono else structure
        self._parent = s.parent  # read-only int32
        self._offsets = s.cell_offsets  # read-only int64
        self._u = _readonly(s.u, self.dtype)
        self._l = _readonly(s.lower, self.dtype)
        self._n_cells = structure.n_cells
        self._nodes_per_cell = s.n_nodes if self._mono else None

    def _raise(self, d: np.ndarray, cell: int, node: int):
        flat = d.reshape(-1)
        index = cell * self._nodes_per_cell + node if self._mono else self._offsets[cell] + node
        raise _singular("Hines", cell, node, float(flat[index]))

    def _layout(self) -> str:
        return "shared structure (MonoBatch)" if self._mono else "per-cell structure"


class SerialHines(_CpuHines):
    """Algorithm 1 of the papers, one cell after another on one core."""

    name = "serial"

    def solve(self, d: np.ndarray, rhs: np.ndarray) -> None:
        cell, node = hines_serial(self._parent, self._offsets, self._u, self._l,
                                  d.reshape(-1), rhs.reshape(-1), self._n_cells, not self._mono)
        if cell >= 0:
            self._raise(d, cell, node)

    def describe(self) -> str:
        return f"Numba, one core, cell after cell, {self._layout()}, {self.dtype.name}"


class MulticoreHines(_CpuHines):
    """Cells spread over all cores with ``numba.prange`` (the papers' OpenMP baseline).

    Option ``threads``: number of threads; by default Numba's current setting
    (``numba.set_num_threads``, ``NUMBA_NUM_THREADS``).
    """

    name = "multicore"
    _options = ("threads",)

    def __init__(self, structure, *, dtype, threads: int | None = None, **options):
        super().__init__(structure, dtype=dtype, **options)
        self._threads = _Threads(_check_threads(threads))
        self._status = np.empty(self._n_cells, dtype=np.int64)

    def solve(self, d: np.ndarray, rhs: np.ndarray) -> None:
        with self._threads:
            cell, node = hines_parallel(self._parent, self._offsets, self._u, self._l,
                                        d.reshape(-1), rhs.reshape(-1), self._n_cells,
                                        not self._mono, self._status)
        if cell >= 0:
            self._raise(d, cell, node)

    def describe(self) -> str:
        return (f"Numba prange over cells, {self._threads.count()} threads "
                f"({_threading_layer()}), {self._layout()}, {self.dtype.name}")


def _threading_layer() -> str:
    try:
        return f"{numba.threading_layer()} threading layer"
    except ValueError:  # Numba picks its layer when the first parallel kernel runs
        return "threading layer chosen at first solve"


class _CpuTridiagonal:
    """Shared set-up of the CPU tridiagonal backends; ``shape`` is a
    :class:`hinesbatch.solvers.tridiagonal.TridiagonalShape`."""

    kind = "tridiagonal"
    xp = np
    _options: tuple[str, ...] = ()

    @classmethod
    def available(cls) -> tuple[bool, str]:
        return True, ""

    def __init__(self, shape, *, dtype, **options):
        _check_options(self.name, options, self._options)
        self.dtype = np.dtype(dtype)
        self._n = shape.n
        self._lengths = shape.lengths_or_full()  # read-only int64[batch]

    def _raise(self, d: np.ndarray, system: int, row: int):
        raise _singular("tridiagonal", system, row, float(d[system, row]))


class SerialTridiagonal(_CpuTridiagonal):
    """The Thomas algorithm, one system after another on one core."""

    name = "serial"

    def solve(self, dl, d, du, rhs) -> None:
        k, row = thomas_serial(dl.reshape(-1), d.reshape(-1), du.reshape(-1), rhs.reshape(-1),
                               self._n, self._lengths)
        if k >= 0:
            self._raise(d, k, row)

    def describe(self) -> str:
        return f"Numba Thomas, one core, system after system, {self.dtype.name}"


class MulticoreTridiagonal(_CpuTridiagonal):
    """The Thomas algorithm, systems spread over Numba's threads (option ``threads``)."""

    name = "multicore"
    _options = ("threads",)

    def __init__(self, shape, *, dtype, threads: int | None = None, **options):
        super().__init__(shape, dtype=dtype, **options)
        self._threads = _Threads(_check_threads(threads))
        self._status = np.empty(self._lengths.size, dtype=np.int64)

    def solve(self, dl, d, du, rhs) -> None:
        with self._threads:
            k, row = thomas_parallel(dl.reshape(-1), d.reshape(-1), du.reshape(-1),
                                     rhs.reshape(-1), self._n, self._lengths, self._status)
        if k >= 0:
            self._raise(d, k, row)

    def describe(self) -> str:
        return (f"Numba Thomas, prange over systems, {self._threads.count()} threads "
                f"({_threading_layer()}), {self.dtype.name}")


registry.register(MulticoreHines, auto_rank=1)
registry.register(SerialHines, auto_rank=2)
registry.register(MulticoreTridiagonal, auto_rank=1)
registry.register(SerialTridiagonal, auto_rank=2)
