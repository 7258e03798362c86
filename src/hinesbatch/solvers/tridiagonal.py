"""Batches of tridiagonal systems: plan once, solve many times, any registered backend.

System ``k`` of a batch is row ``k`` of four ``(batch, n)`` arrays and reads, for its rows
``i < m = lengths[k]``::

    dl[k, i]*x[k, i-1] + d[k, i]*x[k, i] + du[k, i]*x[k, i+1] = rhs[k, i]

``dl[k, 0]`` and ``du[k, m-1]`` are not read (cuSPARSE's ``gtsv`` convention), nor is
anything past ``m``. Entries of the solution past ``m`` are ``rhs``'s entries, returned
unchanged (neither read nor written by the solver; with ``check_finite`` they are not
checked either), so a padded batch costs nothing for its padding.

The backends are those of :mod:`hinesbatch.solvers.registry` with ``kind="tridiagonal"``
(CPU: ``serial``, ``multicore``); ``auto`` takes the first available in preference order.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..array_modules import array_module
from .backend_plans import BackendPlan
from .values import as_values, check_finite_rows, deliver, result_dtype, scratch, to_module

__all__ = ["TridiagonalShape", "TridiagonalPlan", "plan_tridiagonal", "solve_tridiagonal"]


@dataclass(frozen=True, eq=False)
class TridiagonalShape:
    """Sizes of a batch of tridiagonal systems: what a tridiagonal backend analyses.

    Parameters
    ----------
    n : int
        Row length of the ``(batch, n)`` arrays (the largest system size).
    batch : int
        Number of systems.
    lengths : int64[batch], read-only, or None
        Size of each system (``0 <= lengths[k] <= n``); ``None``: every system has ``n`` rows.
    """

    n: int
    batch: int
    lengths: np.ndarray | None = None

    def __post_init__(self):
        n, batch = _count(self.n, "n"), _count(self.batch, "batch")
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "batch", batch)
        if self.lengths is not None:
            object.__setattr__(self, "lengths", _check_lengths(self.lengths, n, batch))

    def __reduce__(self):
        # copies and pickles go through the constructor: checked, read-only lengths
        return (TridiagonalShape, (self.n, self.batch, self.lengths))

    @property
    def values_shape(self) -> tuple[int, int]:
        return (self.batch, self.n)

    def lengths_or_full(self) -> np.ndarray:
        """``lengths``, or ``n`` for every system when none were given (int64, read-only)."""
        if self.lengths is not None:
            return self.lengths
        full = np.full(self.batch, self.n, dtype=np.int64)
        full.flags.writeable = False
        return full


def _count(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return int(value)


def _check_lengths(lengths, n: int, batch: int) -> np.ndarray:
    if hasattr(lengths, "get"):  # CuPy: the sizes are analysed on the host
        lengths = lengths.get()
    lengths = np.asarray(lengths)
    if lengths.shape != (batch,):
        raise ValueError(f"lengths has shape {lengths.shape} but the batch has {batch} systems")
    if batch and not np.issubdtype(lengths.dtype, np.integer):
        raise TypeError(f"lengths must hold integers, got dtype {lengths.dtype}")
    bad = np.flatnonzero((lengths < 0) | (lengths > n))
    if bad.size:
        k = int(bad[0])
        raise ValueError(f"lengths[{k}] = {int(lengths[k])} is outside 0..{n} (the row length n)")
    out = lengths.astype(np.int64)
    out.flags.writeable = False
    return out


class TridiagonalPlan(BackendPlan):
    """A batch shape analysed once for a tridiagonal backend; :meth:`solve` is the hot path.

    Create with :func:`plan_tridiagonal`. Backend preparation happens per dtype on first use.
    """

    kind = "tridiagonal"

    def __init__(self, n: int, batch: int, *, lengths=None, backend: str = "auto", **options):
        self.shape = TridiagonalShape(n, batch, lengths)
        super().__init__(self.shape, backend, options)

    @classmethod
    def _from_subject(cls, subject, backend: str, options: dict) -> TridiagonalPlan:
        return cls(subject.n, subject.batch, lengths=subject.lengths, backend=backend, **options)

    def describe(self) -> str:
        s = self.shape
        sizes = "variable sizes" if s.lengths is not None else "equal sizes"
        impl = self._implementation(np.dtype(np.float64))
        return (f"{s.batch} tridiagonal systems of up to {s.n} rows ({sizes}); backend "
                f"{self.backend_name} ({self.note}); {impl.describe()}")

    def __repr__(self) -> str:
        return f"<hinesbatch.TridiagonalPlan {self.describe()}>"

    def solve(self, dl, d, du, rhs, *, overwrite: bool = False, check_finite: bool = True):
        """Solve the batch; see :func:`solve_tridiagonal` for the arguments.

        The arrays must have shape ``(batch, n)`` exactly.
        """
        originals = (dl, d, du, rhs)
        in_xp = array_module(*originals)
        dtype = result_dtype(*(in_xp.asarray(a) for a in originals))
        impl = self._implementation(dtype)
        xp = impl.xp
        arrays = [in_xp.asarray(a) for a in originals]
        if xp is not in_xp:  # host <-> device transfer: fresh arrays, nothing aliases the input
            arrays = [to_module(a, xp) for a in arrays]
        shape = self.shape.values_shape
        dl_w, d_w, du_w, rhs_w = (as_values(xp, a, name, shape, dtype)
                                  for a, name in zip(arrays, ("dl", "d", "du", "rhs")))
        if check_finite:
            self._check_finite(xp, dl_w, d_w, du_w, rhs_w)
        # d is scratch and x is written over rhs; dl and du are only read
        rhs_w = scratch(xp, rhs_w, rhs, overwrite=overwrite, avoid=(dl_w, du_w))
        d_w = scratch(xp, d_w, d, overwrite=overwrite, avoid=(dl_w, du_w, rhs_w))
        impl.solve(_readonly_view(dl_w), d_w, _readonly_view(du_w), rhs_w)
        return deliver(rhs_w, xp, in_xp, originals[3], overwrite=overwrite)

    def _check_finite(self, xp, dl, d, du, rhs) -> None:
        """Check the entries the solver reads (and rhs's rows it solves) are finite."""
        col = xp.arange(self.shape.n)
        lengths = self.shape.lengths
        m = self.shape.n if lengths is None else xp.asarray(lengths)[:, None]
        inside = col < m
        check_finite_rows(xp, dl, "dl", inside & (col >= 1))
        check_finite_rows(xp, d, "d", inside)
        check_finite_rows(xp, du, "du", inside & (col < m - 1))
        check_finite_rows(xp, rhs, "rhs", inside)


def _readonly_view(a):
    """A read-only view of a NumPy array (the kernels' one type for inputs they only read)."""
    if isinstance(a, np.ndarray) and a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
    return a


def plan_tridiagonal(n: int, batch: int, *, lengths=None, backend: str = "auto",
                     **options) -> TridiagonalPlan:
    """Analyse a batch of ``batch`` tridiagonal systems of up to ``n`` rows for ``backend``.

    Parameters
    ----------
    n : int
        Row length of the ``(batch, n)`` arrays.
    batch : int
        Number of systems.
    lengths : int array of shape (batch,), optional
        Size of each system, ``0 <= lengths[k] <= n``; by default all are ``n``.
    backend : str
        ``"auto"`` or a name from ``hinesbatch.backends("tridiagonal")``; an unknown name
        raises ``ValueError`` listing them.
    **options
        Backend options (``threads=`` for ``multicore``).
    """
    return TridiagonalPlan(n, batch, lengths=lengths, backend=backend, **options)


def solve_tridiagonal(dl, d, du, rhs, *, lengths=None, backend: str = "auto",
                      overwrite: bool = False, check_finite: bool = True, **options):
    """Solve a batch of tridiagonal systems (no pivoting; meant for diagonally dominant ones).

    Parameters
    ----------
    dl, d, du, rhs : array_like, shape ``(batch, n)``, or ``(n,)``
        Sub-diagonal, diagonal, super-diagonal and right-hand side of each system (any units,
        consistent: ``x`` has the units of ``rhs / d``). ``dl[:, 0]`` and ``du[:, m-1]`` are not
        read. NumPy or CuPy arrays; float32 if all four are float32, else float64.
        One-dimensional arrays hold one system, or, with ``lengths``, the systems one after
        another (system ``k`` on rows ``sum(lengths[:k])`` to ``sum(lengths[:k+1]) - 1``).
    lengths : int array of shape (batch,), optional
        Size ``m`` of each system, ``0 <= m <= n``; system ``k`` uses its first ``lengths[k]``
        entries and its solution's entries past them are ``rhs``'s, unchanged. With
        one-dimensional arrays: the sizes of the systems laid one after another, at most
        ``n`` rows in all; rows past them are ``rhs``'s, unchanged.
    backend : str
        ``"auto"`` or a name from ``hinesbatch.backends("tridiagonal")``.
    overwrite : bool
        Allow the solver to use ``d`` and ``rhs`` as scratch and to write the solution into
        ``rhs`` when its dtype and memory allow it. ``dl`` and ``du`` are never modified.
    check_finite : bool
        Check that the entries the solver reads are finite (``ValueError`` naming the argument,
        system and row otherwise).
    **options
        Backend options (``threads=`` for ``multicore``).

    Returns
    -------
    x : array of ``rhs``'s shape and kind (NumPy in, NumPy out; CuPy in, CuPy out)

    Raises
    ------
    SingularSystemError
        A zero or non-finite pivot; ``cell`` is the system, ``node`` the row.
    """
    xp = array_module(dl, d, du, rhs)
    arrays = [xp.asarray(a) for a in (dl, d, du, rhs)]
    ndims = {a.ndim for a in arrays}
    if ndims == {1} and lengths is not None and np.ndim(lengths) == 1 and len(lengths) != 1:
        return _solve_concatenated(xp, arrays, lengths, backend=backend, overwrite=overwrite,
                                   check_finite=check_finite, **options)
    if ndims == {1}:
        n = arrays[3].shape[0]
        batch_lengths = None if lengths is None else np.reshape(np.asarray(lengths), (1,))
        plan = plan_tridiagonal(n, 1, lengths=batch_lengths, backend=backend, **options)
        x = plan.solve(*(a.reshape(1, -1) if a.shape == (n,) else a for a in arrays),
                       overwrite=overwrite, check_finite=check_finite)
        return x.reshape(n)
    if ndims != {2}:
        shapes = ", ".join(f"{name} {tuple(a.shape)}" for name, a in
                           zip(("dl", "d", "du", "rhs"), arrays))
        raise ValueError(f"dl, d, du and rhs must all be (batch, n) or all (n,); got {shapes}")
    batch, n = arrays[3].shape
    plan = plan_tridiagonal(n, batch, lengths=lengths, backend=backend, **options)
    return plan.solve(*arrays, overwrite=overwrite, check_finite=check_finite)


def _solve_concatenated(xp, arrays, lengths, *, backend: str, overwrite: bool,
                        check_finite: bool, **options):
    """Systems laid one after another in 1-D arrays: solved as a padded ``(batch, m)`` batch
    (``m`` the longest system) and gathered back; see :func:`solve_tridiagonal`."""
    names = ("dl", "d", "du", "rhs")
    n = arrays[3].shape[0]
    if any(a.shape != (n,) for a in arrays):
        shapes = ", ".join(f"{name} {tuple(a.shape)}" for name, a in zip(names, arrays))
        raise ValueError(f"dl, d, du and rhs must have one length; got {shapes}")
    sizes = _check_lengths(lengths, n, len(lengths))
    if int(sizes.sum()) > n:
        raise ValueError(f"lengths add up to {int(sizes.sum())} rows but the arrays hold {n}: "
                         f"one-dimensional arrays hold the systems one after another")
    width = int(sizes.max()) if sizes.size else 0
    starts = np.cumsum(sizes) - sizes
    inside = np.arange(width) < sizes[:, None]
    rows = np.where(inside, starts[:, None] + np.arange(width), 0)  # padding reads row 0
    rows_x, inside_x = xp.asarray(rows), xp.asarray(inside)
    padded = [xp.where(inside_x, a[rows_x], 0) for a in arrays]
    x = solve_tridiagonal(*padded, lengths=sizes, backend=backend, overwrite=True,
                          check_finite=check_finite, **options)
    rhs = arrays[3]
    into_rhs = (overwrite and rhs.dtype == x.dtype
                and getattr(rhs.flags, "writeable", True))
    out = rhs if into_rhs else rhs.astype(x.dtype, copy=True)
    out[rows_x[inside_x]] = x[inside_x]
    return out
