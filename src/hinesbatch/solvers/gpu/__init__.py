"""The ``gpu`` backend: batched Hines solves in CUDA C++ kernels compiled by CuPy.

Importing this package never imports CuPy; :meth:`GpuBackend.available` says whether CuPy
and a CUDA device are usable and, if not, why. Strategies, layouts and options are
described in ``docs/gpu.md``.
"""
from __future__ import annotations

import numpy as np

from .. import registry
from .backend import GpuBackend
from . import tridiagonal  # noqa: F401,E402  (registers the tridiagonal backends gpu, cusparse)

__all__ = ["GpuBackend", "layout_solver"]

registry.register(GpuBackend, auto_rank=0)


def layout_solver(plan, dtype=np.float64) -> GpuBackend:
    """The GPU backend object behind ``plan`` for ``dtype``, for values kept in its layout.

    Its :meth:`~GpuBackend.to_layout`, :meth:`~GpuBackend.solve_layout` and
    :meth:`~GpuBackend.from_layout` skip the per-solve reordering of :meth:`Plan.solve`
    (a simulator keeps its state in the plan's layout; DESIGN.md). ``TypeError`` if the plan
    does not run on the GPU backend.
    """
    impl = plan._implementation(np.dtype(dtype))
    if not isinstance(impl, GpuBackend):
        raise TypeError(f"plan runs on backend {plan.backend_name!r}, not 'gpu'")
    return impl
