"""Neuron morphologies: SWC reading and the in-memory :class:`Morphology`."""
from .model import SWC_TYPE_NAMES, Morphology
from .swc import read_swc

__all__ = ["Morphology", "SWC_TYPE_NAMES", "read_swc"]
