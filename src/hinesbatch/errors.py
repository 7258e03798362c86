"""Exceptions shared by every layer of hinesbatch.

SWC reading problems live in :mod:`hinesbatch.morphology.errors` (one class per rule);
this module holds the errors of the numerical layers.
"""
from __future__ import annotations

import numpy as np


class SingularSystemError(np.linalg.LinAlgError):
    """A zero or non-finite pivot was met while eliminating a Hines or tridiagonal system.

    Attributes
    ----------
    cell : int
        Index of the system (cell) in the batch.
    node : int
        Index of the node (unknown) within that cell whose pivot vanished.
    """

    def __init__(self, message: str, *, cell: int, node: int):
        super().__init__(message)
        self.cell = int(cell)
        self.node = int(node)
        self._wording: tuple | None = None  # singular_pivot_error's arguments, if it made it


def singular_pivot_error(kind: str, cell: int, node: int, pivot: float | None = None, *,
                         tiny: bool = False, detail: str = "") -> SingularSystemError:
    """The error every backend raises for a zero or non-finite pivot, in one wording.

    Parameters
    ----------
    kind : {"Hines", "tridiagonal"}
        The system kind: Hines systems are located by cell and node, tridiagonal ones by
        system and row.
    cell, node : int
        The cell (system) in the batch and the node (row) within it.
    pivot : float, optional
        The pivot's value, when the backend has it.
    tiny : bool
        The backend also refuses pivots too small to divide by (``"zero, tiny or
        non-finite pivot"``).
    detail : str
        A note on the backend's rule or options, appended in parentheses.
    """
    where = f"system {cell}, row {node}" if kind == "tridiagonal" else f"cell {cell}, node {node}"
    what = "zero, tiny or non-finite pivot" if tiny else "zero or non-finite pivot"
    value = "" if pivot is None else f" {pivot!r}"
    note = f" ({detail})" if detail else ""
    exc = SingularSystemError(
        f"{what}{value} at {where}: the {kind} system is singular or too far from diagonally "
        f"dominant for elimination without pivoting{note}", cell=cell, node=node)
    exc._wording = (kind, pivot, tiny, detail)
    return exc


def renumbered(exc: SingularSystemError, cell: int) -> SingularSystemError:
    """``exc`` for a part of a batch, restated with ``cell`` its index in the whole batch."""
    if exc._wording is None:
        return SingularSystemError(str(exc), cell=cell, node=exc.node)
    kind, pivot, tiny, detail = exc._wording
    return singular_pivot_error(kind, cell, exc.node, pivot, tiny=tiny, detail=detail)


class BackendUnavailableError(RuntimeError):
    """A backend that was asked for by name cannot run here; the message says why."""


class DeviceMemoryError(MemoryError):
    """A batch does not fit a device's memory; the message says how much it needs, how much
    is free, and what to change."""
