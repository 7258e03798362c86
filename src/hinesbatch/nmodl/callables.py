"""Lowering FUNCTIONs, PROCEDUREs and TABLEs (a mixin of the file's lowering)."""
from __future__ import annotations

from ..mechanisms.description import Function, Procedure, Table
from . import expressions as ex
from .syntax import Context, constant_value, reads_and_calls, writes

__all__ = ["CallableLowering"]


class ProcInfo:
    """What a PROCEDURE (with those it calls) reads and writes of the mechanism."""

    fields_used: set
    writes: set
    table = None


class CallableLowering:
    """FUNCTION arguments, PROCEDURE summaries, TABLE checks (mixed into the lowering)."""

    def function_extra(self, f) -> tuple:
        """The mechanism variables and ``v``/``t``/``dt`` FUNCTION ``f`` reads (through the
        functions it calls too), passed as extra arguments."""
        cache = self.__dict__.setdefault("_extra", {})
        if f in cache:
            return cache[f]
        cache[f] = ()
        block = self.functions[f]
        params = {p.get_node_name() for p in block.parameters}
        reads, calls = reads_and_calls(block.statement_block.statements)
        reads = self._expand(reads)
        extra = set()
        for n in reads - params - set(self.const):
            if n in self.field_names or n in {"v", "t", "dt"}:
                extra.add(n)
        for g in calls:
            if g in self.functions and g != f:
                extra |= set(self.function_extra(g)) - params
        cache[f] = tuple(sorted(extra))
        return cache[f]

    def procedure_info(self, p):
        cache = self.__dict__.setdefault("_pinfo", {})
        if p in cache:
            return cache[p]
        block = self.procedures[p]
        reads, calls = reads_and_calls(block.statement_block.statements)
        reads = self._expand(reads)
        written = self._expand(writes(block.statement_block.statements))
        params = {a.get_node_name() for a in block.parameters}
        info = ProcInfo()
        info.fields_used = {n for n in (reads | written) - params if n in self.field_names
                            or n in {"v", "t", "dt"}}
        info.writes = {n for n in written - params if n in self.field_names}
        info.table = next((s for s in block.statement_block.statements
                           if type(s).__name__ == "TableStatement"), None)
        cache[p] = info
        for g in calls:
            if g in self.procedures and g != p:
                inner = self.procedure_info(g)
                info.fields_used |= inner.fields_used
                info.writes |= inner.writes
        return info

    def _function(self, f) -> Function:
        block = self.functions[f]
        where = f"FUNCTION {f}"
        if any(type(s).__name__ == "TableStatement" for s in block.statement_block.statements):
            self.fail("TABLE", f"a TABLE in {where} is not translated yet",
                      rf"FUNCTION\s+{f}\b")
        params = [a.get_node_name() for a in block.parameters]
        extra = list(self.function_extra(f))
        ctx = Context(where, [rf"FUNCTION\s+{f}\b"], fields=False,
                       args=set(params) | set(extra))
        ctx.locals.add(f)
        ctx.readonly = {n: f"{where} writes the mechanism's variable {n}"
                        for n in self.field_names if n not in params}
        self.ion_copies(block.statement_block.statements, ctx)   # refuses assignments
        body = "".join(self.statements(block.statement_block.statements, ctx))
        return Function(f, tuple(params + extra), body or "pass")

    def _procedure(self, p) -> Procedure:
        block = self.procedures[p]
        where = f"PROCEDURE {p}"
        params = [a.get_node_name() for a in block.parameters]
        ctx = Context(where, [rf"(PROCEDURE|FUNCTION)\s+{p}\b"], fields=True,
                       args=set(params))
        ctx.local_suffix = f"__{p}"
        if p in self.function_procedures:      # its own name is a local there
            ctx.declare_local(p)
        info = self.procedure_info(p)
        table = None
        if info.table is not None:
            table = self._table(p, info.table, params, ctx)
        self.ion_copies(block.statement_block.statements, ctx)   # refuses assignments
        body = "".join(self.statements(block.statement_block.statements, ctx))
        return Procedure(p, tuple(params), body or "pass", table)

    def _table(self, p, st, params, ctx) -> Table:
        outs = tuple(o for v in st.table_vars for o in sorted(
            self._expand({v.get_node_name()}), key=lambda o: (len(o), o)))
        where = f"PROCEDURE {p}"
        pat = rf"PROCEDURE\s+{p}\b"
        if not outs:
            self.fail("TABLE", f"a TABLE without outputs in {where}", pat)
        if len(params) != 1:
            self.fail("TABLE", f"a TABLE in {where} of {len(params)} arguments (one is "
                      "translated)", pat)
        for o in outs:
            if o not in self.assigned_names:
                self.fail("TABLE", f"output {o} is not an ASSIGNED variable", pat)
        info = self.procedure_info(p)
        early = self._read_before_written(p)
        side = []
        for n in sorted(info.writes - set(outs)):
            if n not in self.globals_declared:
                self.fail("TABLE", f"{where} writes {n}, which is not one of its table "
                          "outputs nor a GLOBAL", pat)
            if n in early:
                self.fail("TABLE", f"{where} reads the GLOBAL {n} before it writes it", pat)
            side.append(n)
        calls_procs = reads_and_calls(self.procedures[p].statement_block.statements)[1]
        for g in calls_procs:
            if g in self.procedures and self.procedure_info(g).table is not None:
                self.fail("TABLE", f"{where} calls PROCEDURE {g}, which has a TABLE", pat)
        depend = tuple(v.get_node_name() for v in st.depend_vars)
        lo, hi, n = (self._constant(getattr(st, k), "TABLE", pat)
                     for k in ("from", "to", "with"))
        if n < 1 or n != int(n):
            self.fail("TABLE", f"WITH {n}: a positive whole number of intervals", pat)
        ctx.readonly = {}
        return Table(tuple(outs), depend, lo, hi, int(n), tuple(side))

    def _read_before_written(self, p, written=None) -> set:
        """Mechanism variables PROCEDURE ``p`` (with the procedures it calls, in order) may
        read before a top-level assignment writes them."""
        written = set() if written is None else written
        early = set()
        for st in self.procedures[p].statement_block.statements:
            reads, calls = reads_and_calls([st])
            early |= self._expand(reads) - written
            for g in calls:
                if g in self.procedures and g != p:
                    early |= self._read_before_written(g, written)
            if type(st).__name__ == "ExpressionStatement":
                written |= self._expand(writes([st]))
        return early & set(self.field_names)

    def _table_fixed(self, p, st) -> dict:
        """The GLOBAL parameters the TABLE of PROCEDURE ``p`` depends on, with their
        values: a table is built once, so they are fixed at the file's values."""
        where, pat = f"PROCEDURE {p}", rf"PROCEDURE\s+{p}\b"
        info = self.procedure_info(p)
        outs = self._expand({v.get_node_name() for v in st.table_vars})
        reads = set(info.fields_used) - outs
        for g in reads_and_calls(self.procedures[p].statement_block.statements)[1]:
            if g in self.functions:
                reads |= set(self.function_extra(g))
        fixed = {}
        depend = {v.get_node_name() for v in st.depend_vars}
        for part in (getattr(st, "from"), st.to):
            try:
                depend |= ex.names(ex.from_ast(part)) - set(self.const)
            except ex.ExpressionError:
                pass
        side = info.writes - outs       # GLOBALs computed in it (checked in _table)
        for n in sorted((reads - side) | (depend - {"celsius", "dt"})):
            if n in ("v", "t"):
                self.fail("TABLE", f"{where} reads {n} besides its argument", pat)
            if n in ("celsius", "dt"):     # fixed for a run; the table is built at its start
                continue
            if n not in self.param_names or n in self.written:
                self.fail("TABLE", f"{where} depends on {n}, which is not a PARAMETER "
                          "that no block writes", pat)
            fixed[n] = ("num", next(q.default for q in self.params if q.name == n))
        return fixed

    def _constant(self, node, construct, pat) -> float:
        e = ex.substitute(ex.from_ast(node), self.const)
        value = constant_value(e)
        if value is None:
            self.fail(construct, "bounds must be constants", pat)
        return value

    # ---- blocks -------------------------------------------------------------------------
