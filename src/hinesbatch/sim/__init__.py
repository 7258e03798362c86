"""Simulations built on the Hines solvers: a passive membrane with a current clamp, stepped
with NEURON's fixed-step rules (``docs/simulation.md``)."""
from .errors import (
    InsufficientMemoryError,
    NonFiniteStateError,
    PointerError,
    RandomStreamError,
)
from .passive import NEURON_DEFAULTS, Result, default_morphology, simulate_passive
from .stimuli import IClamp, TimeGrid, parse_location, time_grid

__all__ = [
           "NEURON_DEFAULTS",
           "IClamp",
           "InsufficientMemoryError",
           "NonFiniteStateError",
           "PointerError",
           "RandomStreamError",
           "Result",
           "TimeGrid",
           "default_morphology",
           "parse_location",
           "simulate_passive",
           "time_grid",
]
