"""hinesbatch: batched Hines and tridiagonal solvers on CPUs and GPUs, and the neuron
simulations built on them.

The layers, each in its own subpackage (data flows down once per set-up)::

    morphology/  read_swc -> Morphology            (typed, line-numbered SWC errors)
    discretize/  discretize -> CellGeometry          (NEURON-compatible area and ri)
    tree/        HinesStructure, MonoBatch           (the canonical batched format)
    solvers/     plan(structure).solve(d, rhs)       (serial, multicore, gpu backends)
    sim/         simulate_passive                    (implicit Euler, NEURON's units)
"""
from __future__ import annotations

__version__ = "0.1.0"

from .errors import BackendUnavailableError, SingularSystemError
from .tree.structure import HinesStructure, MonoBatch
from .solvers.plan import Plan, plan, solve

__all__ = [
    "__version__",
    "BackendUnavailableError",
    "SingularSystemError",
    "HinesStructure",
    "MonoBatch",
    "Plan",
    "plan",
    "solve",
    "backends",
]


def backends(kind: str = "hines") -> list[str]:
    """Names accepted by ``plan(..., backend=...)`` (``kind="hines"``) or by
    ``solve_tridiagonal(..., backend=...)`` (``kind="tridiagonal"``)."""
    from .solvers import registry

    return registry.names(kind)
