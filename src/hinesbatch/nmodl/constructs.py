"""Calls that are statements of their own: ``state_discontinuity`` and ``printf`` (a mixin
of the file's lowering).

- ``state_discontinuity(y, value)`` in NET_RECEIVE: nocmodl writes ``y = value`` for
  NEURON's fixed step (the adjusted form it also writes runs only with
  ``nrn_netrec_state_adjust`` set, which NEURON leaves off). Elsewhere it is refused.
- ``printf(format, ...)``: printing does not change the model; the statement is dropped
  and a notice names each ``printf`` of the file. A string anywhere else stays refused.
"""
from __future__ import annotations

import re

__all__ = ["STATEMENT_CALLS", "ConstructLowering"]

#: Calls lowered by :meth:`ConstructLowering.statement_call` where they are statements.
STATEMENT_CALLS = {"state_discontinuity", "printf"}


class ConstructLowering:
    """``state_discontinuity`` and ``printf`` statements (mixed into the lowering)."""

    def statement_call(self, f: str, call, ctx, pad: str) -> list[str]:
        """The statement-language lines of the call statement ``f(...)``."""
        if f == "printf":
            return self._printf()
        return self._state_discontinuity(call, ctx, pad)

    def _printf(self) -> list[str]:
        if not getattr(self, "_printf_noticed", False):
            self._printf_noticed = True
            for k, line in enumerate(self.lines):
                if re.search(r"\bprintf\s*\(", line):
                    self.notices.append(f"{self.path}:{k + 1}: printf: not run (printing "
                                        "does not change the model)")
        return []

    def _state_discontinuity(self, call, ctx, pad: str) -> list[str]:
        pat = r"\bstate_discontinuity\s*\("
        if ctx.where != "NET_RECEIVE":
            self.fail("state_discontinuity()", f"in {ctx.where} is not translated (only "
                      "in NET_RECEIVE, where it is an assignment)", pat)
        args = list(call.arguments)
        if len(args) != 2:
            self.fail("state_discontinuity()", f"called with {len(args)} argument(s), "
                      "takes 2", pat)
        target = re.escape(args[0].get_node_name())
        return self.assignment(args[0], args[1], ctx, pad,
                               at=(rf"\bstate_discontinuity\s*\(\s*{target}\b",))
