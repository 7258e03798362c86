"""The CPU backends: ``serial`` and ``multicore`` (Numba), for Hines and tridiagonal batches.

Each class implements the backend protocol of :mod:`hinesbatch.solvers.registry`: analysis
in ``__init__`` (structure arrays converted once to the plan's dtype), the hot loop in ``solve``.
A backend object holds nothing a solve writes: the kernels' pivot status is allocated per
call (one int64 per cell or system), so one plan may be solved from several threads at once. Validation, dtype and aliasing rules live in the front ends
(:mod:`hinesbatch.solvers.plan`, :mod:`hinesbatch.solvers.tridiagonal`).
"""
from __future__ import annotations

import contextlib
import threading

import numba
import numpy as np

from ...errors import singular_pivot_error
from ...tree.structure import MonoBatch
from ..suitability import large_enough
from .hines_kernels import cells_parallel, cells_serial, shared_parallel, shared_serial
from .tridiagonal_kernels import thomas_parallel, thomas_serial

__all__ = ["SerialHines", "MulticoreHines", "SerialTridiagonal", "MulticoreTridiagonal",
           "THREADS_MIN_UNKNOWNS"]

#: Below this many unknowns in a batch, starting Numba's threads costs more than they save
#: (one 923-node cell steps about 7x slower on two threads than on one), so ``auto`` passes
#: the multicore backends over.
THREADS_MIN_UNKNOWNS = 20_000


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


class _Threaded:
    """``suits`` for ``auto``: threads only for batches large enough to gain from them."""

    @classmethod
    def suits(cls, subject) -> tuple[bool, str]:
        return large_enough(subject, THREADS_MIN_UNKNOWNS, "starting threads")


class _Threads:
    """Runs Numba parallel kernels on ``threads`` threads, or on Numba's current setting."""

    def __init__(self, threads: int | None):
        self.threads = threads

    def count(self) -> int:
        return self.threads or numba.get_num_threads()

    def __str__(self) -> str:
        n = self.count()
        return f"{n} thread{'' if n == 1 else 's'}"

    @contextlib.contextmanager
    def running(self):
        """Set Numba's (thread-local) thread count for the block, then restore it; the block
        runs alone when the threading layer cannot run kernels for several threads at once
        (:data:`_WORKQUEUE_LOCK`)."""
        guarded = not _layer_takes_threads
        if guarded:
            _WORKQUEUE_LOCK.acquire()
        old = None
        try:
            if self.threads is not None:
                old = numba.get_num_threads()
                numba.set_num_threads(self.threads)
            yield
        finally:
            if old is not None:
                numba.set_num_threads(old)
            if guarded:
                _learn_layer()
                _WORKQUEUE_LOCK.release()


#: Numba's ``workqueue`` threading layer aborts the process when parallel kernels are launched
#: from two threads at once; ``omp`` and ``tbb`` take them. Parallel kernels run under this
#: lock until the first one has told which layer Numba chose, and for good if it is
#: ``workqueue``.
_WORKQUEUE_LOCK = threading.Lock()
_layer_takes_threads: bool | None = None


def _learn_layer() -> None:
    global _layer_takes_threads
    if _layer_takes_threads is None:
        with contextlib.suppress(ValueError):  # no parallel kernel has run yet
            _layer_takes_threads = numba.threading_layer() != "workqueue"


def _check_lockstep(lockstep) -> int:
    if isinstance(lockstep, bool) or not isinstance(lockstep, (int, np.integer)):
        raise TypeError(f"lockstep must be an int, got {type(lockstep).__name__}")
    if not 1 <= lockstep <= 1024:
        raise ValueError(f"lockstep must be between 1 and 1024 cells, got {lockstep}")
    return int(lockstep)


class _Cpu:
    """What both CPU backend families share: NumPy arrays, always available, the option
    check, the dtype and the ``lockstep`` option (how many consecutive cells or systems one
    thread advances together; any value gives bit-identical results)."""

    xp = np
    _options: tuple[str, ...] = ("lockstep",)
    _default_lockstep = 1

    @classmethod
    def available(cls) -> tuple[bool, str]:
        return True, ""

    def __init__(self, *, dtype, lockstep: int | None, options: dict):
        _check_options(self.name, options, self._options)
        self.dtype = np.dtype(dtype)
        self._lockstep = _check_lockstep(self._default_lockstep if lockstep is None else lockstep)


class _CpuHines(_Cpu):
    """Shared set-up of the CPU Hines backends.

    Option ``lockstep`` (shared-structure batches): how many consecutive cells one thread
    advances together through each node. Any value gives bit-identical results; more than
    one hides the latency of the divisions (about 2-3x faster at 8). Batches with per-cell
    structure are solved cell after cell whatever its value.
    """

    kind = "hines"

    def __init__(self, structure, *, dtype, lockstep: int | None = None, **options):
        super().__init__(dtype=dtype, lockstep=lockstep, options=options)
        self._mono = isinstance(structure, MonoBatch)
        s = structure.cell if self._mono else structure
        self._parent = s.parent  # read-only int32
        self._offsets = s.cell_offsets  # read-only int64
        self._u = _readonly(s.u, self.dtype)
        self._l = _readonly(s.lower, self.dtype)
        self._n_cells = structure.n_cells

    def _status(self) -> np.ndarray:
        """Per-call scratch of the kernels: first bad pivot per cell."""
        return np.empty(self._n_cells, dtype=np.int64)

    def _raise(self, d: np.ndarray, cell: int, node: int):
        flat = d.reshape(-1)
        index = cell * self._parent.size + node if self._mono else self._offsets[cell] + node
        raise singular_pivot_error("Hines", cell, node, float(flat[index]))

    def _layout(self) -> str:
        if self._mono:
            k = self._lockstep
            how = "cell after cell" if k == 1 else f"{k} cells in lockstep"
            return f"shared structure (MonoBatch), {how}"
        return "per-cell structure, cell after cell"


class SerialHines(_CpuHines):
    """Algorithm 1 of the papers on one core (``lockstep`` 1 by default: the papers'
    sequential baseline, one cell after another)."""

    name = "serial"

    def solve(self, d: np.ndarray, rhs: np.ndarray) -> None:
        d1, rhs1 = d.reshape(-1), rhs.reshape(-1)
        if self._mono:
            cell, node = shared_serial(self._parent, self._u, self._l, d1, rhs1,
                                       self._n_cells, self._lockstep, self._status())
        else:
            cell, node = cells_serial(self._parent, self._offsets, self._u, self._l, d1, rhs1)
        if cell >= 0:
            self._raise(d, cell, node)

    def describe(self) -> str:
        return f"Numba, one core, {self._layout()}, {self.dtype.name}"


class MulticoreHines(_Threaded, _CpuHines):
    """Cells spread over all cores with ``numba.prange`` (the papers' OpenMP baseline).

    Options: ``threads`` (default: Numba's current setting, ``numba.set_num_threads`` or
    ``NUMBA_NUM_THREADS``); ``lockstep`` (default 8).
    """

    name = "multicore"
    _options = ("lockstep", "threads")
    _default_lockstep = 8

    def __init__(self, structure, *, dtype, threads: int | None = None, **options):
        super().__init__(structure, dtype=dtype, **options)
        self._threads = _Threads(_check_threads(threads))

    def solve(self, d: np.ndarray, rhs: np.ndarray) -> None:
        d1, rhs1 = d.reshape(-1), rhs.reshape(-1)
        with self._threads.running():
            if self._mono:
                cell, node = shared_parallel(self._parent, self._u, self._l, d1, rhs1,
                                             self._n_cells, self._lockstep, self._status())
            else:
                cell, node = cells_parallel(self._parent, self._offsets, self._u, self._l,
                                            d1, rhs1, self._status())
        if cell >= 0:
            self._raise(d, cell, node)

    def describe(self) -> str:
        return (f"Numba prange over cells, {self._threads} "
                f"({_threading_layer()}), {self._layout()}, {self.dtype.name}")


def _threading_layer() -> str:
    try:
        return f"{numba.threading_layer()} threading layer"
    except ValueError:  # Numba picks its layer when the first parallel kernel runs
        return "threading layer chosen at first solve"


class _CpuTridiagonal(_Cpu):
    """Shared set-up of the CPU tridiagonal backends; ``shape`` is a
    :class:`hinesbatch.solvers.tridiagonal.TridiagonalShape`.

    Option ``lockstep``: how many consecutive systems one thread advances together row by
    row (bit-identical results for any value; more than one hides the division latency).
    """

    kind = "tridiagonal"

    def __init__(self, shape, *, dtype, lockstep: int | None = None, **options):
        super().__init__(dtype=dtype, lockstep=lockstep, options=options)
        self._n = shape.n
        self._lengths = shape.lengths_or_full()  # read-only int64[batch]

    def _status(self) -> np.ndarray:
        """Per-call scratch of the kernels: first bad pivot per system."""
        return np.empty(self._lengths.size, dtype=np.int64)

    def _raise(self, d: np.ndarray, system: int, row: int):
        raise singular_pivot_error("tridiagonal", system, row, float(d[system, row]))

    def _how(self) -> str:
        k = self._lockstep
        return "system after system" if k == 1 else f"{k} systems in lockstep"


class SerialTridiagonal(_CpuTridiagonal):
    """The Thomas algorithm on one core (``lockstep`` 1 by default: one system after another)."""

    name = "serial"

    def solve(self, dl, d, du, rhs) -> None:
        k, row = thomas_serial(dl.reshape(-1), d.reshape(-1), du.reshape(-1), rhs.reshape(-1),
                               self._n, self._lengths, self._lockstep, self._status())
        if k >= 0:
            self._raise(d, k, row)

    def describe(self) -> str:
        return f"Numba Thomas, one core, {self._how()}, {self.dtype.name}"


class MulticoreTridiagonal(_Threaded, _CpuTridiagonal):
    """The Thomas algorithm, systems spread over Numba's threads (options ``threads``,
    ``lockstep`` default 4: four arrays per system, so 16 memory streams per thread; 8 was
    slower on the 2-core development machine)."""

    name = "multicore"
    _options = ("lockstep", "threads")
    _default_lockstep = 4

    def __init__(self, shape, *, dtype, threads: int | None = None, **options):
        super().__init__(shape, dtype=dtype, **options)
        self._threads = _Threads(_check_threads(threads))

    def solve(self, dl, d, du, rhs) -> None:
        with self._threads.running():
            k, row = thomas_parallel(dl.reshape(-1), d.reshape(-1), du.reshape(-1),
                                     rhs.reshape(-1), self._n, self._lengths, self._lockstep,
                                     self._status())
        if k >= 0:
            self._raise(d, k, row)

    def describe(self) -> str:
        return (f"Numba Thomas, prange over systems, {self._threads} ({_threading_layer()}), "
                f"{self._how()}, {self.dtype.name}")

