"""hinesbatch: batched Hines and tridiagonal solvers on CPUs and GPUs, and the neuron
simulations built on them.

The layers, each in its own subpackage (data flows down once per set-up)::

    morphology/  read_swc -> Morphology            (typed, line-numbered SWC errors)
    discretize/  discretize -> CellGeometry          (NEURON-compatible area and ri)
    tree/        HinesStructure, MonoBatch           (the canonical batched format)
    solvers/     plan(structure).solve(d, rhs)       (serial, multicore, gpu backends)
    sim/         simulate_passive                    (implicit Euler, NEURON's units)

Start with ``hinesbatch simulate --help`` or ``hinesbatch.simulate_passive``; the docs/ folder
describes each layer.
"""
from __future__ import annotations

__version__ = "0.1.0"

from .errors import BackendUnavailableError, SingularSystemError
from .morphology import (Morphology, SWCError, SWCStrictError, SWCWarning, check_radii,
                         read_swc)
from .discretize import CellGeometry, discretize
from .tree import HinesStructure, MonoBatch, branches
from .solvers.plan import Plan, plan, solve
from .solvers.tridiagonal import TridiagonalPlan, plan_tridiagonal, solve_tridiagonal
from .sim import simulate_passive
from . import mechanisms
from .model import Cell, PointProcess
from .engine import Results, Simulation
from .io import load_results

__all__ = [
    "__version__",
    # morphologies
    "read_swc", "check_radii", "Morphology", "SWCError", "SWCStrictError", "SWCWarning",
    # geometry
    "discretize", "CellGeometry",
    # the canonical structure
    "HinesStructure", "MonoBatch", "branches",
    # solvers
    "plan", "solve", "Plan", "backends", "SingularSystemError", "BackendUnavailableError",
    "plan_tridiagonal", "solve_tridiagonal", "TridiagonalPlan",
    # simulation
    "simulate_passive",
    # simulator
    "Cell", "PointProcess", "Simulation", "Results", "load_results", "mechanisms",
]


def backends(kind: str = "hines") -> list[str]:
    """Names accepted by ``plan(..., backend=...)`` (``kind="hines"``) or by
    ``solve_tridiagonal(..., backend=...)`` (``kind="tridiagonal"``)."""
    from .solvers import registry

    return registry.names(kind)
