"""NMODL expressions as small trees: read from ``neuron.nmodl``'s AST, written in the
statement language of :mod:`hinesbatch.mechanisms.description`, and differentiated.

A tree is a tuple:

- ``("num", value)``: a literal (float);
- ``("name", name)``: a variable, argument, local or ``v``/``t``/``dt``/``celsius``;
- ``("bin", op, left, right)``: ``op`` one of ``+ - * / ^ < <= > >= == != && ||``;
- ``("neg", x)``, ``("not", x)``;
- ``("call", name, (args...))``;
- ``("index", array, index)``: an array element, until the index is folded to a constant
  and the element named ``array__k``.

Text is written with every operation parenthesised, in the tree's order, so that the
generated code evaluates each expression in the order nocmodl's C does; ``a^b`` becomes
``pow(a, b)`` as nocmodl writes it.
"""
from __future__ import annotations

import keyword

__all__ = ["ExpressionError", "derivative", "from_ast", "names", "substitute", "to_text"]

_BINOPS = {"+", "-", "*", "/", "^", "<", "<=", ">", ">=", "==", "!=", "&&", "||"}
_PY = {"&&": "and", "||": "or", "^": None}


class ExpressionError(ValueError):
    """An expression outside what the translator handles (the message says what)."""


def from_ast(node) -> tuple:
    """The tree of an expression node of ``neuron.nmodl``'s AST."""
    kind = type(node).__name__
    if kind in ("WrappedExpression", "ParenExpression"):
        return from_ast(node.expression)
    if kind in ("Double", "Integer", "Float"):
        return ("num", float(node.eval()))
    if kind == "DoubleUnit":     # ``10 (mV)``: the unit only annotates the number
        return from_ast(node.value)
    if kind == "Boolean":
        return ("num", 1.0 if node.eval() else 0.0)
    if kind == "Name":
        return ("name", node.get_node_name())
    if kind == "VarName":
        if type(node.name).__name__ == "IndexedName":
            return from_ast(node.name)
        if node.index is not None:
            raise ExpressionError(f"array element {node.get_node_name()}[...]")
        return ("name", node.get_node_name())
    if kind == "PrimeName":
        raise ExpressionError(f"derivative {node.get_node_name()}' outside a "
                              "DERIVATIVE block")
    if kind == "IndexedName":     # ("index", array, index): folded to a field by the caller
        return ("index", node.get_node_name(), from_ast(node.length))
    if kind == "BinaryExpression":
        op = node.op.eval()
        if op not in _BINOPS:
            raise ExpressionError(f"operator {op!r}")
        return ("bin", op, from_ast(node.lhs), from_ast(node.rhs))
    if kind == "UnaryExpression":
        op = node.op.eval()
        x = from_ast(node.expression)
        if op == "-":
            return ("neg", x)
        if op == "!":
            return ("not", x)
        raise ExpressionError(f"unary operator {op!r}")
    if kind == "FunctionCall":
        return ("call", node.get_node_name(), tuple(from_ast(a) for a in node.arguments))
    raise ExpressionError(f"{kind} in an expression")


def py_name(name: str) -> str:
    """``name`` as the statement language writes it (``del`` -> ``del_``)."""
    return name + "_" if keyword.iskeyword(name) or keyword.issoftkeyword(name) \
        or name in ("True", "False", "None") else name


def to_text(e: tuple) -> str:
    """``e`` in the statement language, every operation parenthesised."""
    kind = e[0]
    if kind == "num":
        return repr(float(e[1]))
    if kind == "name":
        return py_name(e[1])
    if kind == "neg":
        return f"(-{to_text(e[1])})"
    if kind == "not":
        return f"(not {to_text(e[1])})"
    if kind == "call":
        return f"{e[1]}({', '.join(to_text(a) for a in e[2])})"
    op, left, right = e[1], to_text(e[2]), to_text(e[3])
    if op == "^":
        return f"pow({left}, {right})"
    return f"({left} {_PY.get(op, op)} {right})"


def names(e: tuple, out: set | None = None) -> set:
    """Every variable name ``e`` reads."""
    out = set() if out is None else out
    if e[0] == "name":
        out.add(e[1])
    elif e[0] in ("neg", "not"):
        names(e[1], out)
    elif e[0] == "bin":
        names(e[2], out)
        names(e[3], out)
    elif e[0] == "call":
        for a in e[2]:
            names(a, out)
    elif e[0] == "index":
        names(e[2], out)
    return out


def calls(e: tuple, out: set | None = None) -> set:
    """Every function ``e`` calls."""
    out = set() if out is None else out
    if e[0] == "call":
        out.add(e[1])
        for a in e[2]:
            calls(a, out)
    elif e[0] in ("neg", "not"):
        calls(e[1], out)
    elif e[0] == "bin":
        calls(e[2], out)
        calls(e[3], out)
    elif e[0] == "index":
        calls(e[2], out)
    return out


def substitute(e: tuple, mapping: dict) -> tuple:
    """``e`` with each name in ``mapping`` replaced by its tree."""
    kind = e[0]
    if kind == "name":
        return mapping.get(e[1], e)
    if kind in ("neg", "not"):
        return (kind, substitute(e[1], mapping))
    if kind == "bin":
        return ("bin", e[1], substitute(e[2], mapping), substitute(e[3], mapping))
    if kind == "call":
        return ("call", e[1], tuple(substitute(a, mapping) for a in e[2]))
    if kind == "index":
        return ("index", e[1], substitute(e[2], mapping))
    return e


def map_calls(e: tuple, fn) -> tuple:
    """``e`` with each call ``("call", f, args)`` replaced by ``fn(f, args)``."""
    kind = e[0]
    if kind in ("neg", "not"):
        return (kind, map_calls(e[1], fn))
    if kind == "bin":
        return ("bin", e[1], map_calls(e[2], fn), map_calls(e[3], fn))
    if kind == "call":
        return fn(e[1], tuple(map_calls(a, fn) for a in e[2]))
    if kind == "index":
        return ("index", e[1], map_calls(e[2], fn))
    return e


def fold_indices(e: tuple, fn) -> tuple:
    """``e`` with each ``("index", array, index)`` replaced by ``fn(array, index)``."""
    kind = e[0]
    if kind in ("neg", "not"):
        return (kind, fold_indices(e[1], fn))
    if kind == "bin":
        return ("bin", e[1], fold_indices(e[2], fn), fold_indices(e[3], fn))
    if kind == "call":
        return ("call", e[1], tuple(fold_indices(a, fn) for a in e[2]))
    if kind == "index":
        return fn(e[1], fold_indices(e[2], fn))
    return e


_ZERO = ("num", 0.0)
_ONE = ("num", 1.0)


def _is(e, value) -> bool:
    return e[0] == "num" and e[1] == value


def _neg(x):
    if _is(x, 0.0):
        return _ZERO
    return ("neg", x)


def _add(a, b):
    if _is(a, 0.0):
        return b
    if _is(b, 0.0):
        return a
    return ("bin", "+", a, b)


def _sub(a, b):
    if _is(b, 0.0):
        return a
    if _is(a, 0.0):
        return _neg(b)
    return ("bin", "-", a, b)


def _mul(a, b):
    if _is(a, 0.0) or _is(b, 0.0):
        return _ZERO
    if _is(b, 1.0):
        return a
    if _is(a, 1.0):
        return b
    return ("bin", "*", a, b)


def _div(a, b):
    if _is(a, 0.0):
        return _ZERO
    if _is(b, 1.0):
        return a
    return ("bin", "/", a, b)


def simplify_zero(e: tuple, y: str) -> tuple:
    """``e`` with ``y = 0``, dropping the terms that vanish (as nocmodl's symbolic form:
    ``x - 0`` is ``x`` and ``0·x`` is 0 for finite ``x``, so the values are the same)."""
    kind = e[0]
    if kind == "name":
        return _ZERO if e[1] == y else e
    if kind == "neg":
        return _neg(simplify_zero(e[1], y))
    if kind == "bin" and e[1] in "+-*/":
        a, b = simplify_zero(e[2], y), simplify_zero(e[3], y)
        return {"+": _add, "-": _sub, "*": _mul, "/": _div}[e[1]](a, b)
    if y in names(e):
        raise ExpressionError(f"not linear in {y}")
    return e


def derivative(e: tuple, y: str):
    """d e / d y for ``e`` linear in ``y``, or None where it is 0.

    Raises
    ------
    ExpressionError
        ``e`` is not linear in ``y`` (``y`` inside a call, a power, a condition, a divisor
        or a product with another term that depends on it).
    """
    kind = e[0]
    if kind == "num":
        return None
    if kind == "name":
        return _ONE if e[1] == y else None
    if kind == "neg":
        d = derivative(e[1], y)
        return None if d is None else ("neg", d)
    if kind == "bin" and e[1] in "+-":
        da, db = derivative(e[2], y), derivative(e[3], y)
        if da is None and db is None:
            return None
        if e[1] == "+":
            return db if da is None else (da if db is None else ("bin", "+", da, db))
        return ("neg", db) if da is None else (da if db is None else ("bin", "-", da, db))
    if kind == "bin" and e[1] == "*":
        da, db = derivative(e[2], y), derivative(e[3], y)
        if da is not None and db is not None:
            raise ExpressionError(f"not linear in {y}")
        if da is not None:
            return da if _is(e[3], 1.0) else ("bin", "*", da, e[3])
        if db is not None:
            return db if _is(e[2], 1.0) else ("bin", "*", e[2], db)
        return None
    if kind == "bin" and e[1] == "/":
        if y in names(e[3]):
            raise ExpressionError(f"not linear in {y}")
        da = derivative(e[2], y)
        return None if da is None else ("bin", "/", da, e[3])
    if y in names(e):
        raise ExpressionError(f"not linear in {y}")
    return None
