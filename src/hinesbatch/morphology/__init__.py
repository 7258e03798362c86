"""Neuron morphologies: SWC reading (typed, line-numbered errors) and :class:`Morphology`."""
from .errors import (SWCCycleError, SWCDetachedNeuriteWarning, SWCDuplicateIdError,
                     SWCEmptyError, SWCEncodingError, SWCError, SWCExtraFieldsWarning,
                     SWCFatEndWarning, SWCGeometryWarning, SWCInterruptedSomaWarning,
                     SWCMissingParentError, SWCMultipleRootsError, SWCNoSomaWarning,
                     SWCRadiusClampedWarning, SWCRadiusError, SWCSomaAttachmentWarning,
                     SWCStrictError, SWCSyntaxError, SWCUndefinedTypeWarning,
                     SWCUnorderedWarning, SWCWarning, SWCZeroLengthWarning)
from .model import SWC_TYPE_NAMES, Morphology
from .radii import check_radii
from .swc import read_swc

__all__ = [
    "Morphology", "SWC_TYPE_NAMES", "read_swc", "check_radii",
    "SWCError", "SWCEncodingError", "SWCSyntaxError", "SWCEmptyError", "SWCRadiusError",
    "SWCDuplicateIdError", "SWCMissingParentError", "SWCMultipleRootsError", "SWCCycleError",
    "SWCStrictError",
    "SWCWarning", "SWCExtraFieldsWarning", "SWCUnorderedWarning", "SWCNoSomaWarning",
    "SWCInterruptedSomaWarning", "SWCSomaAttachmentWarning", "SWCUndefinedTypeWarning",
    "SWCGeometryWarning", "SWCZeroLengthWarning", "SWCFatEndWarning",
    "SWCDetachedNeuriteWarning", "SWCRadiusClampedWarning",
]
