"""Statements beyond assignments: ``state_discontinuity``, ``printf`` and loops (a mixin
of the file's lowering).

- ``state_discontinuity(y, value)`` in NET_RECEIVE: nocmodl writes ``y = value`` for
  NEURON's fixed step (the adjusted form it also writes runs only with
  ``nrn_netrec_state_adjust`` set, which NEURON leaves off). Elsewhere it is refused.
- ``printf(format, ...)``: printing does not change the model; the statement is dropped
  and a notice names each ``printf`` of the file. A string anywhere else stays refused.
- ``WHILE`` and FROM loops whose bounds are known only at run time: ``while`` loops of
  the statement language (FROM loops with constant bounds are unrolled by the lowering).
- ASSIGNED arrays indexed by a value known only at run time: the element chosen among the
  fields ``a__0``, ``a__1``, ... by comparisons (a balanced tree, ``log2(n)`` of them).
- FUNCTIONs that write the mechanism's variables, used as values: called just before the
  statement that uses the value.
- ``diam`` declared by a density mechanism: a field the engine sets from the segment
  (:attr:`~hinesbatch.mechanisms.Mechanism.geometry`).
"""
from __future__ import annotations

import re

from ..mechanisms.description import Variable
from . import expressions as ex
from .syntax import constant_value

__all__ = ["STATEMENT_CALLS", "ConstructLowering"]

#: Calls lowered by :meth:`ConstructLowering.statement_call` where they are statements.
STATEMENT_CALLS = {"state_discontinuity", "printf"}
#: The largest ASSIGNED array an index known only at run time may select from.
SELECT_LIMIT = 1000


class ConstructLowering:
    """The constructs of the module docstring (mixed into the lowering)."""

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
        self.check_arity("state_discontinuity", args, 2, pat)
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
        before = ctx.rename.get(n)
        start = self._whole(self._expr(getattr(st, "from"), ctx))
        counter = f"{n}__from{self._loop_count()}"
        self._counters().add(counter)
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
            if f is None:           # an array element selected by its index
                continue
            both = sorted(self.procedure_info(f).writes & reads)
            if both:
                self.fail(f"{f}()", f"FUNCTION {f} writes {both[0]}, which the statement "
                          "calling it reads (C leaves the order of the two to the compiler)",
                          rf"^(?!\s*FUNCTION\b).*\b{re.escape(f)}\s*\(")
        return value, [f"{pad}{line}\n" for _, text in calls for line in text.split("\n")]

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
        self.check_arity(f, args, len(proc.parameters), pat)
        if ctx.calls:
            self.fail(f"{f}()", f"{where}: a statement with two calls of such FUNCTIONs",
                      pat)
        ctx.calls.append((f, f"{f}({', '.join(ex.to_text(a) for a in args)})"))
        ctx.wrote |= self.procedure_info(f).writes
        return ("name", f"{f}__{f}")

    # ---- array elements indexed by values known only at run time ------------------------
    def element_load(self, array: str, index: tuple, ctx) -> tuple:
        """``array[index]`` read, ``index`` known only at run time: a local set, before the
        statement, to the element the index selects (NaN outside the array, where
        NEURON's C reads outside it)."""
        n = self._select_check(array, ctx)
        at, lines = self._index(array, index)
        got = f"{array}__get{self._loop_count()}"
        lines.append(f"{got} = (0.0 / 0.0)")
        lines += self._select(at, 0, n, lambda k: [f"{got} = {ex.py_name(array)}__{k}"])
        ctx.calls.append((None, "\n".join(lines)))
        ctx.reads |= {f"{array}__{k}" for k in range(n)}
        ctx.locals |= {at, got}
        return ("name", got)

    def element_store(self, element: tuple, rhs, ctx, pad: str) -> list[str]:
        """``array[index] = rhs``, ``index`` known only at run time: the value, then the
        element the index selects set to it (nothing outside the array, where NEURON's C
        writes outside it)."""
        array, index = element[1], element[2]
        pat = rf"\b{re.escape(array)}\s*\[\s*[A-Za-z_(-]"
        for k in range(self.arrays[array]):
            if f"{array}__{k}" in ctx.readonly:
                self.fail(f"{array}[]", ctx.readonly[f"{array}__{k}"], pat)

        def lower():
            folded = ex.fold_indices(index, lambda a, i: self._element(a, i, ctx))
            for nm in ex.names(folded):
                self._check_name(nm, ctx)
            ctx.reads |= ex.names(folded)
            return self._expr(rhs, ctx), folded

        (value, folded), before = self.with_calls(lower, ctx, pad)
        n = self._select_check(array, ctx, hoisting=False)
        at, lines = self._index(array, folded)
        put = f"{array}__set{self._loop_count()}"
        lines.append(f"{put} = {ex.to_text(value)}")
        lines += self._select(at, 0, n, lambda k: [f"{ex.py_name(array)}__{k} = {put}"])
        elements = {f"{array}__{k}" for k in range(n)}
        ctx.wrote |= elements
        ctx.locals |= {at, put}
        return before + [f"{pad}{line}\n" for line in lines]

    def _select_check(self, array: str, ctx, hoisting: bool = True) -> int:
        pat = rf"\b{re.escape(array)}\s*\[\s*[A-Za-z_(-]"
        n = self.arrays[array]
        if hoisting and ctx.calls is None:
            in_loop = rf"\b(WHILE|FROM)\b[^{{]*\b{re.escape(array)}\s*\["
            self.fail(f"{array}[]", "an index that is not a constant, in a loop condition "
                      "or bound or an equation", in_loop, pat)
        if n > SELECT_LIMIT:
            self.fail(f"{array}[]", f"an index that is not a constant, into an array of "
                      f"{n} elements (at most {SELECT_LIMIT})", pat)
        return n

    def _index(self, array: str, index: tuple) -> tuple[str, list[str]]:
        """A local holding ``index`` as nocmodl's C computes it (each variable converted
        to a whole number toward zero, then whole-number arithmetic), and its line."""
        pat = rf"\b{re.escape(array)}\s*\[\s*[A-Za-z_(-]"

        def whole(e):
            if e[0] == "num":
                if e[1] != int(e[1]):
                    self.fail(f"{array}[]", "an index that is not a whole number", pat)
                return e
            if e[0] == "name":
                return e if e[1] in self._counters() else self._whole(e)
            if e[0] == "neg":
                return ("neg", whole(e[1]))
            if e[0] == "bin" and e[1] in ("+", "-", "*"):
                return ("bin", e[1], whole(e[2]), whole(e[3]))
            self.fail(f"{array}[]", "an index other than sums and products of variables "
                      "and whole numbers", rf"\b{re.escape(array)}\s*\[[^]]*[/^(]", pat)

        at = f"{array}__at{self._loop_count()}"
        return at, [f"{at} = {ex.to_text(whole(index))}"]

    @staticmethod
    def _select(at: str, lo: int, hi: int, leaf) -> list[str]:
        """Lines running ``leaf(k)`` for the ``k`` in ``[lo, hi)`` equal to ``at``: a
        balanced tree of comparisons (none runs where ``at`` is outside or NaN)."""
        if hi - lo == 1:
            return [f"if ({at} == {float(lo)!r}):"] + ["    " + x for x in leaf(lo)]
        mid = (lo + hi) // 2
        return ([f"if ({at} < {float(mid)!r}):"]
                + ["    " + x for x in ConstructLowering._select(at, lo, mid, leaf)]
                + ["else:"]
                + ["    " + x for x in ConstructLowering._select(at, mid, hi, leaf)])

    def _counters(self) -> set:
        return self.__dict__.setdefault("_counter_names", set())

    # ---- the segment's geometry ---------------------------------------------------------
    def geometry_fields(self) -> tuple:
        """``("diam",)`` where a density mechanism declares ``diam`` (PARAMETER or
        ASSIGNED), which NEURON gives it as the segment's diameter: a field (NaN until the
        engine sets it, before each run) the blocks read and do not write."""
        declared = any(st.get_node_name() == "diam"
                       for kind, attr in (("ParamBlock", "statements"),
                                          ("AssignedBlock", "definitions"))
                       for b in self.blocks.get(kind, []) for st in getattr(b, attr)
                       if type(st).__name__ in ("ParamAssign", "AssignedDefinition"))
        if not declared or self.kind != "density":
            return ()
        self.assigned.append(Variable("diam", float("nan"), "um",
                                      "the segment's diameter (NEURON's seg.diam)"))
        return ("diam",)
