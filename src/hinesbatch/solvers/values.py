"""One validator for the values handed to a solver: shapes, dtypes, finiteness, array kind,
and the rules for which arrays a solver may write into.

Generic over the array module (NumPy or CuPy), so every backend and front end shares it.
"""
from __future__ import annotations

import numpy as np

SUPPORTED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def result_dtype(*arrays) -> np.dtype:
    """float32 if every floating input is float32, else float64; integers promote to float64."""
    dtypes = [np.dtype(a.dtype) for a in arrays]
    for name, dt in zip(("first", "second", "third", "fourth", "fifth"), dtypes):
        if dt.kind == "c":
            raise TypeError(f"complex values are not supported (the {name} array is {dt})")
        if dt.kind not in "fiub":
            raise TypeError(f"values must be real numbers, got dtype {dt}")
    if all(dt == np.float32 for dt in dtypes):
        return np.dtype(np.float32)
    return np.dtype(np.float64)


def as_values(xp, a, name: str, shape: tuple, dtype) -> "xp.ndarray":
    """``a`` as a C-contiguous ``xp`` array of ``dtype`` and ``shape`` (no copy if it already is).

    Raises ``ValueError`` naming the argument when the shape does not match.
    """
    a = xp.asarray(a)
    if a.shape != tuple(shape):
        raise ValueError(f"{name} has shape {tuple(a.shape)} but the structure needs {tuple(shape)}")
    return xp.ascontiguousarray(a, dtype=dtype)


def check_finite(xp, a, name: str, cell_offsets=None) -> None:
    """Raise ``ValueError`` naming ``name`` and the first non-finite entry's location."""
    finite = xp.isfinite(a)
    if bool(finite.all()):
        return
    flat = int(xp.argmin(finite.reshape(-1)))
    value = float(a.reshape(-1)[flat])
    if a.ndim == 2:
        where = f"cell {flat // a.shape[1]}, node {flat % a.shape[1]}"
    elif a.ndim == 1 and cell_offsets is not None and len(cell_offsets) > 1:
        c = int(np.searchsorted(cell_offsets, flat, side="right") - 1)
        where = f"cell {c}, node {flat - int(cell_offsets[c])} (global {flat})"
    else:
        where = f"index {flat}"
    raise ValueError(f"{name} must be finite, but holds {value} at {where}")


def check_finite_rows(xp, a, name: str, used=None, *, unit: str = "system") -> None:
    """Like :func:`check_finite` for a ``(batch, n)`` array, looking only where ``used`` is True.

    ``used``: boolean array broadcastable to ``a`` (``None``: everywhere). The error names
    the argument, the system (``unit``) and the row of the first offending entry.
    """
    bad = ~xp.isfinite(a)
    if used is not None:
        bad &= used
    if not bool(bad.any()):
        return
    flat = int(xp.argmax(bad.reshape(-1)))
    k, i = divmod(flat, a.shape[1])
    raise ValueError(f"{name} must be finite, but holds {float(a[k, i])} at {unit} {k}, row {i}")


def may_alias(xp, work, original) -> bool:
    """Whether the working array ``work`` may share memory with ``original`` (any object)."""
    if not isinstance(original, xp.ndarray):
        return False
    return work is original or bool(xp.may_share_memory(work, original))


def scratch(xp, work, original, *, overwrite: bool, avoid=()) -> "xp.ndarray":
    """``work``, or a copy of it when a solver must not write into it.

    A copy is made when ``work`` shares memory with the caller's ``original`` and
    ``overwrite`` is False, when it is read-only, or when it may share memory with one of the
    arrays in ``avoid`` (the solver's other inputs, which it reads while writing this one).
    """
    if ((not overwrite and may_alias(xp, work, original))
            or not getattr(work.flags, "writeable", True)
            or any(may_alias(xp, work, other) for other in avoid)):
        return work.copy()
    return work


def to_module(a, xp):
    """``a`` moved to the array module ``xp`` (a fresh array: host <-> device copy)."""
    if xp is np:
        return a.get() if hasattr(a, "get") else np.asarray(a)
    return xp.asarray(a)


def deliver(x, xp, in_xp, rhs_in, *, overwrite: bool):
    """The solution ``x`` (in the backend's module ``xp``) as the caller's kind of array.

    With ``overwrite`` and a transfer between modules, the result goes back into the caller's
    ``rhs`` when it can hold it (an ``in_xp`` array of ``x``'s dtype and shape, writeable), so
    ``overwrite=True`` means the same thing on every backend: the solution is in ``rhs``.
    """
    if xp is in_xp:
        return x
    out = to_module(x, in_xp)
    if (overwrite and isinstance(rhs_in, in_xp.ndarray) and rhs_in.dtype == out.dtype
            and rhs_in.shape == out.shape and getattr(rhs_in.flags, "writeable", True)):
        rhs_in[...] = out
        return rhs_in
    return out

