"""Mechanisms: descriptions (:mod:`.description`), NEURON's built-ins (:mod:`.builtins`) and
the code generator that compiles them into the engine's loops (:mod:`.codegen`).

The registry holds the built-ins and the mechanisms registered at run time (translated
NMODL files, :func:`hinesbatch.load_mechanisms`); a registered mechanism of a built-in's
name is used instead of the built-in.
"""
from __future__ import annotations

from .builtins import BUILTINS
from .description import (
    Cnexp,
    Diffusion,
    Function,
    Ion,
    Mechanism,
    Procedure,
    Table,
    Variable,
)

__all__ = ["Cnexp", "Diffusion", "Function", "Ion", "Mechanism", "Procedure", "Table",
           "Variable", "get", "names", "register", "registered", "unregister"]

_REGISTERED: dict = {}


def names() -> list[str]:
    """Names of the mechanisms: the built-ins, then the registered ones."""
    return list(BUILTINS) + [n for n in _REGISTERED if n not in BUILTINS]


def get(name: str) -> Mechanism:
    """The description of a mechanism (a registered one before a built-in of its name).

    Raises
    ------
    ValueError
        No mechanism has that name; the message lists the valid names.
    """
    if isinstance(name, Mechanism):
        return name
    try:
        hit = _REGISTERED.get(name)
        return hit if hit is not None else BUILTINS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown mechanism {name!r}; valid names: "
                         f"{', '.join(names())}") from None


def register(mech: Mechanism, *, replace: bool = False) -> None:
    """Make ``mech`` usable by its name.

    Raises
    ------
    TypeError
        ``mech`` is not a :class:`Mechanism`.
    ValueError
        The name is taken (a built-in or a registered mechanism) and ``replace`` is False.
    """
    if not isinstance(mech, Mechanism):
        raise TypeError(f"mech must be a Mechanism, got {type(mech).__name__}")
    if not replace and (mech.name in BUILTINS or mech.name in _REGISTERED):
        raise ValueError(f"mechanism {mech.name!r} exists; pass replace=True to replace it")
    _REGISTERED[mech.name] = mech


def registered(name: str) -> Mechanism | None:
    """The registered mechanism ``name`` (None for a built-in or an unknown name)."""
    return _REGISTERED.get(name)


def registered_count() -> int:
    return len(_REGISTERED)


def unregister(name: str) -> None:
    """Forget the registered mechanism ``name`` (a built-in of that name is used again)."""
    _REGISTERED.pop(name, None)
