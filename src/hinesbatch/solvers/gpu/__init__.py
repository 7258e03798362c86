"""The ``gpu`` backend: batched Hines solves in CUDA C++ kernels compiled by CuPy.

Importing this package never imports CuPy; :meth:`GpuBackend.available` says whether CuPy
and a CUDA device are usable and, if not, why. Strategies, layouts and options are
described in ``docs/gpu.md``.
"""
from __future__ import annotations

import numpy as np

from .backend import GpuBackend

__all__ = ["GpuBackend", "layout_solver"]


def layout_solver(plan, dtype=np.float64) -> GpuBackend:
    """The GPU backend object behind ``plan`` for ``dtype``: what is particular to the GPU
    (:meth:`~GpuBackend.layout_streams`, :attr:`~GpuBackend.strategies`,
    :attr:`~GpuBackend.native_is_canonical`).

    Values kept in the plan's layout need only the plan itself: :meth:`Plan.to_layout`,
    :meth:`Plan.solve_layout` and :meth:`Plan.from_layout` work on every backend.
    ``TypeError`` if the plan does not run on the GPU backend.
    """
    impl = plan._implementation(np.dtype(dtype))
    if not isinstance(impl, GpuBackend):
        raise TypeError(f"plan runs on backend {plan.backend_name!r}, not 'gpu'")
    return impl
