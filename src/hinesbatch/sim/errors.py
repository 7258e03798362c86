"""Errors of the simulations (the solvers' own are in :mod:`hinesbatch.errors`)."""
from __future__ import annotations

__all__ = ["InsufficientMemoryError", "NonFiniteStateError", "PointerError",
           "RandomStreamError"]


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


class RandomStreamError(ValueError):
    """A mechanism draws from NEURON's random-number stream and the backend cannot run it.

    The stream is one sequence consumed in NEURON's order (mechanisms in type order,
    instances in node order); a backend that steps cells in parallel has no such order.

    Attributes
    ----------
    mechanism : str
        The mechanism's name.
    calls : tuple of str
        Where it draws: ``"file.mod:12: normrand()"`` (or the description's block).
    backend : str
        The backend asked for.
    """

    def __init__(self, message: str, *, mechanism: str, calls: tuple, backend: str):
        super().__init__(message)
        self.mechanism, self.calls, self.backend = mechanism, tuple(calls), backend


class PointerError(ValueError):
    """A POINTER of a mechanism (NEURON's ``POINTER``) that cannot run as given: an unknown
    POINTER name or target, a POINTER left unset, or a backend that does not read
    POINTERs.

    Attributes
    ----------
    mechanism : str
        The mechanism whose POINTER it is.
    pointer : str
        The POINTER's name ("" where the message is about all of the mechanism's).
    """

    def __init__(self, message: str, *, mechanism: str, pointer: str = ""):
        super().__init__(message)
        self.mechanism, self.pointer = mechanism, pointer
