"""Discretization of morphologies into NEURON-compatible compartments."""
from .build import discretize
from .geometry import CellGeometry

__all__ = ["CellGeometry", "discretize"]
