"""Lowering of NET_RECEIVE: weight vectors, its INITIAL block, ``flag``, ``net_send``,
``FOR_NETCONS`` and ``WATCH``.

``NET_RECEIVE(w, a, b (ms))`` becomes the description's ``net_receive`` block with the
first argument named ``weight`` and the others as ``net_receive_args`` (``("a", "b")``):
entries 0, 1, 2 of each NetCon's weight vector, which the block reads and writes (an
assigned ``w`` is the NetCon's weight from then on, as NEURON's ``NetCon.weight[0]``). An
``INITIAL { ... }`` inside NET_RECEIVE becomes ``net_receive_initial`` (run for each
NetCon at initialization). ``flag`` reads the event's flag. ``net_send(delay, flag)`` in
NET_RECEIVE, or in the INITIAL of a point process or an artificial cell, stays a statement of the description
(:mod:`hinesbatch.mechanisms.description`); anywhere else it is refused. So does
``net_event(te)`` in NET_RECEIVE: a spike of the instance at ``te`` [ms], sent through the
NetCons whose source is the point process (refused elsewhere).

``FOR_NETCONS(w1, tp) { ... }`` directly in NET_RECEIVE becomes the loop
``for w1__fnc, tp__fnc in netcons():``: its names are entries 0, 1, ... of the weight
vector of each NetCon that targets the instance in turn (they hide the names they share
with the mechanism's variables and NET_RECEIVE's arguments); a self-event, a spike or a
WATCH inside the loop, a nested loop, and more names than NET_RECEIVE has arguments are
refused.

``WATCH (v > x) f`` in NET_RECEIVE becomes ``watch_above(x, f)``: a threshold on the
instance's membrane potential that sends the instance a self-event with flag ``f`` when
``v - x`` becomes positive (``(x < v)`` is the same condition). ``x`` may hold numbers and
PARAMETERs that no block assigns, so that its value when the statement runs is its value
at every later check; other conditions are refused.
"""
from __future__ import annotations

from . import expressions as ex
from .syntax import Context, unwrap

__all__ = ["NetReceiveLowering"]

_RESERVED = {"weight", "flag", "v", "t", "dt", "celsius"}


class NetReceiveLowering:
    """Mixin of the lowering (``self.fail``, ``self.statements``, ``self._expr``, ...)."""

    def net_receive_block(self) -> tuple[str, tuple, str]:
        """``(net_receive, net_receive_args, net_receive_initial)`` of the file."""
        blocks = self.blocks.get("NetReceiveBlock", [])
        if not blocks:
            return "", (), ""
        if self.kind == "density":
            self.fail("NET_RECEIVE", "in a density mechanism", r"NET_RECEIVE")
        b = blocks[0]
        if "flag" in self.field_names:
            self.fail("flag", "a variable named flag besides NET_RECEIVE's event flag (the "
                      "FUNCTIONs and PROCEDUREs NET_RECEIVE calls would write the event's "
                      "flag in its place)", r"^\s*flag\b", r"\bflag\b")
        args = [a.get_node_name() for a in b.parameters]
        if not args:
            self.fail("NET_RECEIVE", "without arguments (a weight is expected)",
                      r"NET_RECEIVE")
        rest = tuple(args[1:])
        for a in rest:
            if a in _RESERVED:
                self.fail(f"NET_RECEIVE argument {a}", "has the name of one of NEURON's "
                          "variables", r"NET_RECEIVE")
        # an argument named as one of the mechanism's variables hides it in NET_RECEIVE,
        # as a FUNCTION's argument does (nocmodl reads the weight vector's entry there)
        hidden = {a: f"{a}__netcon" for a in rest if a in self.field_names or a in self.const}
        rest = tuple(hidden.get(a, a) for a in rest)
        if len(set(args)) != len(args):
            self.fail("NET_RECEIVE", "two arguments with one name", r"NET_RECEIVE")
        stmts, inits = [], []
        for st in b.statement_block.statements:
            inner = unwrap(st.expression) if type(st).__name__ == "ExpressionStatement" \
                else None
            if type(inner).__name__ == "InitialBlock":
                inits.append(inner)
            else:
                stmts.append(st)
        if len(inits) > 1:
            self.fail("INITIAL", "two INITIAL blocks in NET_RECEIVE", r"\bINITIAL\b")
        ctx = self._net_receive_context("NET_RECEIVE", r"NET_RECEIVE", args[0], rest, hidden)
        ctx.extra.add("flag")
        ctx.readonly["flag"] = "assigns the event's flag"
        ctx.net_send = ctx.net_event = ctx.watch = ctx.for_netcons = True
        text = self.ion_copies(stmts, ctx) + "".join(self.statements(stmts, ctx))
        initial = ""
        if inits:
            ictx = self._net_receive_context("NET_RECEIVE INITIAL", r"\bINITIAL\b", args[0],
                                             rest, hidden)
            istmts = inits[0].statement_block.statements
            initial = self.ion_copies(istmts, ictx) + "".join(self.statements(istmts, ictx))
        return text, rest, initial

    def _net_receive_context(self, where: str, pattern: str, first: str, rest,
                             hidden: dict) -> Context:
        ctx = Context(where, [pattern], fields=True)
        ctx.rename = {first: ("name", "weight")}
        ctx.rename.update({a: ("name", inner) for a, inner in hidden.items()})
        ctx.extra = {"weight", *rest}
        ctx.weight_size = 1 + len(rest)
        ctx.no_tables = True          # the engines pass no tables to NET_RECEIVE
        return ctx

    def net_send_statement(self, call, ctx, pad: str) -> list[str]:
        """``net_send(delay, flag)`` as a statement of the description."""
        pat = r"\bnet_send\s*\("
        if not getattr(ctx, "net_send", False):
            where = "a density mechanism's INITIAL" if ctx.where == "INITIAL" else ctx.where
            self.fail("net_send()", f"self-events sent from {where} are not translated "
                      "(only from NET_RECEIVE and a point process's INITIAL)", pat)
        args = list(call.arguments)
        self.check_arity("net_send", args, 2, pat, "delay, flag")
        delay, flag = (ex.to_text(self._expr(a, ctx)) for a in args)
        return [f"{pad}net_send({delay}, {flag})\n"]

    def net_event_statement(self, call, ctx, pad: str) -> list[str]:
        """``net_event(te)`` as a statement of the description."""
        pat = r"\bnet_event\s*\("
        if not getattr(ctx, "net_event", False):
            self.fail("net_event()", f"spikes sent from {ctx.where} are not translated "
                      "(only from NET_RECEIVE)", pat)
        args = list(call.arguments)
        self.check_arity("net_event", args, 1, pat, "the spike time")
        value, before = self.with_calls(lambda: self._expr(args[0], ctx), ctx, pad)
        return before + [f"{pad}net_event({ex.to_text(value)})\n"]

    def for_netcons_statement(self, st, ctx, indent: int) -> list[str]:
        """``FOR_NETCONS(a, b) { ... }`` as the loop ``for a__fnc, b__fnc in netcons():``."""
        pat = r"\bFOR_NETCONS\b"
        if not getattr(ctx, "for_netcons", False):
            self.fail("FOR_NETCONS", f"in {ctx.where} (translated directly in NET_RECEIVE "
                      "only, not nested)", pat)
        names = [p.get_node_name() for p in st.parameters]
        if not names:
            self.fail("FOR_NETCONS", "without arguments", pat)
        if len(names) > ctx.weight_size:
            self.fail("FOR_NETCONS", f"binds {len(names)} weight-vector entries but "
                      f"NET_RECEIVE has {ctx.weight_size} arguments", pat)
        if len(set(names)) != len(names):
            self.fail("FOR_NETCONS", "two arguments with one name", pat)
        for n in names:
            if n in _RESERVED - {"weight"}:
                self.fail(f"FOR_NETCONS argument {n}", "has the name of one of NEURON's "
                          "variables", pat)
        saved = (dict(ctx.rename), set(ctx.extra), ctx.where, ctx.net_send, ctx.net_event,
                 ctx.watch, ctx.for_netcons)
        inner = [f"{n}__fnc" for n in names]
        ctx.rename.update({n: ("name", i) for n, i in zip(names, inner)})
        ctx.extra |= set(inner)
        ctx.where = "FOR_NETCONS"
        ctx.net_send = ctx.net_event = ctx.watch = ctx.for_netcons = False
        try:
            body = self.statements(st.statement_block.statements, ctx, indent + 1)
        finally:
            (ctx.rename, ctx.extra, ctx.where, ctx.net_send, ctx.net_event, ctx.watch,
             ctx.for_netcons) = saved
        pad = "    " * indent
        return ([f"{pad}for {', '.join(inner)} in netcons():\n"]
                + (body or [f"{pad}    pass\n"]))

    def watch_statement(self, st, ctx, pad: str) -> list[str]:
        """``WATCH (v > x) f, ...`` as ``watch_above(x, f)`` statements."""
        pat = r"\bWATCH\b"
        if not getattr(ctx, "watch", False):
            self.fail("WATCH", f"in {ctx.where} (translated in NET_RECEIVE only)", pat)
        fixed = self.param_names - self._written_everywhere()
        out = []
        for w in st.statements:
            e = unwrap(w.expression)
            op = e.op.eval() if type(e).__name__ == "BinaryExpression" else ""
            lhs, rhs = (unwrap(e.lhs), unwrap(e.rhs)) if op else (None, None)
            if op == ">" and self._is_v(lhs, ctx):
                other = rhs
            elif op == "<" and self._is_v(rhs, ctx):
                other = lhs
            else:
                self.fail("WATCH", "a condition other than (v > x) or (x < v): only a "
                          "threshold the membrane potential rises through is translated",
                          pat)
            value = self._expr(other, ctx)
            moving = ex.names(value) - fixed
            if moving or ex.calls(value):
                what = ", ".join(sorted(moving)) or ", ".join(sorted(ex.calls(value)))
                self.fail("WATCH", f"a threshold that reads {what}: only numbers and "
                          "PARAMETERs no block assigns are translated (their value when "
                          "WATCH runs is their value at every check)", pat)
            flag = float(w.value.eval())
            out.append(f"{pad}watch_above({ex.to_text(value)}, {flag!r})\n")
        return out

    @staticmethod
    def _is_v(node, ctx) -> bool:
        """Whether ``node`` is the membrane potential itself (no LOCAL hides it)."""
        return (type(node).__name__ in ("Name", "VarName") and node.get_node_name() == "v"
                and "v" not in ctx.rename and "v" not in ctx.locals)
