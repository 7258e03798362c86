"""Mechanisms: descriptions (:mod:`.description`), NEURON's built-ins (:mod:`.builtins`) and
the code generator that compiles them into the engine's loops (:mod:`.codegen`)."""
from __future__ import annotations

from .builtins import BUILTINS
from .description import Cnexp, Function, Ion, Mechanism, Procedure, Table, Variable

__all__ = ["Cnexp", "Function", "Ion", "Mechanism", "Procedure", "Table", "Variable", "get",
           "names"]


def names() -> list[str]:
    """Names of the built-in mechanisms."""
    return list(BUILTINS)


def get(name: str) -> Mechanism:
    """The description of a built-in mechanism.

    Raises
    ------
    ValueError
        ``name`` is not a built-in; the message lists the valid names.
    """
    if isinstance(name, Mechanism):
        return name
    try:
        return BUILTINS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown mechanism {name!r}; valid names: "
                         f"{', '.join(BUILTINS)}") from None
