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


class BackendUnavailableError(RuntimeError):
    """A backend that was asked for by name cannot run here; the message says why."""
