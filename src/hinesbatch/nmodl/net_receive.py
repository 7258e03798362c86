"""Lowering of NET_RECEIVE: weight vectors, its INITIAL block, ``flag`` and ``net_send``.

``NET_RECEIVE(w, a, b (ms))`` becomes the description's ``net_receive`` block with the
first argument named ``weight`` (read only) and the others as ``net_receive_args``
(``("a", "b")``): entries 1, 2 of each NetCon's weight vector, which the block reads and
writes. An ``INITIAL { ... }`` inside NET_RECEIVE becomes ``net_receive_initial`` (run for
each NetCon at initialization). ``flag`` reads the event's flag. ``net_send(delay, flag)``
in NET_RECEIVE, or in the INITIAL of a point process or an artificial cell, stays a statement of the description
(:mod:`hinesbatch.mechanisms.description`); anywhere else it is refused. So does
``net_event(te)`` in NET_RECEIVE: a spike of the instance at ``te`` [ms], sent through the
NetCons whose source is the point process (refused elsewhere).
"""
from __future__ import annotations

from . import expressions as ex
from .syntax import Context, unwrap, writes

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
        if args[0] != "weight" and args[0] in writes(stmts) | writes(
                [st for i in inits for st in i.statement_block.statements]):
            self.fail(args[0], "assigns the NetCon's weight (entry 0 of its weight vector)",
                      rf"\b{args[0]}\s*=")
        if len(inits) > 1:
            self.fail("INITIAL", "two INITIAL blocks in NET_RECEIVE", r"\bINITIAL\b")
        ctx = self._net_receive_context("NET_RECEIVE", r"NET_RECEIVE", args[0], rest, hidden)
        ctx.extra.add("flag")
        ctx.readonly["flag"] = "assigns the event's flag"
        ctx.net_send = ctx.net_event = True
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
        ctx.readonly = {"weight": "assigns the NetCon's weight (entry 0 of its weight "
                                  "vector)"}
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
