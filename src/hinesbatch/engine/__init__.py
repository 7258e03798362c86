"""The simulator's engine: NEURON's fixed step over a batch of cells."""
from .events import NetCon, SpikeSource
from .results import Results
from .simulation import BACKENDS, Simulation

__all__ = ["BACKENDS", "NetCon", "Results", "Simulation", "SpikeSource"]
