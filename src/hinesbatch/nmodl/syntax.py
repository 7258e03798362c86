"""Reading ``neuron.nmodl``'s syntax tree: statement walkers, source positions, constants
and UNITS factors, and the context a block is lowered in."""
from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["UNIT_FACTORS", "Context", "IfLike", "code_lines", "constant_value",
           "discontinuity_target", "factor_value", "first_int", "reads_and_calls", "unwrap",
           "value_calls", "writes"]


def code_lines(text: str) -> list[str]:
    """The file's lines with comments blanked (``: ...``, ``COMMENT ... ENDCOMMENT``)."""
    out, in_comment = [], False
    for line in text.splitlines():
        stripped = line.strip()
        if in_comment:
            out.append("")
            if stripped.startswith("ENDCOMMENT"):
                in_comment = False
            continue
        if stripped.startswith("COMMENT"):
            in_comment = True
            out.append("")
            continue
        out.append(re.sub(r"[:?].*", "", line))
    return out


@dataclass
class IfLike:
    """An ELSE IF chain re-read as a nested IF."""

    condition: object
    statement_block: object
    elseifs: list
    elses: object


class Context:
    """What a block may read and write while it is lowered."""

    def __init__(self, where, patterns, *, fields, args=()):
        self.where, self.patterns, self.fields = where, patterns, fields
        self.args = set(args)
        self.locals: set = set()
        self.rename: dict = {}
        self.extra: set = set()
        self.readonly: dict = {}
        self.wrote: set = set()
        self.diffeq = None
        self.kinetic = None        # lowers reactions, CONSERVE, COMPARTMENT (KINETIC blocks)
        self.table_ok = where.startswith("PROCEDURE")
        self.local_suffix = ""
        self.calls = None          # value-procedure calls of the statement being lowered
        self.reads: set = set()    # and the names it reads
        self.return_tail = None    # a VERBATIM return here changes nothing (.verbatim)

    def declare_local(self, n: str) -> str:
        if self.local_suffix:
            new = n + self.local_suffix
            self.rename[n] = ("name", new)
            self.locals.add(new)
            return new
        self.locals.add(n)
        return n


def reads_and_calls(stmts, *, skip_diffeq: bool = False) -> tuple[set, set]:
    """Names read and functions/procedures called by ``stmts`` (without the right-hand
    sides of differential equations with ``skip_diffeq``)."""
    reads, calls = set(), set()

    def expr(e):
        k = type(e).__name__
        if k in ("Name", "VarName"):
            reads.add(e.get_node_name())
        elif k == "FunctionCall":
            calls.add(e.get_node_name())
            for a in e.arguments:
                expr(a)
        elif k == "BinaryExpression":
            if e.op.eval() != "=":
                expr(e.lhs)
            expr(e.rhs)
        elif k == "DiffEqExpression":
            if not skip_diffeq:
                expr(e.expression)
        elif k in ("UnaryExpression", "WrappedExpression", "ParenExpression"):
            expr(e.expression)

    def walk(sts):
        for st in sts:
            k = type(st).__name__
            if k == "ExpressionStatement":
                if type(unwrap(st.expression)).__name__ == "ForNetcon":
                    walk(unwrap(st.expression).statement_block.statements)
                else:
                    expr(st.expression)
            elif k in ("IfStatement", "ElseIfStatement", "WhileStatement"):
                expr(st.condition)
            if k in ("IfStatement", "ElseIfStatement", "ElseStatement", "FromStatement",
                     "WhileStatement"):
                walk(st.statement_block.statements)
            if k == "IfStatement":
                walk(st.elseifs)
                if st.elses is not None:
                    walk([st.elses])
    walk(stmts)
    return reads, calls


def value_calls(stmts) -> set:
    """Functions whose value ``stmts`` use (calls that are not whole statements)."""
    out: set = set()

    def expr(e):
        k = type(e).__name__
        if k == "FunctionCall":
            out.add(e.get_node_name())
            for a in e.arguments:
                expr(a)
        elif k == "BinaryExpression":
            expr(e.lhs)
            expr(e.rhs)
        elif k in ("UnaryExpression", "WrappedExpression", "ParenExpression",
                   "DiffEqExpression"):
            expr(e.expression)

    for st in stmts:
        k = type(st).__name__
        if k == "ExpressionStatement":
            e = unwrap(st.expression)
            if type(e).__name__ == "FunctionCall":
                for a in e.arguments:
                    expr(a)
            else:
                expr(e)
        if k in ("IfStatement", "ElseIfStatement", "WhileStatement"):
            expr(st.condition)
        if k in ("IfStatement", "ElseIfStatement", "ElseStatement", "FromStatement",
                 "WhileStatement"):
            out |= value_calls(st.statement_block.statements)
        if k == "IfStatement":
            out |= value_calls(st.elseifs)
            if st.elses is not None:
                out |= value_calls([st.elses])
    return out


def writes(stmts) -> set:
    out = set()
    for st in stmts:
        k = type(st).__name__
        if k == "ExpressionStatement":
            e = unwrap(st.expression)
            if type(e).__name__ == "ForNetcon":
                out |= writes(e.statement_block.statements)
            elif type(e).__name__ == "BinaryExpression" and e.op.eval() == "=":
                out.add(e.lhs.get_node_name())
            elif discontinuity_target(e) is not None:
                out.add(discontinuity_target(e))
        if k in ("IfStatement", "ElseIfStatement", "ElseStatement", "FromStatement",
                 "WhileStatement"):
            out |= writes(st.statement_block.statements)
        if k == "IfStatement":
            out |= writes(st.elseifs)
            if st.elses is not None:
                out |= writes([st.elses])
    return out


def discontinuity_target(e):
    """The variable ``state_discontinuity(y, value)`` assigns, or None for other
    expressions."""
    if type(e).__name__ == "FunctionCall" and e.get_node_name() == "state_discontinuity" \
            and len(e.arguments) == 2:
        return e.arguments[0].get_node_name()
    return None


def unwrap(e):
    while type(e).__name__ in ("WrappedExpression", "ParenExpression"):
        e = e.expression
    return e


def constant_value(e):
    if e[0] == "num":
        return float(e[1])
    if e[0] == "neg":
        v = constant_value(e[1])
        return None if v is None else -v
    if e[0] == "bin" and e[1] in "+-*/":
        a, b = constant_value(e[2]), constant_value(e[3])
        if a is None or b is None:
            return None
        return {"+": a + b, "-": a - b, "*": a * b, "/": a / b if b else None}[e[1]]
    return None


#: UNITS factors ``NAME = (unit1) (unit2)`` as NEURON 9.0.2's nocmodl evaluates them
#: (nrnunits.lib with the 2019 SI constants).
UNIT_FACTORS = {
    **{("faraday", u): 96485.33212331001 for u in ("coulomb", "coulombs", "coul")},
    ("faraday", "kilocoulombs"): 96.48533212331002,
    ("faraday", "10000 coulomb"): 9.648533212331001,
    ("k-mole", "joule/degC"): 8.31446261815324,
    ("pi", "1"): 3.141592653589793,
    ("e", "coulombs"): 1.602176634e-19, ("e", "coul"): 1.602176634e-19,
    ("k", "joule/degC"): 1.380649e-23,
    ("mole", "1"): 6.02214076e+23,
}


def factor_value(d):
    """The value of a UNITS factor definition, or None where it is not known."""
    value = getattr(d, "value", None)
    if value is not None:
        try:
            return float(value.eval())
        except (TypeError, ValueError):
            return None
    units = tuple(u.name.eval() if u is not None and u.name is not None else None
                  for u in (d.unit1, d.unit2))
    return UNIT_FACTORS.get(units)


def first_int(pattern, text):
    m = re.search(pattern, text)
    return int(m.group(1)) if m else None
