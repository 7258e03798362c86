"""One validator for the values handed to a solver: shapes, dtypes, finiteness, array kind.

Generic over the array module (NumPy or CuPy), so every backend shares it.
"""
from __future__ import annotations

import numpy as np

SUPPORTED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def array_module(*arrays):
    """``cupy`` if any argument is a CuPy array, else ``numpy``."""
    for a in arrays:
        mod = type(a).__module__
        if mod.startswith("cupy"):
            import cupy

            return cupy
    return np


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
