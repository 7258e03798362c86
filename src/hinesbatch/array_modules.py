"""Which array module (NumPy or CuPy) holds some arrays, without importing CuPy otherwise.

Shared by :mod:`hinesbatch.tree` and :mod:`hinesbatch.solvers`, which both work on NumPy and
CuPy arrays alike.
"""
from __future__ import annotations

import numpy as np

__all__ = ["array_module"]


def array_module(*arrays):
    """``cupy`` if any argument is a CuPy array, else ``numpy``."""
    for a in arrays:
        mod = type(a).__module__
        if mod.startswith("cupy"):
            import cupy

            return cupy
    return np
