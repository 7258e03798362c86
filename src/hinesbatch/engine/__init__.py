"""The simulator's engine: NEURON's fixed step over a batch of cells, and networks over
ranks (``run_network``)."""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .events import NetCon, SpikeSource
from .receive import EventConstructError, SelfEventError
from .results import Results
from .simulation import BACKENDS, Simulation

if TYPE_CHECKING:
    from .network_run import NetworkResults, run_network

__all__ = ["BACKENDS", "EventConstructError", "NetCon", "NetworkResults", "Results",
           "SelfEventError", "Simulation", "SpikeSource", "run_network"]

#: Imported on first use (PEP 562): a run of one process needs none of the ranks' machinery.
_LAZY = {"NetworkResults": "network_run", "run_network": "network_run"}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
