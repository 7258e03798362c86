"""The simulator's engine: NEURON's fixed step over a batch of cells, and networks over
ranks (``run_network``)."""
from .events import NetCon, SpikeSource
from .network_run import NetworkResults, run_network
from .results import Results
from .simulation import BACKENDS, Simulation

__all__ = ["BACKENDS", "NetCon", "NetworkResults", "Results", "Simulation", "SpikeSource",
           "run_network"]
