"""NMODL front end: users' ``.mod`` files as mechanism descriptions.

``neuron.nmodl`` (NEURON's NMODL framework, in the ``neuron`` wheel) parses a file;
:mod:`.lower` lowers its AST to a :class:`~hinesbatch.mechanisms.Mechanism`, which the
engine compiles like the built-ins; :mod:`.registry` makes a folder's mechanisms usable by
name (:func:`load_mechanisms`). What cannot be translated raises :class:`NmodlError`
before any run (``file:line: construct: reason``). See ``docs/nmodl.md``.
"""
from __future__ import annotations

from .lower import NmodlError, Translation, translate, translate_text
from .registry import NmodlNotice, load_mechanisms

__all__ = ["NmodlError", "NmodlNotice", "Translation", "load_mechanisms", "translate",
           "translate_text"]
