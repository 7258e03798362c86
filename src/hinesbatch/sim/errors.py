"""Errors of the simulations (the solvers' own are in :mod:`hinesbatch.errors`)."""
from __future__ import annotations

__all__ = ["InsufficientMemoryError", "NonFiniteStateError"]


class InsufficientMemoryError(MemoryError):
    """A run needs more memory than is available; the message lists what and how to shrink it.

    Attributes
    ----------
    needed, available : int
        Bytes the run needs and bytes available where it would run.
    where : str
        ``"host"`` or ``"device"``.
    """

    def __init__(self, message: str, *, needed: int, available: int, where: str):
        super().__init__(message)
        self.needed, self.available, self.where = int(needed), int(available), where


class NonFiniteStateError(FloatingPointError):
    """The membrane potential became NaN or infinite during a run.

    Attributes
    ----------
    cell : int
        Index of the cell in the batch.
    location : str
        Where in the cell, as NEURON's ``section(x)`` (or ``node i``).
    t_ms : float
        Time [ms] at which the value was found (the state was finite at the check before).
    """

    def __init__(self, message: str, *, cell: int, location: str, t_ms: float):
        super().__init__(message)
        self.cell, self.location, self.t_ms = int(cell), location, float(t_ms)
