"""hinesbatch: batched Hines and tridiagonal solvers on CPUs and GPUs, and the neuron
simulations built on them.

The layers, each in its own subpackage (data flows down once per set-up)::

    morphology/  read_swc -> Morphology            (typed, line-numbered SWC errors)
    discretize/  discretize -> CellGeometry          (NEURON-compatible area and ri)
    tree/        HinesStructure, MonoBatch           (the canonical batched format)
    solvers/     plan(structure).solve(d, rhs)       (serial, multicore, gpu backends)
    sim/         simulate_passive                    (implicit Euler, NEURON's units)
    model/       Cell                                (morphology + policy + mechanisms)
    mechanisms/  pas, hh, IClamp, ... descriptions   (compiled into the engine's loops)
    nmodl/       load_mechanisms                     (.mod files -> descriptions)
    engine/      Simulation -> Results               (NEURON's fixed step, CPU backends)
    network/     events, spike sources, MPI exchange (NEURON's delivery rules)
    io/          .npz, SONATA spike reports, model files

Start with ``hinesbatch simulate --help``, ``hinesbatch.Simulation`` or
``hinesbatch.simulate_passive``; the docs/ folder describes each layer.
"""
from __future__ import annotations

__version__ = "0.1.0"

import importlib
from typing import TYPE_CHECKING

from ._numba import import_numba

import_numba()  # before any module of the package imports it: without SciPy's version check

# The function, not its subpackage of the same name (the import binds the function last).
from .discretize import discretize

# Public name -> the module that defines it, imported on first use (PEP 562), so that
# `import hinesbatch` and each command load only the layers they use.
_PUBLIC = {
    "BackendUnavailableError": "errors", "SingularSystemError": "errors",
    "Morphology": "morphology", "SWCError": "morphology", "SWCStrictError": "morphology",
    "SWCWarning": "morphology", "check_radii": "morphology", "read_swc": "morphology",
    "CellGeometry": "discretize",
    "HinesStructure": "tree", "MonoBatch": "tree", "branches": "tree",
    "Plan": "solvers.plan", "plan": "solvers.plan", "solve": "solvers.plan",
    "TridiagonalPlan": "solvers.tridiagonal", "plan_tridiagonal": "solvers.tridiagonal",
    "solve_tridiagonal": "solvers.tridiagonal",
    "simulate_passive": "sim",
    "Cell": "model", "PointProcess": "model",
    "Results": "engine", "Simulation": "engine",
    "Network": "network", "NetworkResults": "engine", "run_network": "engine",
    "load_results": "io",
    "load_mechanisms": "nmodl",
}

if TYPE_CHECKING:  # the same names for type checkers and the API docs
    from . import mechanisms
    from .discretize import CellGeometry
    from .engine import NetworkResults, Results, Simulation, run_network
    from .errors import BackendUnavailableError, SingularSystemError
    from .io import load_results
    from .model import Cell, PointProcess
    from .morphology import (Morphology, SWCError, SWCStrictError, SWCWarning, check_radii,
                             read_swc)
    from .network import Network
    from .nmodl import load_mechanisms
    from .sim import simulate_passive
    from .solvers.plan import Plan, plan, solve
    from .solvers.tridiagonal import TridiagonalPlan, plan_tridiagonal, solve_tridiagonal
    from .tree import HinesStructure, MonoBatch, branches

_SUBPACKAGES = {"mechanisms", "morphology", "tree", "solvers", "sim", "model",
                "engine", "io", "network", "bench", "errors", "nmodl"}


def __getattr__(name: str):
    """Import a public name or subpackage on first use (PEP 562)."""
    if name in _PUBLIC:
        value = getattr(importlib.import_module(f".{_PUBLIC[name]}", __name__), name)
    elif name in _SUBPACKAGES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module 'hinesbatch' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC) | _SUBPACKAGES)


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
    # networks over MPI ranks
    "Network", "run_network", "NetworkResults",
    "load_mechanisms",
]


def backends(kind: str = "hines") -> list[str]:
    """Names accepted by ``plan(..., backend=...)`` (``kind="hines"``) or by
    ``solve_tridiagonal(..., backend=...)`` (``kind="tridiagonal"``)."""
    from .solvers import registry

    return registry.names(kind)
