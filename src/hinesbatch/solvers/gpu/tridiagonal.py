"""The ``gpu`` backend of kind ``tridiagonal``: batched tridiagonal solves in CUDA kernels.

Variants (option ``variant``; docs/tridiagonal.md has the algorithms and measurements):

* ``"chunked"``: several threads per system, the system held in registers (a partitioned
  Thomas / PCR hybrid); reads the canonical ``(batch, n)`` values directly, each value crossing
  device memory once each way (40 bytes per unknown in fp64). Systems longer than 512 rows are
  cut into segments solved in three launches.
* ``"thomas"``: cuThomasBatch / cuThomasVBatch of Valero-Lara et al. (2018), one thread per
  system on the interleaved ``(n, batch)`` layout; the canonical entry point transposes in and
  out. Variable sizes: ``padding="cp"`` (computing padding, default) or ``"ncp"``.
* ``"auto"`` (default): ``chunked`` (see :data:`AUTO_REASON`); for values already interleaved,
  ``thomas`` from about 100000 systems (:func:`auto_native_variant`).

Singular systems (a zero, tiny or non-finite pivot; see ``kernels/tridiagonal_common.cuh``) are
never returned silently: ``on_singular="raise"`` (default) raises
:class:`~hinesbatch.errors.SingularSystemError` for the lowest such system; ``"report"`` sets
their solution rows to NaN and lists them in :attr:`GpuTridiagonal.last_singular`;
``"pivot"`` re-solves them with cuSPARSE's LU with partial pivoting
(``gtsvInterleavedBatch`` algorithm 1) and lists them in ``last_singular`` too.

Values already interleaved (``(n, batch)``, row ``i`` of system ``k`` at ``[i, k]``) skip the
transposes: :meth:`GpuTridiagonal.solve_interleaved` (see :func:`native_solver`).
"""
from __future__ import annotations

import threading

import numpy as np

from ...errors import SingularSystemError, singular_pivot_error
from . import cusparse as _cusparse
from . import options as check
from .device import availability, cupy_module, device_properties, suits_gpu
from .tridiagonal_kernels import SEGMENT_ROWS, ChunkedLaunch, ThomasLaunch, reset_flags

__all__ = ["GpuTridiagonal", "native_solver", "VARIANTS", "AUTO_REASON", "auto_variant",
           "auto_native_variant"]

VARIANTS = ("auto", "chunked", "thomas")
ON_SINGULAR = ("raise", "report", "pivot")
PADDINGS = ("cp", "ncp")
_OPTIONS = ("variant", "padding", "segment_rows", "on_singular")
_CLEAR = np.uint64(0xFFFFFFFFFFFFFFFF)

#: Why ``variant="auto"`` takes ``chunked`` (benchmarks/results/h200/tridiagonal.md).
AUTO_REASON = ("canonical values are read directly and each crosses device memory once each "
               "way; one thread per system (thomas) needs transposes and spills c' and d'")


def auto_variant(n: int, batch: int) -> tuple[str, str]:
    """The variant ``auto`` picks for ``batch`` systems of ``n`` rows, and why."""
    return "chunked", f"auto: {AUTO_REASON}"


def auto_native_variant(n: int, batch: int) -> str:
    """The variant ``auto`` uses for values already interleaved (:meth:`GpuTridiagonal.solve_interleaved`).

    ``chunked`` reads an interleaved tile as runs of a few systems per row, which costs it
    bandwidth when the batch is large; cuThomasBatch (``thomas``) reads whole rows of systems.
    Measured on the H200 (benchmarks/results/h200/tridiagonal.md): ``thomas`` is faster from
    about 100000 systems of 128 rows or more (2.5 against 4.0 ms at 256000 x 512 in fp64),
    ``chunked`` below.
    """
    return "thomas" if batch >= 100_000 and n >= 128 else "chunked"


def auto_segment_rows(n: int, batch: int, sm_count: int) -> int:
    """Rows per segment for ``n > 512``: the longest segment (512, 256, 128) that still gives
    about 16 groups of lanes per multiprocessor, so that few long systems fill the device."""
    for q in sorted(SEGMENT_ROWS, reverse=True):
        if batch * -(-n // q) >= 16 * sm_count:
            return q
    return min(SEGMENT_ROWS)


class GpuTridiagonal:
    """Batched tridiagonal solves on the current CUDA device.

    Parameters
    ----------
    shape : TridiagonalShape
        ``n`` (row length), ``batch`` and optional ``lengths``.
    dtype : numpy.dtype
        float32 or float64.
    variant : {"auto", "chunked", "thomas"}
    padding : {"cp", "ncp"}, optional
        ``thomas`` only: computing padding (every thread walks ``n`` rows; default) or not.
    segment_rows : {128, 256, 512}, optional
        ``chunked`` only, systems longer than 512 rows: rows per segment (default: chosen from
        the batch shape, see :func:`auto_segment_rows`).
    on_singular : {"raise", "report", "pivot"}
        What a system with a zero, tiny or non-finite pivot gets (module docstring).

    Attributes
    ----------
    last_singular : int64 ndarray or None
        Systems flagged by the last solve (ascending), ``None`` before the first solve.
    """

    name = "gpu"
    kind = "tridiagonal"
    suits = staticmethod(suits_gpu)

    @classmethod
    def available(cls) -> tuple[bool, str]:
        return availability()

    def __init__(self, shape, *, dtype, variant: str = "auto", padding: str | None = None,
                 segment_rows: int | None = None, on_singular: str = "raise", **options):
        if options:
            raise TypeError(f"backend 'gpu' got unknown option(s) {', '.join(sorted(options))}; "
                            f"its options: {', '.join(_OPTIONS)}")
        check.one_of("variant", variant, VARIANTS)
        check.one_of("on_singular", on_singular, ON_SINGULAR)
        check.optional(check.one_of, "padding", padding, choices=PADDINGS)
        check.optional(check.one_of, "segment_rows", segment_rows, choices=SEGMENT_ROWS)
        if variant == "auto":
            variant, self.reason = auto_variant(shape.n, shape.batch)
        else:
            self.reason = "requested"
        if padding is not None and variant != "thomas":
            raise ValueError("padding applies to variant 'thomas' only")
        if segment_rows is not None and variant != "chunked":
            raise ValueError("segment_rows applies to variant 'chunked' only")
        if shape.n >= 2**31 - 1024:
            raise ValueError(f"n = {shape.n} rows: the GPU kernels index rows with 32-bit ints")
        self.variant = variant
        self.xp = cupy_module()
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise TypeError(f"the GPU kernels take float32 or float64, not {self.dtype}")
        self.n, self.batch = shape.n, shape.batch
        self.lengths = shape.lengths  # host int64, read-only, or None
        self.on_singular = on_singular
        self.device = int(self.xp.cuda.Device().id)
        if variant == "thomas":
            self.padding = padding or "cp"
            self._launch = ThomasLaunch(self.n, self.batch, self.dtype, self.device,
                                        cp=self.padding == "cp")
        else:
            self.padding = None
            if segment_rows is None:
                segment_rows = auto_segment_rows(self.n, self.batch,
                                                 device_properties(self.device)["sm_count"])
            self._launch = ChunkedLaunch(self.n, self.batch, self.dtype, self.device,
                                         segment_rows=segment_rows)
        self._native = self._launch  # what solve_interleaved runs
        if self.reason.startswith("auto") and auto_native_variant(self.n, self.batch) == "thomas":
            self._native = ThomasLaunch(self.n, self.batch, self.dtype, self.device, cp=True)
        self.last_singular: np.ndarray | None = None
        self._dev: dict | None = None  # lengths, status, flag: allocated on first use
        self._interleaved = None       # thomas, canonical entry: (n, batch) copies
        self._cbuf = None              # thomas, native entry: c' scratch
        self._last = None              # what check_singular needs about the last launch
        self._lock = threading.Lock()  # solve: one call at a time

    # -- protocol -------------------------------------------------------------------------
    def describe(self) -> str:
        if self.variant == "thomas":
            how = (f"thomas (cuThomasBatch: one thread per system, interleaved layout, "
                   f"transposes around it; variable sizes: {self.padding.upper()})")
        else:
            how = self._launch.describe()
        native = ("" if self._native is self._launch else
                  "; interleaved values (solve_interleaved): thomas, cuThomasBatch (auto: faster "
                  "there at this batch size)")
        return (f"variant {how} [{self.reason}]{native}; on_singular={self.on_singular!r}; "
                f"device {self.device}; {self.dtype.name}")

    def solve(self, dl, d, du, rhs) -> None:
        """Solve canonical ``(batch, n)`` systems: the solution is written over ``rhs`` below
        each length. ``dl``, ``d`` and ``du`` are not modified.

        Calls from several host threads take turns: the launch's flags and scratch are the
        backend's, and the call waits for its work before it returns. (:meth:`enqueue` and
        :meth:`check_singular` are two halves of one call and belong to one thread.)
        """
        with self._lock:
            self.enqueue(dl, d, du, rhs, rhs)
            self.check_singular()

    def enqueue(self, dl, d, du, rhs, out) -> None:
        """Launch the solve of canonical systems into ``out`` (``(batch, n)``, may be ``rhs``)
        without waiting; :meth:`check_singular` then deals with singular systems."""
        self._check_arrays((dl, d, du, rhs, out), (self.batch, self.n))
        dev = self._buffers()
        reset_flags(self.xp, dev["status"], dev["flag"])
        if self.variant == "chunked":
            self._launch.solve(dl, d, du, rhs, out, dev["lengths"], dev["status"], dev["flag"],
                               interleaved=False)
        else:
            t = self._interleaved_copies()
            self._launch.interleave((dl, d, du, rhs), t)
            # c' over the copy of d, d' and then x over the copy of rhs
            self._launch.solve(t[0], t[1], t[2], t[3], t[1], t[3], dev["lengths"],
                               dev["status"], dev["flag"], interleaved=True)
            self._launch.deinterleave(t[3], out, dev["lengths"], dev["status"])
        self._last = ("canonical", dl, d, du, rhs, out)

    def solve_interleaved(self, dl, d, du, rhs, *, out=None, check: bool = True):
        """Solve systems kept interleaved: ``(n, batch)`` CuPy arrays of the plan's dtype, row
        ``i`` of system ``k`` at ``[i, k]`` (the layout of cuSPARSE's gtsvInterleavedBatch).

        The inputs are not modified. ``out``: ``(n, batch)`` array for the solution (rows
        past each system's length are not written); default a copy of ``rhs``. ``check``:
        deal with singular systems now (one 8-byte read that waits for the solve); ``False``
        leaves it to :meth:`check_singular`. Returns ``out``.
        """
        if out is None:
            out = rhs.copy()
        self._check_arrays((dl, d, du, rhs, out), (self.n, self.batch))
        dev = self._buffers()
        reset_flags(self.xp, dev["status"], dev["flag"])
        if isinstance(self._native, ChunkedLaunch):
            self._native.solve(dl, d, du, rhs, out, dev["lengths"], dev["status"], dev["flag"],
                               interleaved=True)
        else:
            if self._cbuf is None:
                self._cbuf = self.xp.empty((self.n, self.batch), self.dtype)
            self._native.solve(dl, d, du, rhs, self._cbuf, out, dev["lengths"], dev["status"],
                               dev["flag"], interleaved=True)
        self._last = ("interleaved", dl, d, du, rhs, out)
        if check:
            self.check_singular()
        return out

    # -- singular systems ----------------------------------------------------------------
    def check_singular(self) -> None:
        """Apply ``on_singular`` to the systems the last launch flagged (waits for it)."""
        if self._last is None or not self.batch or not self.n:
            self.last_singular = np.zeros(0, dtype=np.int64)
            return
        dev = self._dev
        key = np.uint64(dev["flag"].get()[0])
        if key == _CLEAR:
            self.last_singular = np.zeros(0, dtype=np.int64)
            return
        bad = self.xp.flatnonzero(dev["status"] != np.uint32(0xFFFFFFFF))
        self.last_singular = bad.get().astype(np.int64)
        if self.on_singular == "raise":
            system, row = int(key >> np.uint64(32)), int(key & np.uint64(0xFFFFFFFF))
            raise singular_pivot_error(
                "tridiagonal", system, row, tiny=True,
                detail=f"{bad.size} system(s) flagged; on_singular='pivot' re-solves them with "
                       f"partial pivoting, 'report' returns NaN for them")
        layout, dl, d, du, rhs, out = self._last
        canon = (lambda a: a) if layout == "canonical" else (lambda a: a.T)
        m = self.n if self.lengths is None else dev["lengths"]
        inside = self.xp.arange(self.n) < (m if isinstance(m, int) else m[bad][:, None])
        if self.on_singular == "report":
            x = canon(out)[bad]
            canon(out)[bad] = self.xp.where(inside, self.xp.asarray(np.nan, self.dtype), x)
            return
        x = _cusparse.pivoting_solve(canon(dl), canon(d), canon(du), canon(rhs), m, bad)
        still = self.xp.flatnonzero(self.xp.any(inside & ~self.xp.isfinite(x), axis=1))
        if still.size:
            k = int(self.last_singular[int(still[0])])
            raise SingularSystemError(
                f"system {k} is singular: LU with partial pivoting (cuSPARSE "
                f"gtsvInterleavedBatch algorithm 1) gave a non-finite solution", cell=k,
                node=int(self.xp.argmax(~self.xp.isfinite(x[int(still[0])]))))
        canon(out)[bad] = self.xp.where(inside, x, canon(out)[bad])

    # -- buffers and checks --------------------------------------------------------------
    def _buffers(self) -> dict:
        if self._dev is None:
            cp = self.xp
            self._dev = {
                "lengths": None if self.lengths is None else cp.asarray(self.lengths, np.int32),
                "status": cp.empty(self.batch, np.uint32),
                "flag": cp.empty(1, np.uint64),
            }
        return self._dev

    def _interleaved_copies(self):
        if self._interleaved is None:
            self._interleaved = tuple(self.xp.empty((self.n, self.batch), self.dtype)
                                      for _ in range(4))
        return self._interleaved

    def scratch_bytes(self) -> int:
        """Device memory this plan holds beyond the caller's arrays (bytes), as allocated now
        (the thomas buffers appear on first use of their entry point)."""
        total = self.batch * 4 + 8 + (0 if self.lengths is None else self.batch * 4)
        if self.variant == "chunked":
            total += self._launch.scratch_bytes()
        for a in (self._interleaved or ()) + ((self._cbuf,) if self._cbuf is not None else ()):
            total += a.nbytes
        return total

    def _check_arrays(self, arrays, shape) -> None:
        for name, a in zip(("dl", "d", "du", "rhs", "out"), arrays):
            if not isinstance(a, self.xp.ndarray):
                raise TypeError(f"{name} must be a CuPy array, got {type(a).__name__}")
            if a.shape != shape:
                raise ValueError(f"{name} has shape {a.shape}, expected {shape}")
            if a.dtype != self.dtype:
                raise TypeError(f"{name} has dtype {a.dtype}, expected {self.dtype}")
            if not a.flags.c_contiguous:
                raise ValueError(f"{name} must be C-contiguous")
            if a.device.id != self.device:
                raise ValueError(f"{name} is on device {a.device.id}, the plan on {self.device}")


def native_solver(plan, dtype=np.float64) -> GpuTridiagonal:
    """The ``gpu`` backend object behind a tridiagonal ``plan`` for ``dtype``: its
    :meth:`~GpuTridiagonal.solve_interleaved` takes interleaved values without transposes, and
    :attr:`~GpuTridiagonal.last_singular` lists the systems the last solve flagged.
    ``TypeError`` if the plan does not run on this backend."""
    impl = plan._implementation(np.dtype(dtype))
    if not isinstance(impl, GpuTridiagonal):
        raise TypeError(f"plan runs on backend {plan.backend_name!r}, not the GPU tridiagonal one")
    return impl

