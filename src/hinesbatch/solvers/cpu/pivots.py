"""Pivot checks shared by the CPU Hines and tridiagonal kernels."""
from __future__ import annotations

import math

from numba import njit

from ..._numba import light_cache_loads_in

__all__ = ["bad_pivot", "first_failure"]

_JIT = dict(cache=True, nogil=True, error_model="numpy")


@njit(**_JIT)
def bad_pivot(pivot) -> bool:
    """A pivot elimination cannot divide by: zero or not finite."""
    return pivot == 0.0 or not math.isfinite(pivot)


@njit(**_JIT)
def first_failure(status):
    """``(index, status[index])`` of the lowest system whose status is ``>= 0`` (the node or row
    of its first bad pivot), ``(-1, -1)`` if none failed."""
    for k in range(status.size):
        if status[k] >= 0:
            return k, status[k]
    return -1, -1


light_cache_loads_in(globals())  # cached machine code loads without compiler set-up
