"""Statements beyond assignments: ``state_discontinuity``, ``printf`` and loops (a mixin
of the file's lowering).

- ``state_discontinuity(y, value)`` in NET_RECEIVE: nocmodl writes ``y = value`` for
  NEURON's fixed step (the adjusted form it also writes runs only with
  ``nrn_netrec_state_adjust`` set, which NEURON leaves off). Elsewhere it is refused.
- ``printf(format, ...)``: printing does not change the model; the statement is dropped
  and a notice names each ``printf`` of the file. A string anywhere else stays refused.
- ``WHILE`` and FROM loops whose bounds are known only at run time: ``while`` loops of
  the statement language (FROM loops with constant bounds are unrolled by the lowering).
"""
from __future__ import annotations

import re

from . import expressions as ex
from .syntax import constant_value

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

    # ---- loops --------------------------------------------------------------------------
    def while_loop(self, st, ctx, indent: int) -> list[str]:
        """``WHILE (cond) { ... }``: a ``while`` of the statement language."""
        pad = "    " * indent
        cond = ex.to_text(self._expr(st.condition, ctx))
        body = self.statements(st.statement_block.statements, ctx, indent + 1)
        return [f"{pad}while {cond}:\n"] + (body or [f"{pad}    pass\n"])

    def from_loop(self, st, ctx, indent: int) -> list[str]:
        """``FROM i = a TO b BY k`` with bounds known only at run time, as nocmodl writes
        it: ``{int i; for (i = (int) a; i <= (int) b; i += k) ...}``, the bound
        re-evaluated before each pass and ``i`` a whole number of its own (the block's
        variable of that name is unchanged). ``k`` must be a positive whole constant (the
        only increments nocmodl accepts)."""
        pad = "    " * indent
        n = st.get_node_name()
        pat = rf"\bFROM\s+{re.escape(n)}\b"
        step = 1.0
        if st.increment is not None:
            step = constant_value(ex.substitute(ex.from_ast(st.increment), self.const))
            if step is None or step <= 0 or step != int(step):
                self.fail("FROM", "an increment that is not a positive whole constant", pat)
        before, was_local = ctx.rename.get(n), n in ctx.locals
        start = self._whole(self._expr(getattr(st, "from"), ctx))
        counter = f"{n}__from{self._loop_count()}"
        stop = self._whole(self._expr(st.to, ctx))
        ctx.locals.add(counter)
        ctx.rename[n] = ("name", counter)
        ctx.readonly[counter] = f"assigns the FROM loop's variable {n}"
        body = self.statements(st.statement_block.statements, ctx, indent + 1)
        ctx.readonly.pop(counter)
        if before is None:
            ctx.rename.pop(n, None)
        else:
            ctx.rename[n] = before
        if not was_local:
            ctx.locals.discard(n)
        return ([f"{pad}{counter} = {ex.to_text(start)}\n",
                 f"{pad}while ({counter} <= {ex.to_text(stop)}):\n"] + body
                + [f"{pad}    {counter} = ({counter} + {step!r})\n"])

    def _loop_count(self) -> int:
        self._loops = getattr(self, "_loops", 0) + 1
        return self._loops

    @staticmethod
    def _whole(e: tuple) -> tuple:
        """``(int) e`` as C converts a double: toward zero (``e - fmod(e, 1)``, exact)."""
        value = constant_value(e)
        if value is not None:
            return ("num", float(int(value)))
        return ("bin", "-", e, ("call", "fmod", (e, ("num", 1.0))))

    # ---- FUNCTIONs that write the mechanism's variables ---------------------------------
    def with_calls(self, lower, ctx, pad: str):
        """``lower()`` (the lowering of one statement's expressions), and the lines that
        call, before the statement, the FUNCTIONs writing the mechanism's variables whose
        values it uses (:meth:`value_call`)."""
        saved = ctx.calls, ctx.reads
        ctx.calls, ctx.reads = [], set()
        try:
            value = lower()
            calls, reads = ctx.calls, ctx.reads
        finally:
            ctx.calls, ctx.reads = saved
        for f, _ in calls:
            both = sorted(self.procedure_info(f).writes & reads)
            if both:
                self.fail(f"{f}()", f"FUNCTION {f} writes {both[0]}, which the statement "
                          "calling it reads (C leaves the order of the two to the compiler)",
                          rf"^(?!\s*FUNCTION\b).*\b{re.escape(f)}\s*\(")
        return value, [f"{pad}{text}\n" for _, text in calls]

    def value_call(self, f: str, args: tuple, ctx) -> tuple:
        """``f(args)`` used as a value, ``f`` a FUNCTION that writes the mechanism's
        variables: lowered as a PROCEDURE called before the statement, its value then
        read from its local ``f__f``. The same as nocmodl's C where the statement reads
        nothing ``f`` writes and calls no other such FUNCTION (C leaves the order of such
        reads and writes within one expression to the compiler: refused)."""
        pat = rf"^(?!\s*FUNCTION\b).*\b{re.escape(f)}\s*\("      # a call, not the definition
        where = f"FUNCTION {f} writes the mechanism's variables"
        if ctx.calls is None:
            self.fail(f"{f}()", f"{where}: its value is used in {ctx.where} where it "
                      "cannot be called first (a loop condition or bound, an equation)", pat)
        if not ctx.fields:
            self.fail(f"{f}()", f"{where}: called from {ctx.where}", pat)
        proc = self.procedures[f]
        if len(args) != len(proc.parameters):
            self.fail(f"{f}()", f"called with {len(args)} argument(s), takes "
                      f"{len(proc.parameters)}", pat)
        if ctx.calls:
            self.fail(f"{f}()", f"{where}: a statement with two calls of such FUNCTIONs",
                      pat)
        ctx.calls.append((f, f"{f}({', '.join(ex.to_text(a) for a in args)})"))
        ctx.wrote |= self.procedure_info(f).writes
        return ("name", f"{f}__{f}")
