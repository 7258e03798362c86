"""Neuron morphologies: SWC reading (typed, line-numbered errors) and :class:`Morphology`."""
from . import errors
from .errors import *  # noqa: F401,F403 (the typed SWC errors and warnings)
from .model import SWC_TYPE_NAMES, Morphology
from .radii import check_radii
from .swc import read_swc

__all__ = ["Morphology", "SWC_TYPE_NAMES", "read_swc", "check_radii", *errors.__all__]
