"""Lowering NEURON's scoplib random numbers (a mixin of the file's lowering).

``normrand(mean, sd)``, ``exprand(mean)``, ``poisrand(mean)``, ``scop_random()`` and the
statement ``set_seed(x)`` become the statement language's calls of the same names, which
draw from the simulation's one stream in NEURON's order
(:mod:`hinesbatch.mechanisms.scoprand`). They are translated where the engine runs them in
NEURON's order: in INITIAL, the BREAKPOINT (its currents, evaluated twice per step as
nocmodl's ``nrn_cur`` does, and the PROCEDUREs it SOLVEs), NET_RECEIVE (events are
delivered one at a time, in NEURON's order) and the PROCEDUREs and FUNCTIONs those call.
Refused, with ``file:line``:

- in DERIVATIVE and KINETIC blocks, NET_RECEIVE's INITIAL, TABLE procedures and FUNCTIONs
  with a TABLE, and PROCEDUREs and FUNCTIONs that draw called from those;
- two draws in one expression: C leaves the order of a call's operands open, so NEURON's
  numbers would depend on its compiler;
- ``set_seed`` used as a value (it returns nothing).
"""
from __future__ import annotations

import re

from ..mechanisms.scoprand import DRAWS, SEED_CALL
from . import expressions as ex
from .syntax import reads_and_calls

__all__ = ["StreamLowering"]


class StreamLowering:
    """Mixin of the lowering (``self.fail``, ``self._expr``, ``self.procedures``, ...)."""

    def _stream_ok(self, ctx) -> bool:
        """Whether a block lowered in ``ctx`` runs where the stream is available."""
        if ctx.where in ("INITIAL", "BREAKPOINT", "NET_RECEIVE"):
            return True
        if ctx.where.startswith("FUNCTION "):      # its callers are checked (check_draw_call)
            return self.table_statement(ctx.where.split()[1]) is None
        return ctx.where.startswith("PROCEDURE") and not getattr(ctx, "no_tables", False)

    def _stream_refuse(self, f: str, ctx, pattern: str):
        self.fail(f"{f}()", f"random numbers drawn in {ctx.where} are not translated "
                  "(only in INITIAL, the BREAKPOINT, NET_RECEIVE and the PROCEDUREs and "
                  "FUNCTIONs they call, where the engine draws in NEURON's order)", pattern)

    def _note_stream_call(self, f: str, pattern: str) -> None:
        calls = self.__dict__.setdefault("stream_calls", [])
        where = f"{self.path}:{self.line_of(pattern)}: {f}()"
        if where not in calls:
            calls.append(where)

    def draw_call(self, f: str, args: tuple, ctx) -> tuple:
        """A call of ``normrand``, ``exprand``, ``poisrand`` or ``scop_random``."""
        pat = rf"\b{f}\s*\("
        if not self._stream_ok(ctx):
            self._stream_refuse(f, ctx, pat)
        self.check_arity(f, args, DRAWS[f], pat)
        self._note_stream_call(f, pat)
        return ("call", f, args)

    def check_draws(self, e: tuple, ctx) -> None:
        """Refuse two draws in one expression (C's order of operands is open)."""
        found = []

        def walk(node):
            if node[0] == "call":
                if node[1] in DRAWS or (node[1] in self.functions
                                        and self.procedure_draws(node[1])):
                    found.append(node[1])
                for a in node[2]:
                    walk(a)
            elif node[0] in ("neg", "not"):
                walk(node[1])
            elif node[0] == "bin":
                walk(node[2])
                walk(node[3])

        walk(e)
        if len(found) > 1:
            self.fail(f"{found[1]}()", "two random draws in one expression: C leaves their "
                      "order open, so NEURON's numbers depend on its compiler (draw into "
                      "LOCALs, one statement each)", rf"\b{found[0]}\s*\(.*\b{found[1]}\s*\(",
                      rf"\b{found[1]}\s*\(")

    def seed_statement(self, call, ctx, pad: str) -> list[str]:
        """``set_seed(x)`` as a statement."""
        pat = rf"\b{SEED_CALL}\s*\("
        if not self._stream_ok(ctx):
            self._stream_refuse(SEED_CALL, ctx, pat)
        args = list(call.arguments)
        self.check_arity(SEED_CALL, args, 1, pat)
        self._note_stream_call(SEED_CALL, pat)
        value, before = self.with_calls(lambda: self._expr(args[0], ctx), ctx, pad)
        return before + [f"{pad}{SEED_CALL}({ex.to_text(value)})\n"]

    def procedure_draws(self, p: str, seen: frozenset = frozenset()) -> bool:
        """Whether the PROCEDURE or FUNCTION ``p`` draws or sets the seed, itself or
        through the PROCEDUREs and FUNCTIONs it calls."""
        block = self.procedures.get(p) or self.functions[p]
        calls = reads_and_calls(block.statement_block.statements)[1]
        if calls & (DRAWS.keys() | {SEED_CALL}):
            return True
        return any((g in self.procedures or g in self.functions) and g not in seen
                   and self.procedure_draws(g, seen | {p}) for g in calls)

    def check_procedure_draws(self, p: str, ctx) -> None:
        """Refuse a call of a PROCEDURE or FUNCTION that draws from where the stream is
        not available."""
        if not self._stream_ok(ctx) and self.procedure_draws(p):
            kind = "PROCEDURE" if p in self.procedures else "FUNCTION"
            self.fail(f"{p}()", f"a {kind} that draws random numbers, called from "
                      f"{ctx.where} (only INITIAL, the BREAKPOINT, NET_RECEIVE and the "
                      "PROCEDUREs and FUNCTIONs they call draw, in NEURON's order)",
                      rf"^(?!\s*(PROCEDURE|FUNCTION)\b).*\b{re.escape(p)}\s*\(",
                      rf"\b{re.escape(p)}\s*\(")
