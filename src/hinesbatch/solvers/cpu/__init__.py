"""CPU backends (Numba): ``serial`` and ``multicore``, for Hines and tridiagonal batches.

They are listed in :data:`hinesbatch.solvers.registry.BUILTIN`.
"""
from .backends import MulticoreHines, MulticoreTridiagonal, SerialHines, SerialTridiagonal

__all__ = ["SerialHines", "MulticoreHines", "SerialTridiagonal", "MulticoreTridiagonal"]
