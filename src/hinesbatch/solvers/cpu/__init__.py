"""CPU backends (Numba): ``serial`` and ``multicore``, for Hines and tridiagonal batches.

Importing this package registers them in :mod:`hinesbatch.solvers.registry`.
"""
from .backends import MulticoreHines, MulticoreTridiagonal, SerialHines, SerialTridiagonal

__all__ = ["SerialHines", "MulticoreHines", "SerialTridiagonal", "MulticoreTridiagonal"]
