"""Checks of the GPU backends' and strategies' options, one function per kind of value.

Every check takes the option's name and value and returns the value in its canonical Python
type, or raises: ``TypeError`` when the value is not of the right kind (an ``int``, a
``bool``), ``ValueError`` when it is of the right kind but out of range. Messages name the
option and the value (``"groups must be a positive int, got 0"``). Options that may be left
out are checked with :func:`optional`, which passes ``None`` through.
"""
from __future__ import annotations

import numpy as np

__all__ = ["positive_int", "flag", "one_of", "optional"]


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def positive_int(name: str, value, *, multiple_of: int = 1, at_most: int | None = None) -> int:
    """``value`` as an ``int`` >= 1 (and >= ``multiple_of``, a multiple of it, at most
    ``at_most`` when given)."""
    if not _is_int(value):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if multiple_of > 1 or at_most is not None:
        top = "" if at_most is None else f" to {at_most}"
        if value < multiple_of or value % multiple_of or (at_most is not None and value > at_most):
            raise ValueError(f"{name} must be a multiple of {multiple_of} from {multiple_of}{top}, "
                             f"got {value!r}")
    elif value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


def flag(name: str, value) -> bool:
    """``value`` as a ``bool`` (``True``, ``False`` or a NumPy bool)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return bool(value)


def one_of(name: str, value, choices, *, context: str = ""):
    """``value`` if it is one of ``choices`` (``True`` and ``False`` never count as 1 and 0);
    ``context`` is added to the message (``" for a shared structure"``)."""
    choices = tuple(choices)
    numbers = all(_is_int(c) for c in choices)
    kind_ok = _is_int(value) if numbers else isinstance(value, type(choices[0]))
    if not kind_ok or value not in choices:
        listed = str(choices) if numbers else ", ".join(map(repr, choices))
        raise ValueError(f"{name} must be one of {listed}{context}, got {value!r}")
    return int(value) if numbers else value


def optional(check, name: str, value, **kwargs):
    """``None`` if ``value`` is ``None`` (the option was left out), else ``check(name, value,
    **kwargs)``."""
    return None if value is None else check(name, value, **kwargs)
