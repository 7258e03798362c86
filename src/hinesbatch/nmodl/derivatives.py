"""Lowering BREAKPOINT's SOLVEs and DERIVATIVE blocks (a mixin of the file's lowering);
KINETIC blocks are in :mod:`.kinetic`."""
from __future__ import annotations

import re

from ..mechanisms.description import Cnexp
from . import expressions as ex
from .syntax import Context, reads_and_calls, unwrap, writes

__all__ = ["DerivativeLowering"]

#: an equation's ``a`` and ``b`` where it is not linear in its state
_NONLINEAR = ("nonlinear",)


class DerivativeLowering:
    """SOLVE of PROCEDUREs, of DERIVATIVE blocks by cnexp, euler and derivimplicit, and of
    KINETIC blocks by sparse."""

    def _breakpoint(self):
        blocks = self.blocks.get("BreakpointBlock", [])
        if not blocks:
            return "", "", (), ""
        ctx = Context("BREAKPOINT", [r"\bBREAKPOINT\b"], fields=True)
        rest, solves = [], []
        for st in blocks[0].statement_block.statements:
            if type(st).__name__ == "ExpressionStatement" \
                    and type(unwrap(st.expression)).__name__ == "SolveBlock":
                st = unwrap(st.expression)
            (solves if type(st).__name__ == "SolveBlock" else rest).append(st)
        state, after, cnexp = [], [], ()
        # the Cnexp passes run after all of ``state``: only the last solve may use them
        last = max((k for k, st in enumerate(solves) if (st.method is None or
                    st.method.get_node_name() != "after_cvode")), default=-1)
        for k, st in enumerate(solves):
            name = st.block_name.get_node_name()
            method = st.method.get_node_name() if st.method is not None else None
            if st.steadystate is not None:
                self.fail("STEADYSTATE", "not translated", r"STEADYSTATE")
            if name in self.procedures:
                if method == "after_cvode":     # NEURON: with the new v, in the file's order
                    (state if k < last else after).append(f"{name}()\n")
                    continue
                if method is not None:
                    self.fail(f"SOLVE {name} METHOD {method}", "a PROCEDURE is solved "
                              "without a METHOD (or with after_cvode)", rf"SOLVE\s+{name}\b")
                state.append(f"{name}()\n")
                continue
            if name in self.derivatives:
                if method not in ("cnexp", "euler", "derivimplicit"):
                    self.fail(f"SOLVE {name} METHOD {method}", f"METHOD {method} is not "
                              "translated (cnexp, euler and derivimplicit are)",
                              rf"SOLVE\s+{name}\b")
                text, eqs = self._derivative(name, method, passes=k == last)
                state.append(text)
                cnexp = eqs
                continue
            if name in self.kinetics:
                if method != "sparse":
                    self.fail(f"SOLVE {name}" + (f" METHOD {method}" if method else ""),
                              "KINETIC blocks are translated with METHOD sparse (nocmodl's "
                              "other methods for them are not thread-safe; without a METHOD "
                              "NEURON 9 does not compile the file)",
                              rf"SOLVE\s+{name}\b")
                state.append(self.kinetic_solve(name))
                continue
            self.fail(f"SOLVE {name}", "solves no PROCEDURE, DERIVATIVE or KINETIC block "
                      "of the file (LINEAR and NONLINEAR blocks are not translated)",
                      rf"SOLVE\s+{name}\b")
        if not self.currents:
            # nocmodl: a BREAKPOINT without currents runs its statements in the state
            # update, after the SOLVEs (NEURON then stores the concentrations written)
            rest_text = self.ion_copies(rest, ctx) + "".join(self.statements(rest, ctx))
            return "", "".join(state), cnexp, "".join(after) + rest_text
        for n in sorted(self._expand(writes(rest)) & self.conc_written):
            self.fail(n, f"BREAKPOINT assigns the concentration {n} outside a SOLVE "
                      "beside its currents (concentrations are stored back after the "
                      "state update only)", rf"\b{re.escape(n)}\s*=")
        breakpoint = self.ion_copies(rest, ctx) + "".join(self.statements(rest, ctx))
        return breakpoint, "".join(state), cnexp, "".join(after)

    def _derivative(self, name, method: str, passes: bool = True):
        """The DERIVATIVE block ``name`` integrated as nocmodl does with ``method``:
        (statements for the state update, Cnexp tuple).

        - ``cnexp``: y' = b + a·y (a, b symbolic): ``y += (1 - exp(dt·a))·(-(b)/(a) - y)``,
          or ``y -= dt·(-(b))`` where a = 0, in the block's order;
        - ``euler``: every derivative from the old states, then ``y += dt·y'``;
        - ``derivimplicit`` of equations each linear in its own state and not coupled:
          the implicit step ``y = (y + dt·b)/(1 - dt·a)``, which NEURON's Newton
          iteration converges to (within its tolerance); of coupled or nonlinear ones,
          NEURON's Newton iteration itself (:mod:`.newton`).
        """
        block = self.derivatives[name]
        where = f"DERIVATIVE {name}"
        pat = rf"DERIVATIVE\s+{name}\b"
        ctx = Context(where, [pat], fields=True)
        eqs = []

        def diffeq(e, c, pad):
            b = e.expression
            y = b.lhs.get_node_name().rstrip("'")
            if y not in self.state_names:
                self.fail(f"{y}'", "the derivative of something that is not a STATE", pat)
            prime = b.lhs.name if type(b.lhs).__name__ == "VarName" else b.lhs
            if type(prime).__name__ != "PrimeName" or int(prime.order.eval()) != 1:
                self.fail(f"{y}''", "higher derivatives are not translated", pat)
            f = self._expr(b.rhs, c)
            a = b0 = None
            if method != "euler":
                try:
                    a = ex.derivative(f, y)
                    b0 = ex.simplify_zero(f, y)
                except ex.ExpressionError as err:
                    if method != "derivimplicit":
                        self.fail(f"{y}'", f"{method} of an equation not linear in {y} "
                                  f"({err}) is not translated", rf"\b{re.escape(y)}'\s*=",
                                  pat)
                    a = b0 = _NONLINEAR
            c.wrote.add(y)
            eqs.append((y, a, b0, pad, f))
            return [("EQ", len(eqs) - 1)]

        ctx.diffeq = diffeq
        copies = self.ion_copies(block.statement_block.statements, ctx)
        items = ([copies] if copies else []) + self.statements(block.statement_block.statements,
                                                               ctx)
        if method == "euler":
            out = []
            for t in items:
                if isinstance(t, tuple):
                    y, _, _, pad, f = eqs[t[1]]
                    if pad:
                        self.fail(f"{y}'", "an euler equation inside a condition",
                                  rf"\b{re.escape(y)}'\s*=", pat)
                    out.append(f"D{y}__{name} = {ex.to_text(f)}\n")
                else:
                    out.append(t)
            for y, *_ in eqs:
                yt = ex.py_name(y)
                out.append(f"{yt} = ({yt} + (dt * D{y}__{name}))\n")
            return "".join(out), ()
        if method == "derivimplicit":
            states = {y for y, *_ in eqs}
            reads = reads_and_calls(block.statement_block.statements, skip_diffeq=True)
            inner = set(reads[0])
            for g in reads[1]:
                if g in self.procedures:
                    inner |= self.procedure_info(g).fields_used
                if g in self.functions:
                    inner |= set(self.function_extra(g))
            newton = False
            for y, a, b0, _, _ in eqs:
                if a is _NONLINEAR:
                    newton = True
                    break
                used = ex.names(b0) | (ex.names(a) if a is not None else set())
                for g in ex.calls(b0) | (ex.calls(a) if a is not None else set()):
                    if g in self.functions:
                        used |= set(self.function_extra(g))
                if (used | inner) & (states - {y}) | (inner & {y}):
                    newton = True
                    break
            if newton:
                for y, *_, pad, _ in eqs:
                    if pad:
                        self.fail(f"{y}'", "an equation of a coupled derivimplicit block "
                                  "inside a condition", rf"\b{re.escape(y)}'\s*=", pat)
                return self.derivimplicit_newton(name, items, eqs), ()
            out = []
            for t in items:
                if not isinstance(t, tuple):
                    out.append(t)
                    continue
                y, a, b0, pad, _ = eqs[t[1]]
                yt, b = ex.py_name(y), ex.to_text(b0)
                if a is None:
                    out.append(f"{pad}{yt} = ({yt} + (dt * {b}))\n")
                else:
                    out.append(f"{pad}{yt} = (({yt} + (dt * {b})) / (1.0 - (dt * "
                               f"{ex.to_text(a)})))\n")
            return "".join(out), ()
        # cnexp. The Cnexp form: every equation at the end, top level, reading only fields
        n_eq = len(eqs)
        tail = items[len(items) - n_eq:] if n_eq else []
        form = passes and n_eq > 0 and all(isinstance(t, tuple) for t in tail) \
            and not any(isinstance(t, tuple) for t in items[:len(items) - n_eq])
        if form:
            earlier: set = set()
            for y, a, b0, pad, _ in eqs:
                used = ex.names(b0) | (ex.names(a) if a is not None else set())
                if pad or a is None or used & (ctx.locals | earlier) \
                        or any(c for c in ex.calls(b0) | ex.calls(a) if c in self.functions
                               and set(self.function_extra(c)) & earlier):
                    form = False
                    break
                earlier.add(y)
        if form:
            text = "".join(items[:len(items) - n_eq])
            return text, tuple(Cnexp(ex.py_name(y), ex.to_text(b0), ex.to_text(a))
                               for y, a, b0, _, _ in eqs)
        out = []
        for t in items:
            if not isinstance(t, tuple):
                out.append(t)
                continue
            y, a, b0, pad, _ = eqs[t[1]]
            yt, b = ex.py_name(y), ex.to_text(b0)
            if a is None:       # nocmodl: y = y - dt*(-(b))
                out.append(f"{pad}{yt} = ({yt} - (dt * (-{b})))\n")
            else:
                out.append(f"{pad}{yt} = ({yt} + ((1.0 - exp((dt * {ex.to_text(a)}))) * "
                           f"((-{b}) / {ex.to_text(a)} - {yt})))\n")
        return "".join(out), ()
