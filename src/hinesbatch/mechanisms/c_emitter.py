"""Emit a mechanism description as C (the form a CUDA C++ engine includes).

The same code blocks that :mod:`.codegen` compiles for Numba, printed as C functions over a
structure-of-arrays instance block: field ``k`` of instance ``j`` of ``n`` is
``D[k*n + j]``. Every operation keeps the description's order and parentheses, and
``exp`` is NEURON's ``hoc_Exp`` (:data:`C_PRELUDE`), so a C compiler without
``-ffast-math`` and without FMA contraction (``-ffp-contract=off``; CUDA: ``--fmad=false``)
computes NEURON's values. A division ``a / b`` is printed ``hb_div(a, b)``: the operator in
C (:data:`C_PRELUDE`); the GPU engine's device build defines it for ``double`` as a product
with a reciprocal (:mod:`hinesbatch.engine.gpu.source`).

Functions for mechanism ``m`` (only those its description has):

- ``double m_<function>(args..., double celsius)``; for a TABLE FUNCTION also
  ``double m_<function>_lookup(double arg, const double* table)``;
- ``void m_<proc>_exact(double arg, reads..., double celsius, double dt, double* out)``
  for a TABLE procedure (its outputs, then the variables it also writes; ``reads``: the
  table's ``Table.reads``),
  ``void m_<proc>_build(double celsius, double dt, reads..., double* table)``
  (``(outputs + those GLOBALs) × (n+1)``) and
  ``void m_<proc>_lookup(double arg, const double* table, double* out)``;
- the blocks' ``table`` holds the mechanism's tables one after another, the tabulated
  PROCEDUREs' then the FUNCTIONs' (:func:`table_offsets`);
- ``void m_initial(double* D, long n, long j, double v, double t, double dt,
  double celsius, const double* table)``;
- ``double m_current(double* D, long n, long j, double v, double t, double dt,
  double celsius, const double* table)``: the BREAKPOINT, returning the sum of the currents;
- ``void m_state(...)`` (same arguments): the state block, cnexp and after-solve code;
- ``void m_net_receive(double* D, long n, long j, double weight, double* W, double t,
  double dt, double celsius)``: ``W`` holds the entries after the first of the NetCon's
  weight vector (``net_receive_args``, loaded into locals ``w_<name>`` and stored back;
  ``NULL`` without them). ``flag`` is 0: the C forms receive NetCon events only, and
  ``net_send``, ``net_event``, ``watch_above``, ``netcons()`` loops and assignments to
  ``weight`` are refused.
"""
from __future__ import annotations

import ast
import copy

from .codegen import _BINOPS, _CMPOPS, CodegenError, _name, _parse_expr
from .description import Mechanism
from .scoprand import DRAWS, SEED_CALL

__all__ = ["C_PRELUDE", "emit_c", "emit_helpers", "table_offsets", "weight_vector_code"]

C_PRELUDE = """#include <math.h>
/* NEURON's hoc_Exp: 0 below -700, exp(700) above 700, else the C library's exp. */
static double hoc_Exp(double x) {
    if (x < -700.0) return 0.0;
    if (x > 700.0) return exp(700.0);
    return exp(x);
}
#define hb_div(a, b) ((a) / (b))
"""
_INTRINSICS = {"exp": "hoc_Exp", "log": "log", "pow": "pow", "fabs": "fabs", "sqrt": "sqrt",
               **{f: f for f in ("log10", "sin", "cos", "tan", "asin", "acos", "atan",
                                 "atan2", "sinh", "cosh", "tanh", "fmod", "floor", "ceil")}}
_SPECIAL = {"v": "v", "t": "t", "dt": "dt", "celsius": "celsius"}
_ARGS = "double* D, long n, long j, double v, double t, double dt, double celsius, " \
        "const double* table"


def table_offsets(mech: Mechanism) -> dict:
    """Where each table starts in the mechanism's ``table`` (values, not bytes): the
    tabulated PROCEDUREs' (outputs and side GLOBALs × (n+1)), then the FUNCTIONs' (n+1)."""
    out, k = {}, 0
    for c in [p for p in mech.procedures if p.table is not None] + \
            [f for f in mech.functions if f.table is not None]:
        out[c.name] = k
        k += (len(c.table.outputs) + len(c.table.side)) * (int(c.table.n) + 1)
    return out


class _CScope:
    """How names resolve in one block: arguments, ``weight``, the special names, fields
    (:meth:`field`), else locals ``l_<name>``. ``table``: whether the block has the
    mechanism's tables (not FUNCTION bodies nor NET_RECEIVE)."""

    def __init__(self, mech: Mechanism, *, fields: bool, args=None, weight=False,
                 table: bool = True):
        self.mech = mech
        self.table = table
        self.fields = {f: k for k, f in enumerate(mech.field_names)} if fields else {}
        self.args = dict(args or {})
        self.weight = weight
        self.special = _SPECIAL
        self.zero = "0.0"          # the literal 0 of the C type (``flag``)
        self.locals: set = set()

    def inner(self, args: dict):
        """The scope of an inlined procedure: its arguments, the same locals and fields."""
        inner = copy.copy(self)
        inner.args = dict(args)
        return inner

    def field(self, name: str) -> str:
        return f"D[{self.fields[name]}*n + j]"

    def name(self, name: str) -> str:
        name = _name(name)
        if name in self.args:
            return self.args[name]
        if self.weight:
            if name == "weight":
                return "weight"
            if name in self.mech.net_receive_args:
                return f"w_{name}"
            if name == "flag":
                return self.zero
        if name in self.special:
            return self.special[name]
        if name in self.fields:
            return self.field(name)
        self.locals.add(name)
        return f"l_{name}"


class _CEmitter:
    """Prints code blocks as C. ``real`` is the C type of values and locals (``double``, or
    ``real`` for code compiled in either precision, where literals become ``R(...)``)."""

    def __init__(self, mech: Mechanism, tables: bool, real: str = "double"):
        self.mech, self.tables, self.real = mech, tables, real
        self.functions = {f.name: f for f in mech.functions}
        self.procedures = {p.name: p for p in mech.procedures}
        self.offsets = table_offsets(mech)
        self.counter = 0

    def table_of(self, name: str) -> str:
        """The C expression of the table of ``name`` within the block's ``table``."""
        k = self.offsets[name]
        return f"(table + {k})" if k else "table"

    def block(self, text: str, scope, indent: int) -> str:
        body = ast.parse(text.strip() or "pass").body
        return self.statements(body, scope, indent)

    def statements(self, body, scope, indent: int) -> str:
        pad = "    " * indent
        out = []
        for st in body:
            if isinstance(st, ast.Assign) and len(st.targets) == 1 \
                    and isinstance(st.targets[0], ast.Name) and scope.weight \
                    and st.targets[0].id == "weight":
                raise CodegenError(f"mechanism {self.mech.name}: an assigned NetCon weight "
                                   "(NET_RECEIVE's first argument) is not emitted as C")
            elif isinstance(st, ast.Assign) and len(st.targets) == 1 \
                    and isinstance(st.targets[0], ast.Name):
                out.append(f"{pad}{scope.name(st.targets[0].id)} = {self.expr(st.value, scope)};\n")
            elif isinstance(st, ast.If):
                out.append(f"{pad}if ({self.expr(st.test, scope)}) {{\n")
                out.append(self.statements(st.body, scope, indent + 1))
                if st.orelse:
                    out.append(f"{pad}}} else {{\n")
                    out.append(self.statements(st.orelse, scope, indent + 1))
                out.append(f"{pad}}}\n")
            elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) \
                    and getattr(st.value.func, "id", None) in ("net_send", "net_event"):
                raise CodegenError(f"mechanism {self.mech.name}: self-events (net_send) "
                                   "and spikes of point processes (net_event) are not "
                                   "emitted as C")
            elif isinstance(st, ast.For) or (
                    isinstance(st, ast.Expr) and isinstance(st.value, ast.Call)
                    and getattr(st.value.func, "id", None) == "watch_above"):
                raise CodegenError(f"mechanism {self.mech.name}: FOR_NETCONS (netcons()) "
                                   "and WATCH (watch_above) are not emitted as C")
            elif isinstance(st, ast.While) and not st.orelse:
                out.append(f"{pad}while ({self.expr(st.test, scope)}) {{\n")
                out.append(self.statements(st.body, scope, indent + 1))
                out.append(f"{pad}}}\n")
            elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
                out.append(self.call_procedure(st.value, scope, indent))
            elif isinstance(st, ast.Pass):
                continue
            else:
                raise CodegenError(f"mechanism {self.mech.name}: {ast.dump(st)[:60]} is not "
                                   "in the statement language")
        return "".join(out)

    def call_procedure(self, call, scope, indent: int) -> str:
        pad = "    " * indent
        p = self.procedures.get(getattr(call.func, "id", None))
        if getattr(call.func, "id", None) == SEED_CALL:
            _no_stream(self.mech, SEED_CALL)
        if p is None:
            raise CodegenError(f"mechanism {self.mech.name}: unknown procedure "
                               f"{ast.dump(call.func)[:40]}")
        args = [self.expr(a, scope) for a in call.args]
        self.counter += 1
        if p.table is not None:
            m = self.mech.name
            reads = "".join(f"{scope.name(a)}, " for a in p.table.reads)
            what = f"{m}_{p.name}_lookup({args[0]}, {self.table_of(p.name)}, " \
                f"r{self.counter})" if self.tables \
                else f"{m}_{p.name}_exact({args[0]}, {reads}celsius, dt, r{self.counter})"
            # the exact form also gives the GLOBALs it writes besides the outputs
            got = p.table.outputs + (() if self.tables else p.table.side)
            src = (f"{pad}{{ {self.real} r{self.counter}"
                   f"[{len(p.table.outputs) + len(p.table.side)}];\n{pad}{what};\n")
            for k, o in enumerate(got):
                src += f"{pad}{scope.name(o)} = r{self.counter}[{k}];\n"
            return src + f"{pad}}}\n"
        inner = scope.inner({a: f"p{self.counter}_{a}" for a in p.args})
        src = "".join(f"{pad}{self.real} p{self.counter}_{a} = {v};\n"
                      for a, v in zip(p.args, args))
        return src + self.block(p.body, inner, indent)

    def expr(self, node, scope) -> str:
        e = lambda n: self.expr(n, scope)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
                and not isinstance(node.value, bool):
            return self.literal(float(node.value))
        if isinstance(node, ast.Name):
            return scope.name(node.id)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            if isinstance(node.op, ast.Pow):
                return f"pow({e(node.left)}, {e(node.right)})"
            if isinstance(node.op, ast.Div):
                return f"hb_div({e(node.left)}, {e(node.right)})"
            return f"({e(node.left)} {_BINOPS[type(node.op)]} {e(node.right)})"
        if isinstance(node, ast.UnaryOp):
            op = {ast.USub: "-", ast.UAdd: "+", ast.Not: "!"}.get(type(node.op))
            if op:
                return f"({op}{e(node.operand)})"
        if isinstance(node, ast.BoolOp):
            op = " && " if isinstance(node.op, ast.And) else " || "
            return "(" + op.join(e(v) for v in node.values) + ")"
        if isinstance(node, ast.Compare) and len(node.ops) == 1 \
                and type(node.ops[0]) in _CMPOPS:
            return f"({e(node.left)} {_CMPOPS[type(node.ops[0])]} {e(node.comparators[0])})"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            f, args = node.func.id, [e(a) for a in node.args]
            if f in _INTRINSICS:
                return f"{_INTRINSICS[f]}({', '.join(args)})"
            if f in DRAWS:
                _no_stream(self.mech, f)
            fn = self.functions.get(f)
            if fn is not None and fn.table is not None and self.tables:
                if not scope.table:
                    raise CodegenError(f"mechanism {self.mech.name}: the TABLE of FUNCTION "
                                       f"{f} is not available in FUNCTIONs and NET_RECEIVE")
                return f"{self.mech.name}_{f}_lookup({args[0]}, {self.table_of(f)})"
            if fn is not None:
                return f"{self.mech.name}_{f}({', '.join(args + ['celsius'])})"
        raise CodegenError(f"mechanism {self.mech.name}: {ast.dump(node)[:60]} is not in "
                           "the statement language")

    def literal(self, value: float) -> str:
        return repr(value) if self.real == "double" else f"R({value!r})"


def _no_stream(mech: Mechanism, f: str):
    raise CodegenError(f"mechanism {mech.name}: {f}() draws from NEURON's random-number "
                       "stream, which the serial CPU backend runs only (one sequence in "
                       "NEURON's order); use backend='serial'")


def _locals(scope, real: str = "double") -> str:
    return "".join(f"    {real} l_{n} = 0.0;\n" for n in sorted(scope.locals))


def emit_helpers(em: _CEmitter, qualifier: str = "static") -> list:
    """C of the mechanism's FUNCTIONs and TABLE procedures (``_exact``, ``_build``,
    ``_lookup``), in ``em.real``; ``qualifier`` prefixes every function."""
    mech, m, r, out = em.mech, em.mech.name, em.real, []
    lit = em.literal
    # prototypes first: a FUNCTION may call one defined after it
    out += [f"{qualifier} {r} {m}_{f.name}({''.join(f'{r} a_{a}, ' for a in f.args)}"
            f"{r} celsius);\n" for f in mech.functions]
    for f in mech.functions:
        scope = _CScope(mech, fields=False, args={a: f"a_{a}" for a in f.args}, table=False)
        body = em.block(f.body, scope, 1)
        args = "".join(f"{r} a_{a}, " for a in f.args)
        out.append(f"{qualifier} {r} {m}_{f.name}({args}{r} celsius) {{\n"
                   f"{_locals(scope, r)}{body}    return l_{f.name};\n}}\n")
        if f.table is not None:
            n, tmin = int(f.table.n), float(f.table.start)
            dx = (float(f.table.stop) - tmin) / float(n)
            out.append(
                f"{qualifier} {r} {m}_{f.name}_lookup({r} lv, const {r}* T) {{\n"
                f"    {r} xi = {lit(1.0 / dx)}*(lv - ({lit(tmin)}));\n"
                f"    if (isnan(xi)) return xi;\n"
                f"    if (xi <= {lit(0.0)}) return T[0];\n"
                f"    if (xi >= {lit(float(n))}) return T[{n}];\n"
                f"    int i = (int)xi;\n"
                f"    return T[i] + (xi - ({r})i)*(T[i + 1] - T[i]);\n}}\n")
    for p in mech.procedures:
        if p.table is None:
            continue
        tb, k = p.table, len(p.table.outputs)
        rows = k + len(tb.side)
        scope = _CScope(mech, fields=False, args={a: f"a_{a}" for a in p.args + tb.reads},
                        table=False)
        body = em.block(p.body, scope, 1)
        sets = "".join(f"    out[{i}] = l_{o};\n" for i, o in enumerate(tb.outputs + tb.side))
        reads = "".join(f"{r} a_{a}, " for a in tb.reads)
        passed = "".join(f"a_{a}, " for a in tb.reads)
        out.append(f"{qualifier} void {m}_{p.name}_exact({r} a_{p.args[0]}, {reads}"
                   f"{r} celsius, {r} dt, {r}* out) {{\n{_locals(scope, r)}{body}{sets}}}\n")
        n, tmin = int(tb.n), float(tb.start)
        dx = (float(tb.stop) - tmin) / float(n)
        out.append(
            f"{qualifier} void {m}_{p.name}_build({r} celsius, {r} dt, {reads}{r}* table) {{\n"
            f"    {r} x = {lit(tmin)}, r[{rows}];\n"
            f"    for (int i = 0; i < {n + 1}; ++i, x += {lit(dx)}) {{\n"
            f"        {m}_{p.name}_exact(x, {passed}celsius, dt, r);\n"
            f"        for (int o = 0; o < {rows}; ++o) table[o*{n + 1} + i] = r[o];\n"
            f"    }}\n}}\n"
            f"{qualifier} void {m}_{p.name}_lookup({r} lv, const {r}* table, {r}* out) {{\n"
            f"    {r} xi = {lit(1.0 / dx)}*(lv - ({lit(tmin)}));\n"
            f"    if (isnan(xi)) {{ for (int o = 0; o < {k}; ++o) out[o] = xi; return; }}\n"
            f"    if (xi <= {lit(0.0)}) {{ for (int o = 0; o < {k}; ++o) out[o] = table[o*{n + 1}];"
            f" return; }}\n"
            f"    if (xi >= {lit(float(n))}) {{ for (int o = 0; o < {k}; ++o) "
            f"out[o] = table[o*{n + 1} + {n}]; return; }}\n"
            f"    int i = (int)xi;\n    {r} th = xi - ({r})i;\n"
            f"    for (int o = 0; o < {k}; ++o) {{\n"
            f"        const {r}* T = table + o*{n + 1};\n"
            f"        out[o] = T[i] + th*(T[i + 1] - T[i]);\n    }}\n}}\n")
    return out


def emit_c(mech: Mechanism, *, tables: bool = True) -> str:
    """C source of ``mech``'s functions (see the module docstring); no prelude."""
    em, m = _CEmitter(mech, tables), mech.name
    out = emit_helpers(em)
    # per-instance blocks
    scope = _CScope(mech, fields=True)
    body = em.block(mech.initial, scope, 1)
    out.append(f"static void {m}_initial({_ARGS}) {{\n{_locals(scope)}{body}}}\n")
    if mech.currents:
        scope = _CScope(mech, fields=True)
        body = em.block(mech.breakpoint, scope, 1)
        total = "0.0"
        for c in mech.currents:
            total = f"({total} + {scope.name(c)})"
        out.append(f"static double {m}_current({_ARGS}) {{\n{_locals(scope)}{body}"
                   f"    return {total};\n}}\n")
    if mech.state or mech.cnexp or mech.after_solve:
        scope = _CScope(mech, fields=True)
        body = em.block(mech.state, scope, 1)
        for eq in mech.cnexp:
            y = scope.name(eq.state)
            a = em.expr(_parse_expr(eq.a, mech, "cnexp"), scope)
            b = em.expr(_parse_expr(eq.b, mech, "cnexp"), scope)
            body += f"    {y} = {y} + (1.0 - hoc_Exp(dt*{a}))*(hb_div(-{b}, {a}) - {y});\n"
        body += em.block(mech.after_solve, scope, 1)
        out.append(f"static void {m}_state({_ARGS}) {{\n{_locals(scope)}{body}}}\n")
    if mech.net_receive:
        scope = _CScope(mech, fields=True, weight=True, table=False)
        body = em.block(mech.net_receive, scope, 1)
        load, store = weight_vector_code(mech, "double")
        out.append(f"static void {m}_net_receive(double* D, long n, long j, double weight, "
                   f"double* W, double t, double dt, double celsius) {{\n{load}"
                   f"{_locals(scope)}{body}{store}}}\n")
    return "\n".join(out)


def weight_vector_code(mech: Mechanism, real: str) -> tuple[str, str]:
    """The loads of a NET_RECEIVE's weight-vector entries after the first (``W[k]``) into
    locals ``w_<name>`` of type ``real``, and their stores back."""
    load = "".join(f"    {real} w_{a} = ({real})W[{k}];\n"
                   for k, a in enumerate(mech.net_receive_args))
    store = "".join(f"    W[{k}] = (double)w_{a};\n"
                    for k, a in enumerate(mech.net_receive_args))
    return load, store
