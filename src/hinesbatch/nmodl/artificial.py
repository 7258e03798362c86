"""Lowering of ``ARTIFICIAL_CELL``: a point process that belongs to no section.

NEURON's artificial cell has no membrane: no ``v``, no current, no ion, no state that
the time step integrates. It lives by its events alone: INITIAL (which may ``net_send``
self-events), NET_RECEIVE (``flag``, ``net_send``, ``net_event``) and the FUNCTIONs and
PROCEDUREs they call, random draws included. Such a file becomes a
:class:`~hinesbatch.mechanisms.Mechanism` of kind ``"artificial"``, which the engine runs
on its host event queue (:mod:`hinesbatch.engine.artificial`).

Refused, with the construct and the reason (``file:line: ARTIFICIAL_CELL ...``):

- a current (``NONSPECIFIC_CURRENT``, ``ELECTRODE_CURRENT``) or an ion (``USEION``);
- a read of ``v`` in any block;
- a BREAKPOINT block (states integrated by the time step, which an artificial cell of
  the engine does not take);
- a TABLE (the engine builds tables for mechanisms on cells only).
"""
from __future__ import annotations

import re

__all__ = ["ArtificialLowering"]

#: The construct of every refusal of this module (``mechanisms check`` groups by it).
CONSTRUCT = "ARTIFICIAL_CELL"


class ArtificialLowering:
    """Mixin of the lowering (``self.kind``, ``self.fail``, ``self.blocks``, ...)."""

    def check_artificial(self) -> None:
        """Refuse what an artificial cell cannot have (module docstring); nothing for
        other kinds."""
        if self.kind != "artificial":
            return
        for ion in self.ions:
            self.fail(f"{CONSTRUCT} USEION", f"{self.name} uses the ion {ion.name}: an "
                      "artificial cell has no membrane, so it neither reads nor writes "
                      "ions", rf"USEION\s+{re.escape(ion.name)}\b")
        if self.currents:
            word = "ELECTRODE_CURRENT" if self.electrode else "NONSPECIFIC_CURRENT"
            self.fail(f"{CONSTRUCT} {word}", f"{self.name} writes the current "
                      f"{self.currents[0]}: an artificial cell has no membrane to carry "
                      "it", rf"\b{word}\b")
        if self.blocks.get("BreakpointBlock"):
            self.fail(f"{CONSTRUCT} BREAKPOINT", f"{self.name} has a BREAKPOINT block: "
                      "artificial cells are run by their events only (INITIAL, "
                      "NET_RECEIVE), never by the time step", r"\bBREAKPOINT\b")
        if any(re.search(r"\bTABLE\b", line) for line in self.lines):
            self.fail(f"{CONSTRUCT} TABLE", f"{self.name} has a TABLE: tables are built "
                      "for mechanisms on cells only", r"\bTABLE\b")

    def check_artificial_functions(self) -> None:
        """Refuse a FUNCTION of an artificial cell that reads ``v`` (FUNCTIONs get the
        values they read as extra arguments, which no block's name check sees)."""
        if self.kind != "artificial":
            return
        for f in self.functions:
            if "v" in self.function_extra(f):
                self.fail(f"{CONSTRUCT} v", f"{self.name} reads v (in FUNCTION {f}): an "
                          "artificial cell has no membrane potential", r"\bv\b")

    def refuse_artificial_v(self, name: str) -> None:
        """Refuse a read of ``v`` in an artificial cell (called for each name read)."""
        if self.kind == "artificial" and name == "v":
            self.fail(f"{CONSTRUCT} v", f"{self.name} reads v: an artificial cell has no "
                      "membrane potential", r"\bv\b")
