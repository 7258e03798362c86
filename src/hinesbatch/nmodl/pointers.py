"""NMODL's ``POINTER name`` (NEURON block), for files that only read it.

A POINTER is a value that lives elsewhere (a node's membrane potential, another
mechanism's variable) and is set per instance before a run
(:meth:`hinesbatch.Simulation.set_pointer`). The lowering treats its name as one of the
mechanism's variables for reading (a FUNCTION that reads it gets it as an argument, as it
gets the mechanism's variables) and lists it in
:attr:`hinesbatch.mechanisms.Mechanism.pointers`, never as a field: the engine reads the
target each time a block uses the name (:mod:`hinesbatch.mechanisms.codegen`).

Refused, with ``file:line:``: a block that assigns a POINTER (NEURON would write through
it into the target), a NET_RECEIVE that reads one (events are delivered between steps,
where the engine reads no other instance's values), ``BBCOREPOINTER`` (an opaque C
pointer for VERBATIM code) and a POINTER declared as a STATE.
"""
from __future__ import annotations

import ast
import re

__all__ = ["PointerLowering"]


class PointerLowering:
    """The POINTER rules of :class:`~hinesbatch.nmodl.lower._Lowering`."""

    def pointer_declaration(self, st) -> None:
        """``POINTER a, b``: the names, in declaration order."""
        for v in st.variables:
            n = v.get_node_name()
            if n not in self.pointers:
                self.pointers.append(n)

    def refuse_pointer_states(self, states) -> None:
        """A POINTER must not be a STATE (its value is the target's)."""
        for n in sorted(set(self.pointers) & {s.name for s in states}):
            self.fail(f"POINTER {n}", "declared as a STATE too", rf"\b{re.escape(n)}\b")

    def refuse_pointer_writes(self) -> None:
        """A block that assigns a POINTER writes into its target: not translated."""
        for n in self.pointers:
            if n in self.written:
                self.fail(f"POINTER {n}", "assigned by a block (it would write into "
                          "another mechanism's variable or a node's voltage): only files "
                          "that read their POINTERs are translated",
                          rf"\b{re.escape(n)}\s*=[^=]", rf"\b{re.escape(n)}\b")

    def refuse_pointer_events(self, mech) -> None:
        """NET_RECEIVE (and its INITIAL) must not read a POINTER."""
        for text in (mech.net_receive, mech.net_receive_initial):
            try:
                used = {n.id for n in ast.walk(ast.parse(text.strip() or "pass"))
                        if isinstance(n, ast.Name)}
            except SyntaxError:
                continue
            for n in self.pointers:
                if n in used:
                    self.fail(f"POINTER {n}", "read in NET_RECEIVE (events are delivered "
                              "between steps, where POINTERs are not read)",
                              r"\bNET_RECEIVE\b")
