"""Lowering KINETIC blocks solved by ``METHOD sparse`` and ``STEADYSTATE sparse`` (a mixin
of the file's lowering).

NEURON's nocmodl turns a KINETIC block into a function that, called with the current
states ``s`` and the states ``s_old`` at the start of the step, assembles the Newton system
of the backward-Euler step, and scopmath's ``sparse`` solves it:

- each state's row starts as ``rhs = -(s - s_old)/dt``, diagonal ``1/dt``, both times the
  state's COMPARTMENT volume;
- ``~ A + B <-> C (kf, kb)``: ``f_flux = kf·B·A``, ``b_flux = kb·C``; each state of the
  left side loses ``n·(f_flux - b_flux)`` in its row, each of the right gains it; the
  matrix gets the derivative of each side's flux by each of its states (``kf·B`` for A);
- ``~ A << (f)``: ``rhs_A += f`` with no matrix term; ``~ A -> (k)``: a reaction with
  nothing on its right;
- each CONSERVE replaces the row of one of its states (the last in the text not already
  replaced by a later CONSERVE) by ``sum(n·vol·s) = total``, written ``rhs = total -
  sum(n·vol·s)``, matrix ``n·vol``;
- the rate expressions are pasted in front of the reactants as text, so ``(a + b, kb)``
  gives ``f_flux = a + b*A`` in NEURON; the lowering reproduces that.

``sparse`` saves the states, then repeats: assemble, solve ``M·x = rhs``, ``s += x``; once
if every reaction is first order in its states (nocmodl's ``_linmat``), else until
``sum |x| <= 1e-6`` (at most 22 passes; states set to 0 where they fall below 0). Then the
block runs once more with the new states (it may compute values the BREAKPOINT uses).
``STEADYSTATE sparse`` runs the same with ``dt = 1e9``: one converged solve for a linear
scheme, else up to 7 single passes until no state is below ``-1e-6`` and then a converged
solve, as scopmath's ``_ss_sparse``.

The elimination is straight-line code: the system's nonzero entries are locals, eliminated
in a fixed order (the states' own rows first, the CONSERVE rows last) without pivoting,
as NEURON's solver has none either; the passes (and STEADYSTATE's tries) are a ``while``
loop.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import expressions as ex
from .syntax import Context, reads_and_calls, unwrap

__all__ = ["KineticLowering"]

#: scopmath's constants (errcodes.hpp): Newton tolerance on sum |dx| and the pass limit
CONVERGE = 1e-6
MAX_PASSES = 22            # ``for (j = 0; err > CONVERGE; j++) {...; if (j > 20) fail}``
STEADY_DT = 1e9            # _ss_sparse's dt [ms]
STEADY_TRIES = 7
#: the most nonzero entries the eliminated system may have (fill-in included): the
#: unrolled elimination grows with them, and its compilation time with it
MAX_ENTRIES = 400
_LOW = {"+", "-", "<", "<=", ">", ">=", "==", "!=", "&&", "||"}


@dataclass
class _Scheme:
    """The structure of a KINETIC block's system (what does not depend on values)."""

    name: str
    states: list = field(default_factory=list)     # in elimination order
    conserve: list = field(default_factory=list)   # each CONSERVE's row's state, in order
    volumes: dict = field(default_factory=dict)    # state -> volume AST
    nonzero: set = field(default_factory=set)      # (row state, column state)
    linear: bool = True

    def m(self, row: str, col: str) -> str:
        """The local holding the matrix entry (states by their index: names may hold
        underscores)."""
        return f"kin__m_{self.states.index(row)}_{self.states.index(col)}"


def _terms(node, element=None) -> list:
    """``A + 2 B`` as [(name, count), ...] in the order nocmodl keeps them (reversed);
    ``element`` names an array element's field (an IndexedName of the AST)."""
    out = []

    def walk(e):
        e = unwrap(e)
        if type(e).__name__ == "BinaryExpression" and e.op.eval() == "+":
            walk(e.lhs)
            walk(e.rhs)
            return
        if type(e).__name__ != "ReactVarName":
            raise ValueError(type(e).__name__)
        if e.name.index is not None or (type(e.name.name).__name__ == "IndexedName"
                                        and element is None):
            raise ValueError("array element")
        count = int(e.value.eval()) if e.value is not None else 1
        name = element(e.name.name) if type(e.name.name).__name__ == "IndexedName" \
            else e.name.get_node_name()
        out.append((name, count))

    walk(node)
    return out[::-1]


def _located(err: ValueError) -> None:
    """Raise ``err`` again where it is already a located NmodlError (an array element's
    index that cannot be known, from :meth:`element_name`)."""
    if hasattr(err, "construct"):
        raise err


def _splice_path(node) -> list:
    """Where nocmodl's text ``rate * A`` attaches ``* A`` in the rate's tree: the right
    operands of the operators binding less tightly than ``*`` (parentheses stop it)."""
    path = []
    node = node.expression if type(node).__name__ == "WrappedExpression" else node
    while type(node).__name__ == "BinaryExpression" and node.op.eval() in _LOW:
        path.append(3)
        node = node.rhs
        node = node.expression if type(node).__name__ == "WrappedExpression" else node
    return path


def _splice(tree, path, factors):
    """``tree`` with ``factors`` multiplied, left to right, into the operand at ``path``."""
    if path:
        parts = list(tree)
        parts[path[0]] = _splice(tree[path[0]], path[1:], factors)
        return tuple(parts)
    for f in factors:
        tree = ("bin", "*", tree, f)
    return tree


def _filled(order, nonzero) -> set:
    """The nonzero entries of the system after elimination in ``order`` (fill-in)."""
    nz = set(nonzero)
    for k, p in enumerate(order):
        for i in order[k + 1:]:
            if (i, p) in nz:
                nz |= {(i, j) for j in order[k + 1:] if (p, j) in nz}
    return nz


def _reindent(text: str, pad: str) -> str:
    return "".join(pad + line for line in text.splitlines(True))


class KineticLowering:
    """SOLVE of KINETIC blocks by sparse, and STEADYSTATE sparse in INITIAL."""

    # ---- the structure ------------------------------------------------------------------
    def kinetic_scheme(self, name) -> _Scheme:
        cache = self.__dict__.setdefault("_schemes", {})
        if name in cache:
            return cache[name]
        block = self.kinetics[name]
        pat = rf"KINETIC\s+{name}\b"
        reactions, conserves = [], []

        def walk(stmts, nested, rename):
            for st in stmts:
                k = type(st).__name__
                if k == "ReactionStatement":
                    reactions.append((st, dict(rename)))
                elif k == "Conserve":
                    if nested:
                        self.fail("CONSERVE", "inside an IF or FROM (nocmodl would leave the "
                                  "row's previous value where it is skipped)",
                                  r"\bCONSERVE\b")
                    conserves.append(st)
                elif k in ("Compartment", "LonDiffuse") and nested:
                    construct = "COMPARTMENT" if k == "Compartment" \
                        else "LONGITUDINAL_DIFFUSION"
                    self.fail(construct, "inside an IF or FROM is not translated",
                              rf"\b{construct}\b")
                elif k == "Compartment":
                    self._compartment(st, scheme, pat)
                elif k == "FromStatement":
                    values = self.from_values(st)
                    var = st.get_node_name()
                    for i in values if values is not None else [None]:
                        inner = dict(rename)
                        if i is not None:
                            inner[var] = ("num", i)
                        walk(st.statement_block.statements, True, inner)
                elif k in ("IfStatement", "ElseIfStatement", "ElseStatement"):
                    walk(st.statement_block.statements, True, rename)
                    if k == "IfStatement":
                        walk(st.elseifs, True, rename)
                        if st.elses is not None:
                            walk([st.elses], True, rename)

        scheme = _Scheme(name)
        walk(block.statement_block.statements, False, {})
        used: list = []

        def mark(n):
            if n in self.state_names and n not in used:
                used.append(n)

        parsed = []
        for st, rename in reactions:
            op = st.op.eval()
            element = self._element_of(rename, r"~")
            try:
                left = _terms(st.reaction1, element)
                right = _terms(st.reaction2, element) if st.reaction2 is not None else []
            except ValueError as err:
                _located(err)
                self.fail("~", f"a reaction term that is not a scalar name ({err})", r"~",
                          pat)
            if op == "<<":
                (y, count), = left if len(left) == 1 else [(None, 0)]
                if y is None or count != 1 or y not in self.state_names:
                    self.fail("~", "a flux (<<) acts on one STATE", r"<<", pat)
            parsed.append((st, op, left, right))
            for n, _ in left + right:
                mark(n)
        cons_terms = []
        for st in conserves:
            try:
                terms = _terms(st.react, self._element_of({}, r"\bCONSERVE\b"))
            except ValueError as err:
                _located(err)
                self.fail("CONSERVE", f"a term that is not a scalar name ({err})",
                          r"\bCONSERVE\b")
            for n, _ in terms:
                if n not in self.state_names:
                    self.fail("CONSERVE", f"{n} is not a STATE (only states are conserved)",
                              r"\bCONSERVE\b")
                mark(n)
            cons_terms.append((st, terms))
        if not used:
            self.fail(f"KINETIC {name}", "contains no reactions", pat)
        ions = [n for n in used if n in self.ion_states]
        if ions:
            self.fail(f"KINETIC {name}", f"the concentration {ions[0]} (a STATE the "
                      "mechanism WRITEs) in a reaction is not translated", pat)
        self._scheme_rows(scheme, used, parsed, cons_terms, pat)
        cache[name] = scheme
        return scheme

    def _scheme_rows(self, scheme, used, parsed, cons_terms, pat):
        """The rows (each CONSERVE's state), the elimination order, the nonzero entries
        and whether the scheme is linear (nocmodl's ``_linmat``)."""
        # the CONSERVE statements, last first, each take the row of their last state
        # that no later one took (nocmodl's numbering)
        rows = [None] * len(cons_terms)
        for k in range(len(cons_terms) - 1, -1, -1):
            y = next((n for n, _ in cons_terms[k][1] if n not in rows), None)
            if y is None:
                self.fail("CONSERVE", "no state left to replace the equation of (NEURON "
                          "fails to diagonalize the matrix too)", r"\bCONSERVE\b")
            rows[k] = y
        scheme.conserve = rows
        conserved = set(rows)
        declared = [s.name for s in self.states if s.name in used]
        scheme.states = [n for n in declared if n not in conserved] + \
            [n for n in declared if n in conserved]
        nz = {(n, n) for n in scheme.states}
        for st, op, left, right in parsed:
            if op == "<<":
                if left[0][0] in conserved:
                    self.fail("~", f"{left[0][0]} is conserved and has a flux (NEURON "
                              "refuses it too)", r"<<", pat)
                continue
            for side in (left, right):
                for rt, count in side:
                    if rt not in self.state_names:
                        continue
                    others = sum(c for n, c in side) - 1
                    if others > 0:
                        scheme.linear = False
                    for rt1, _ in left + right:
                        if rt1 in self.state_names and rt1 not in conserved:
                            nz.add((rt1, rt))
        for row, (st, terms) in zip(rows, cons_terms):
            for n, _ in terms:
                nz.add((row, n))
        scheme.nonzero = nz
        filled = len(_filled(scheme.states, nz))
        if filled > MAX_ENTRIES:
            self.fail(f"KINETIC {scheme.name}", f"{len(used)} states whose system has "
                      f"{filled} nonzero entries once eliminated: more than {MAX_ENTRIES} "
                      "are not translated", pat)

    def _compartment(self, st, scheme, pat):
        self.compartment_volumes(st, scheme.volumes)

    def _element_of(self, rename, pattern):
        """The field of an array element in a reaction, with the FROM values ``rename``."""
        return lambda indexed: self.element_name(indexed, rename, pattern)

    # ---- code ---------------------------------------------------------------------------
    def kinetic_solve(self, name, *, steady: bool = False) -> str:
        """Statements advancing the states of KINETIC ``name`` one step (``METHOD
        sparse``), or to the steady state (``STEADYSTATE sparse``, in INITIAL)."""
        scheme = self.kinetic_scheme(name)
        block = self.kinetics[name]
        pat = rf"KINETIC\s+{name}\b"
        where = f"KINETIC {name}"
        if not steady:
            self.__dict__.setdefault("_solved_kinetic", set()).add(name)
        stmts = block.statement_block.statements
        ctx = self._kinetic_context(name, where, pat, steady)
        prefix = self.ion_copies(stmts, ctx)
        dt = f"{STEADY_DT!r}" if steady else "dt"
        if steady:
            self._refuse_dt_readers(stmts, name)
        # one assembly pass and the final pass, lowered once and repeated
        ctx.kinetic_mode, ctx.kinetic_conserved = "assemble", 0
        assemble = self._fun_start(scheme, ctx, dt) + "".join(self.statements(stmts, ctx))
        ctx.kinetic_mode = "final"
        final = "".join(self.statements(stmts, ctx))
        solve = self._eliminate(scheme)
        setup = "".join(f"kin__x_{y} = 0.0\n" for y in scheme.states) + \
            "f_flux = 0.0\nb_flux = 0.0\nkin__err = 0.0\n" + \
            (f"kin__dt = {STEADY_DT!r}\n" if steady else "")
        out = [prefix, setup]
        if not steady:
            out.append(self._sparse(scheme, assemble, solve, final, scheme.linear, ""))
        elif scheme.linear:
            out.append(self._sparse(scheme, assemble, solve, final, False, ""))
        else:
            # single passes until no state is below -1e-6, then one converged solve (the
            # tries after the one that succeeds are skipped, so the solve is written once)
            # (a loop: the tries' code written once)
            out.append("kin__ss = 0.0\nkin__try = 0.0\n")
            body = [self._sparse(scheme, assemble, solve, final, True, ""),
                    "kin__ss = 1.0\n"]
            for y in scheme.states:
                yt = ex.py_name(y)
                body.append(f"if {yt} < -1e-06:\n    {yt} = 0.0\n    kin__ss = 0.0\n")
            body.append("kin__try = (kin__try + 1.0)\n")
            out.append(f"while kin__ss == 0.0 and kin__try < {float(STEADY_TRIES)!r}:\n"
                       + _reindent("".join(body), "    "))
            out.append("if kin__ss == 1.0:\n" + _reindent(
                self._sparse(scheme, assemble, solve, final, False, ""), "    "))
        return "".join(out)

    def _kinetic_context(self, name, where, pat, steady) -> Context:
        ctx = Context(where, [pat], fields=True)
        ctx.local_suffix = f"__{name}"
        for n in ("f_flux", "b_flux"):
            if n in self.field_names:
                self.fail(n, "a variable named like nocmodl's reaction fluxes",
                          rf"\b{n}\b")
            ctx.locals.add(n)
        ctx.scheme = self.kinetic_scheme(name)
        ctx.kinetic = self._kinetic_statement
        if steady:
            ctx.rename["dt"] = ("name", "kin__dt")
            ctx.locals.add("kin__dt")
        return ctx

    def _refuse_dt_readers(self, stmts, name):
        """STEADYSTATE sets NEURON's dt to 1e9 while the block runs: a PROCEDURE that
        reads dt would see it, and the inlined procedures here read the step's dt."""
        for g in sorted(reads_and_calls(stmts)[1]):
            if g in self.procedures and "dt" in self.procedure_info(g).fields_used:
                self.fail(f"SOLVE {name} STEADYSTATE sparse", f"{g} reads dt, which NEURON "
                          "sets to 1e9 during STEADYSTATE", rf"SOLVE\s+{name}\s+STEADYSTATE")

    def _fun_start(self, scheme, ctx, dt) -> str:
        """The rows' backward-Euler part: ``rhs = -(1/dt)·(s - s_old)``, diagonal
        ``1/dt``, times the COMPARTMENT volume; every other entry 0."""
        conserved = set(scheme.conserve)
        out = [f"kin__dt1 = (1.0 / {dt})\n"]
        for y in scheme.states:
            if y in conserved:
                continue
            out.append(f"kin__r_{y} = ((-kin__dt1) * ({ex.py_name(y)} - kin__old_{y}))\n"
                       f"{scheme.m(y, y)} = kin__dt1\n")
            if y in scheme.volumes:
                vol = ex.to_text(self._volume(scheme, y, ctx))
                out.append(f"kin__r_{y} = (kin__r_{y} * {vol})\n"
                           f"{scheme.m(y, y)} = ({scheme.m(y, y)} * {vol})\n")
        for r, c in sorted(scheme.nonzero):
            if r != c or r in conserved:
                out.append(f"{scheme.m(r, c)} = 0.0\n")
        return "".join(out)

    def _volume(self, scheme, y, ctx):
        node, index, k = scheme.volumes[y]
        return self.indexed_expr(node, index, k, ctx)

    def _sparse(self, scheme, assemble, solve, final, linflag, pad) -> str:
        """scopmath's ``sparse``: the states saved, the Newton passes, the final pass."""
        out = [f"kin__old_{y} = {ex.py_name(y)}\n" for y in scheme.states]
        update = []
        for y in scheme.states:
            yt = ex.py_name(y)
            update.append(f"{yt} = ({yt} + kin__x_{y})\n")
            if not linflag:
                update.append(f"if {yt} < 0.0:\n    {yt} = 0.0\n")
                update.append(f"kin__err = (kin__err + fabs(kin__x_{y}))\n")
        one = assemble + solve + "".join(update)
        if linflag:
            out.append(one + final)
            return _reindent("".join(out), pad)
        # the passes as a loop (the pass's code written once): the last pass does not
        # test convergence
        body = ("kin__err = 0.0\n" + one
                + f"if kin__pass < {float(MAX_PASSES - 1)!r}:\n"
                f"    if kin__err <= {CONVERGE!r}:\n        kin__conv = 1.0\n"
                "kin__pass = (kin__pass + 1.0)\n")
        out.append("kin__conv = 0.0\nkin__pass = 0.0\n"
                   f"while kin__conv == 0.0 and kin__pass < {float(MAX_PASSES)!r}:\n"
                   + _reindent(body, "    "))
        # past the pass limit NEURON returns without the final pass
        out.append("if kin__conv == 1.0:\n" + _reindent(final or "pass\n", "    "))
        return _reindent("".join(out), pad)

    def _eliminate(self, scheme) -> str:
        """Gaussian elimination of ``M·x = rhs`` over the nonzero entries, no pivoting,
        rows in the scheme's order; then back substitution into ``kin__x_<state>``."""
        order = scheme.states
        nz = set(scheme.nonzero)
        out = []
        for k, p in enumerate(order):
            for i in order[k + 1:]:
                if (i, p) not in nz:
                    continue
                out.append(f"kin__f = ({scheme.m(i, p)} / {scheme.m(p, p)})\n")
                for j in order[k + 1:]:
                    if (p, j) in nz:
                        if (i, j) not in nz:
                            nz.add((i, j))
                            out.append(f"{scheme.m(i, j)} = (-(kin__f * {scheme.m(p, j)}))\n")
                        else:
                            out.append(f"{scheme.m(i, j)} = ({scheme.m(i, j)} - (kin__f * "
                                       f"{scheme.m(p, j)}))\n")
                out.append(f"kin__r_{i} = (kin__r_{i} - (kin__f * kin__r_{p}))\n")
        for k in range(len(order) - 1, -1, -1):
            p = order[k]
            acc = f"kin__r_{p}"
            for j in order[k + 1:]:
                if (p, j) in nz:
                    acc = f"({acc} - ({scheme.m(p, j)} * kin__x_{j}))"
            out.append(f"kin__x_{p} = ({acc} / {scheme.m(p, p)})\n")
        return "".join(out)

    # ---- statements ---------------------------------------------------------------------
    def _kinetic_statement(self, st, ctx, pad) -> list:
        """A reaction, CONSERVE or COMPARTMENT at its place in the block."""
        k = type(st).__name__
        assemble = ctx.kinetic_mode == "assemble"
        if k in ("Compartment", "LonDiffuse"):
            return []
        if k == "Conserve":
            return [pad + line for line in self._conserve(st, ctx)] if assemble else []
        return [pad + line for line in self._reaction(st, ctx, assemble)]

    def _conserve(self, st, ctx) -> list:
        """``CONSERVE n·A + B = total``: its row ``total - n·vol_A·A - vol_B·B``, matrix
        ``n·vol`` (nocmodl writes the terms last first)."""
        scheme = ctx.scheme
        row = scheme.conserve[ctx.kinetic_conserved]
        ctx.kinetic_conserved += 1
        total = self._expr(st.expr, ctx)
        out = [f"kin__r_{row} = {ex.to_text(total)}\n"]
        for n, count in _terms(st.react, self._element_of(ctx.rename, r"\bCONSERVE\b")):
            vol = self._volume(scheme, n, ctx) if n in scheme.volumes else None
            coef = ("num", float(count))
            coef_text = f"{float(count)!r}"
            term = ("name", n)
            if vol is not None:
                coef_text = ex.to_text(("bin", "*", coef, vol))
                term = ("bin", "*", term, vol)
            if count != 1:
                term = ("bin", "*", term, coef)
            out.append(f"{scheme.m(row, n)} = {coef_text}\n")
            out.append(f"kin__r_{row} = (kin__r_{row} - {ex.to_text(term)})\n")
        return out

    def _reaction(self, st, ctx, assemble) -> list:
        """A reaction: ``f_flux``, ``b_flux``, and when assembling, its rows and matrix
        entries."""
        scheme = ctx.scheme
        conserved = set(scheme.conserve)
        op = st.op.eval()
        element = self._element_of(ctx.rename, r"~")
        left = _terms(st.reaction1, element)
        right = _terms(st.reaction2, element) if st.reaction2 is not None else []
        name_tree = self._reactant_tree(ctx)
        if op == "<<":
            y = left[0][0]
            flux = self._expr(st.expression1, ctx)
            out = ["f_flux = 0.0\n", "b_flux = 0.0\n",
                   f"b_flux = {ex.to_text(flux)}\n"]
            if assemble:
                out.append(f"kin__r_{y} = (kin__r_{y} + b_flux)\n")
            return out
        rates = [st.expression1, st.expression2 if op == "<->" else None]
        if op not in ("<->", "->"):
            self.fail("~", f"reaction operator {op} is not translated", r"~", *ctx.patterns)
        sides = (left, right)
        out = []
        for j, var in enumerate(("f_flux", "b_flux")):
            rate = rates[j]
            if rate is None:
                out.append(f"{var} = 0.0\n")
                continue
            factors = [name_tree(n) for n, c in sides[j] for _ in range(c)]
            path = _splice_path(rate) if op == "<->" else []    # ``-> (k)``: in parentheses
            tree = _splice(self._expr(rate, ctx), path, factors)
            out.append(f"{var} = {ex.to_text(tree)}\n")
        if not assemble:
            return out
        for j, sign in ((0, "-"), (1, "+")):
            for n, c in sides[j]:
                if n not in self.state_names or n in conserved:
                    continue
                amount = "(f_flux - b_flux)" if c == 1 else f"({float(c)!r} * (f_flux - " \
                                                            "b_flux))"
                out.append(f"kin__r_{n} = (kin__r_{n} {sign} {amount})\n")
        for j in (0, 1):
            rate = rates[j]
            for rt, c in sides[j]:
                if rt not in self.state_names or rate is None:
                    continue
                factors = [("num", float(c))] if c != 1 else []
                for n1, c1 in sides[j]:
                    factors += [name_tree(n1)] * (c1 - (1 if n1 == rt else 0))
                path = _splice_path(rate) if op == "<->" else []
                tree = _splice(self._expr(rate, ctx), path, factors)
                out.append(f"kin__term = {ex.to_text(tree)}\n")
                for j1 in (0, 1):
                    for rt1, c1 in sides[j1]:
                        if rt1 not in self.state_names or rt1 in conserved:
                            continue
                        sign = "+" if j == j1 else "-"
                        amount = "kin__term" if c1 == 1 else f"({float(c1)!r} * kin__term)"
                        out.append(f"{scheme.m(rt1, rt)} = ({scheme.m(rt1, rt)} {sign} "
                                   f"{amount})\n")
        return out

    def _reactant_tree(self, ctx):
        def tree(n):
            e = ex.substitute(ex.substitute(("name", n), self.const), ctx.rename)
            for m in ex.names(e):
                self._check_name(m, ctx)
            return e
        return tree
