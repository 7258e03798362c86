"""cuSPARSE's batched tridiagonal solvers, through CuPy's low-level bindings.

* ``gtsv2StridedBatch``: CR-PCR, one system after another in memory (``(batch, stride)``
  arrays), no pivoting; ``dl``, ``d``, ``du`` are read, the solution overwrites ``x``.
* ``gtsvInterleavedBatch``: interleaved ``(m, batch)`` arrays; algorithm 0 is cuThomas (the
  Barcelona cuThomasBatch, no pivoting), 1 LU with partial pivoting, 2 QR. It overwrites all of
  its inputs.

Both want ``dl[0] = 0`` and ``du[m-1] = 0`` and ``m >= 3``. :class:`CusparseTridiagonal` (backend
``cusparse`` of kind ``tridiagonal``, the reference of the tests and benchmarks) therefore solves
copies: the corner entries set to zero, systems shorter than the row length ``n`` (variable
``lengths``) and ``n < 3`` padded with identity rows (``dl = du = 0``, ``d = 1``, ``rhs = 0``),
which leave the other rows' solution unchanged. cuSPARSE reports no zero pivots: a system
whose solution comes out non-finite is reported as singular, with the row of its first zero or
non-finite pivot in Thomas order when there is one (found on the host, for that system only).

:func:`pivoting_solve` (gtsvInterleavedBatch algorithm 1) is what the ``gpu`` backend's
``on_singular="pivot"`` uses for the systems it flagged.
"""
from __future__ import annotations

import threading

import numpy as np

from ...errors import SingularSystemError
from . import options as check
from .device import availability, cupy_module

__all__ = ["CusparseTridiagonal", "Routine", "padded_copies", "pivoting_solve",
           "first_bad_pivot"]

ROUTINES = ("strided", "interleaved")
ALGORITHMS = (0, 1, 2)
_PREFIX = {np.dtype(np.float32): "s", np.dtype(np.float64): "d"}


def _lib():
    from cupy_backends.cuda.libs import cusparse  # noqa: PLC0415  (lazy: CuPy is optional)

    return cusparse


def _handle(cupy):
    """CuPy's cuSPARSE handle of the current device, bound to the current stream."""
    handle = cupy.cuda.device.get_cusparse_handle()
    _lib().setStream(handle, cupy.cuda.get_current_stream().ptr)
    return handle


class Routine:
    """One cuSPARSE routine on prepared arrays: ``gtsv2StridedBatch`` (``(batch, m)`` arrays)
    or ``gtsvInterleavedBatch`` with ``algorithm`` (``(m, batch)`` arrays). ``m >= 3`` and the
    corner entries zero are the caller's business (:func:`padded_copies`)."""

    def __init__(self, routine: str, m: int, batch: int, dtype, *, algorithm: int = 0):
        check.one_of("routine", routine, ROUTINES)
        check.one_of("algorithm", algorithm, ALGORITHMS)
        self.routine, self.m, self.batch, self.algorithm = routine, int(m), int(batch), algorithm
        self.dtype = np.dtype(dtype)
        if self.dtype not in _PREFIX:
            raise TypeError(f"cuSPARSE's gtsv solvers take float32 or float64, not {self.dtype}")
        if self.m < 3:
            raise ValueError(f"cuSPARSE's gtsv solvers need m >= 3, got {self.m}")
        p = _PREFIX[self.dtype]
        name = "gtsv2StridedBatch" if routine == "strided" else "gtsvInterleavedBatch"
        lib = _lib()
        self._size_fn = getattr(lib, f"{p}{name}_bufferSizeExt")
        self._fn = getattr(lib, f"{p}{name}")

    @property
    def label(self) -> str:
        return ("gtsv2StridedBatch" if self.routine == "strided"
                else f"gtsvInterleavedBatch algo {self.algorithm}")

    def buffer_size(self, dl, d, du, x) -> int:
        """Workspace bytes cuSPARSE asks for (``*_bufferSizeExt``)."""
        cupy = cupy_module()
        ptrs = (dl.data.ptr, d.data.ptr, du.data.ptr, x.data.ptr)
        if self.routine == "strided":
            return int(self._size_fn(_handle(cupy), self.m, *ptrs, self.batch, self.m))
        return int(self._size_fn(_handle(cupy), self.algorithm, self.m, *ptrs, self.batch))

    def __call__(self, dl, d, du, x, workspace) -> None:
        """Solve in place on the current stream (x <- solution; interleaved: all overwritten)."""
        cupy = cupy_module()
        ptrs = (dl.data.ptr, d.data.ptr, du.data.ptr, x.data.ptr)
        buf = workspace.data.ptr if workspace is not None and workspace.size else 0
        if self.routine == "strided":
            self._fn(_handle(cupy), self.m, *ptrs, self.batch, self.m, buf)
        else:
            self._fn(_handle(cupy), self.algorithm, self.m, *ptrs, self.batch, buf)


def padded_copies(xp, dl, d, du, rhs, m, *, rows: int, interleaved: bool):
    """cuSPARSE-ready copies of canonical ``(batch, n)`` systems: ``rows >= n`` rows each, rows
    at and past each length ``m[k]`` identity rows, ``dl[0] = du[m-1] = 0``; returned as
    ``(batch, rows)`` arrays, or ``(rows, batch)`` when ``interleaved``. ``m``: int array of
    shape ``(batch, 1)`` on the device, or an int."""
    batch, n = rhs.shape
    col = xp.arange(rows)

    def widen(a, fill):
        if rows == n:
            return a
        out = xp.full((batch, rows), fill, dtype=a.dtype)
        out[:, :n] = a
        return out

    inside = col < m
    zero = xp.zeros((), dtype=rhs.dtype)
    out = (xp.where(inside & (col >= 1), widen(dl, 0), zero),
           xp.where(inside, widen(d, 1), xp.ones((), dtype=rhs.dtype)),
           xp.where(col < m - 1, widen(du, 0), zero),
           xp.where(inside, widen(rhs, 0), zero))
    if interleaved:
        out = tuple(xp.ascontiguousarray(a.T) for a in out)
    return out


def first_bad_pivot(dl, d, du, m: int) -> int:
    """Row of the first zero or non-finite pivot of Thomas elimination of one system (host
    arrays), or -1."""
    c = 0.0
    for i in range(m):
        p = float(d[i]) - (float(dl[i]) * c if i else 0.0)
        if p == 0.0 or not np.isfinite(p):
            return i
        c = float(du[i]) / p if i + 1 < m else 0.0
    return -1


def pivoting_solve(dl, d, du, rhs, m, systems):
    """Solve canonical systems ``systems`` (CuPy int array) of ``(batch, n)`` CuPy arrays with
    gtsvInterleavedBatch algorithm 1 (LU with partial pivoting). ``m``: lengths (CuPy
    ``(batch,)`` int array) or an int. Returns their ``(len(systems), n)`` solutions (rows past
    each length: rhs's)."""
    cupy = cupy_module()
    n = rhs.shape[1]
    mm = m[systems][:, None] if not isinstance(m, int) else m
    sub = [a[systems] for a in (dl, d, du, rhs)]
    rows = max(n, 3)
    dlw, dw, duw, xw = padded_copies(cupy, *sub, mm, rows=rows, interleaved=True)
    routine = Routine("interleaved", rows, int(systems.size), rhs.dtype, algorithm=1)
    work = cupy.empty(routine.buffer_size(dlw, dw, duw, xw), dtype=np.uint8)
    routine(dlw, dw, duw, xw, work)
    x = xw.T[:, :n]
    inside = cupy.arange(n) < mm
    return cupy.where(inside, x, sub[3])


class CusparseTridiagonal:
    """Backend ``cusparse`` (kind ``tridiagonal``): cuSPARSE's batched solvers as a reference.

    Parameters
    ----------
    shape : TridiagonalShape
    dtype : numpy.dtype
        float32 or float64.
    routine : {"interleaved", "strided"}
        ``gtsvInterleavedBatch`` (default) or ``gtsv2StridedBatch``.
    algorithm : {0, 1, 2}, optional
        gtsvInterleavedBatch's algorithm: 0 cuThomas (default), 1 LU with partial pivoting,
        2 QR. Not accepted with ``routine="strided"``.

    Each solve copies the inputs into cuSPARSE's layout with identity-row padding (see the
    module docstring), so it costs more than the routine alone; the benchmark times the
    routine alone on prepared arrays.
    """

    name = "cusparse"
    kind = "tridiagonal"
    xp = None

    @classmethod
    def available(cls) -> tuple[bool, str]:
        ok, why = availability()
        if not ok:
            return ok, why
        try:
            _lib()
        except ImportError as exc:
            return False, f"CuPy's cuSPARSE bindings failed to import: {exc}"
        return True, ""

    def __init__(self, shape, *, dtype, routine: str = "interleaved", algorithm=None, **options):
        if options:
            raise TypeError(f"backend 'cusparse' got unknown option(s) {', '.join(sorted(options))}; "
                            f"its options: routine, algorithm")
        check.one_of("routine", routine, ROUTINES)
        if routine == "strided" and algorithm is not None:
            raise ValueError("algorithm applies to routine='interleaved' only")
        algorithm = 0 if algorithm is None else algorithm
        check.one_of("algorithm", algorithm, ALGORITHMS)
        self.xp = cupy_module()
        self.dtype = np.dtype(dtype)
        self.n, self.batch = shape.n, shape.batch
        self.rows = max(self.n, 3)
        self._lengths = shape.lengths
        self._m_dev = None
        self.routine = Routine(routine, self.rows, max(self.batch, 1), self.dtype,
                               algorithm=algorithm)
        self._work = None
        self._lock = threading.Lock()  # solve: one call at a time (the workspace is shared)
        self.workspace_bytes: int | None = None

    def describe(self) -> str:
        pad = f", padded to {self.rows} rows" if self.rows > self.n else ""
        return f"cuSPARSE {self.routine.label}{pad}, {self.dtype.name}"

    def _m(self):
        if self._lengths is None:
            return self.n
        if self._m_dev is None:
            self._m_dev = self.xp.asarray(self._lengths)[:, None]
        return self._m_dev

    def solve(self, dl, d, du, rhs) -> None:
        """Solve canonical ``(batch, n)`` systems; the solution overwrites ``rhs`` below each
        length (rows past it are left as they are). Calls from several host threads take
        turns: the workspace is the backend's, and the check of the solution waits for it."""
        if not self.batch or not self.n:
            return
        with self._lock:
            self._solve(dl, d, du, rhs)

    def _solve(self, dl, d, du, rhs) -> None:
        cp = self.xp
        interleaved = self.routine.routine == "interleaved"
        m = self._m()
        dlw, dw, duw, xw = padded_copies(cp, dl, d, du, rhs, m, rows=self.rows,
                                         interleaved=interleaved)
        if self._work is None:
            self.workspace_bytes = self.routine.buffer_size(dlw, dw, duw, xw)
            self._work = cp.empty(self.workspace_bytes, dtype=np.uint8)
        self.routine(dlw, dw, duw, xw, self._work)
        x = (xw.T if interleaved else xw)[:, :self.n]
        inside = cp.arange(self.n) < m
        self._check(x, inside, dl, d, du)
        rhs[...] = cp.where(inside, x, rhs)

    def _check(self, x, inside, dl, d, du) -> None:
        bad = self.xp.flatnonzero(self.xp.any(inside & ~self.xp.isfinite(x), axis=1))
        if not bad.size:
            return
        k = int(bad[0])
        m = self.n if self._lengths is None else int(self._lengths[k])
        row = first_bad_pivot(dl[k].get(), d[k].get(), du[k].get(), m)
        if row < 0:
            row = int(self.xp.argmax(~self.xp.isfinite(x[k])))
        raise SingularSystemError(
            f"cuSPARSE {self.routine.label} returned a non-finite solution at system {k}, row "
            f"{row} (the first zero or non-finite pivot in Thomas order, else the first "
            f"non-finite entry); {int(bad.size)} system(s) affected", cell=k, node=row)

