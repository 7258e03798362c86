"""Lowering FUNCTIONs, PROCEDUREs and TABLEs (a mixin of the file's lowering)."""
from __future__ import annotations

from ..mechanisms.description import Function, Procedure, Table
from . import expressions as ex
from .syntax import Context, constant_value, reads_and_calls, unwrap, writes

__all__ = ["CallableLowering"]

#: Calls a FUNCTION's write of a mechanism variable may make (function_side).
_PURE = {"exp", "log", "log10", "pow", "fabs", "sqrt"}


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
        reads = self._expand(reads) - set(self.function_side(f))   # locals of f
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
        for g in calls:
            written |= set(self.function_side(g)) if g in self.functions else set()
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

    def refuse_variable_functions(self):
        """Refuse a name that is both a variable and a FUNCTION or PROCEDURE, as nocmodl
        does ("used as both variable and function")."""
        names = self.range_names | self.globals_declared | set(self.field_names)
        for f in sorted((set(self.functions) | set(self.procedures)) & names):
            kind = "FUNCTION" if f in self.functions or f in self.function_procedures \
                else "PROCEDURE"
            self.fail(f"{kind} {f}", f"{f} is both a variable and a {kind} (NEURON's "
                      "nocmodl refuses the file)", rf"(FUNCTION|PROCEDURE)\s+{f}\b")

    def table_statement(self, name):
        """The TABLE statement of FUNCTION or PROCEDURE ``name``, or None."""
        block = self.functions.get(name) or self.procedures.get(name)
        return next((s for s in block.statement_block.statements
                     if type(s).__name__ == "TableStatement"), None) if block else None

    def uses_tables(self, name) -> bool:
        """Whether calling ``name`` looks a table up: it has a TABLE, or (a PROCEDURE) calls
        one that does."""
        cache = self.__dict__.setdefault("_uses_tables", {})
        if name not in cache:
            cache[name] = False
            block = self.functions.get(name) or self.procedures.get(name)
            calls = reads_and_calls(block.statement_block.statements)[1] if block else set()
            cache[name] = self.table_statement(name) is not None or (
                name in self.procedures and any(self.uses_tables(g) for g in calls
                                                if g != name))
        return cache[name]

    def function_side(self, f) -> dict:
        """What FUNCTION ``f`` writes of the mechanism's variables, ``{name: value}``
        (the assignment's right-hand side), where each is assigned once, at the top of
        the body, before ``f`` reads it, with a value of the mechanism's variables and
        constants only: such a write is the same as that assignment placed before the
        statement that calls ``f``, and ``f`` keeps a local copy. Empty otherwise (a write
        is then refused where ``f`` is lowered)."""
        cache = self.__dict__.setdefault("_fside", {})
        if f in cache:
            return cache[f]
        cache[f] = {}
        block = self.functions[f]
        params = {a.get_node_name() for a in block.parameters}
        stmts = block.statement_block.statements
        fields = set(self.field_names) - params - {f}
        wanted = self._expand(writes(stmts)) & fields
        if not wanted:
            return cache[f]
        side, seen = {}, set()
        for st in stmts:
            reads, calls = reads_and_calls([st])
            if self._expand(reads) & (wanted - set(side)):
                return cache[f]                    # read before its write
            e = unwrap(st.expression) if type(st).__name__ == "ExpressionStatement" \
                else None
            target = e.lhs.get_node_name() if e is not None and type(e).__name__ == \
                "BinaryExpression" and e.op.eval() == "=" else None
            if target in wanted:
                if target in seen or not (self._expand(reads) <= fields | set(self.const)
                                          | {"celsius"}) or calls - _PURE:
                    return cache[f]
                seen.add(target)
                side[target] = e.rhs
            elif self._expand(writes([st])) & wanted:
                return cache[f]                    # a write inside IF or FROM
        cache[f] = side
        return side

    def side_writes_before(self, st, ctx, pad) -> list:
        """The assignments that FUNCTIONs called by statement ``st`` make to the
        mechanism's variables (:meth:`function_side`), to run before ``st``; marks those
        calls as placed (``ctx.side_ok``)."""
        calls = reads_and_calls([st])[1]
        fs = sorted(g for g in calls if g in self.functions and self.function_side(g))
        ctx.side_ok = set(fs) if ctx.fields else set()    # else check_call refuses
        if not ctx.side_ok:
            return []
        reads, wrote = self._expand(reads_and_calls([st])[0]), self._expand(writes([st]))
        values, out = {}, []
        for g in fs:
            for w, rhs in self.function_side(g).items():
                value = ex.substitute(ex.from_ast(rhs), self.const)
                if values.setdefault(w, value) != value:
                    self.fail(w, f"one statement calls FUNCTIONs that write {w} with "
                              "different values (C leaves their order open)",
                              rf"\b{g}\s*\(")
                names = ex.names(value)
                if w in reads or names & wrote or names & (ctx.locals | ctx.args
                                                           | set(ctx.rename)):
                    self.fail(w, f"FUNCTION {g} writes {w}, which the statement calling "
                              "it also uses", rf"\b{g}\s*\(")
        for w, value in values.items():
            out.append(f"{pad}{ex.py_name(w)} = {ex.to_text(self._expr_value(value, ctx))}\n")
            ctx.wrote.add(w)
        return out

    def _expr_value(self, e, ctx) -> tuple:
        """A lowered value (constants substituted) in ``ctx``'s names."""
        for n in ex.names(e):
            self._check_name(n, ctx)
        return e

    def check_call(self, f, ctx):
        """Refuse a call of FUNCTION ``f`` that cannot be translated where it is: a table
        out of reach, or a write of a mechanism variable that cannot be placed before the
        calling statement."""
        self.check_table_reach(f, ctx)
        if self.function_side(f) and f not in getattr(ctx, "side_ok", set()):
            w = min(self.function_side(f))
            self.fail(w, f"FUNCTION {f} writes {w} and is called in {ctx.where} where "
                      "that write cannot be placed (only in a statement of a block that "
                      "has the mechanism's variables)", rf"\b{f}\s*\(")

    def check_table_reach(self, name, ctx):
        """Refuse a call of ``name`` that would look a table up where the tables are out of
        reach: in a FUNCTION, in NET_RECEIVE, or while a table is built (NEURON would
        read a table the call may see half built)."""
        if getattr(ctx, "no_tables", False) and self.uses_tables(name):
            self.fail("TABLE", f"{ctx.where} calls {name}, which uses a TABLE (translated "
                      "in PROCEDUREs and the INITIAL, BREAKPOINT and DERIVATIVE blocks)",
                      rf"\b{name}\s*\(")

    def _function(self, f) -> Function:
        block = self.functions[f]
        where = f"FUNCTION {f}"
        params = [a.get_node_name() for a in block.parameters]
        extra = list(self.function_extra(f))
        table = None
        st = self.table_statement(f)
        if st is not None:
            table = self._function_table(f, st, params, extra)
        ctx = Context(where, [rf"FUNCTION\s+{f}\b"], fields=False,
                       args=set(params) | set(extra))
        ctx.table_ok, ctx.no_tables = True, True
        ctx.locals.add(f)
        ctx.readonly = {n: f"{where} writes the mechanism's variable {n}"
                        for n in self.field_names if n not in params}
        for n in self.function_side(f):         # its callers write n (side_writes_before)
            del ctx.readonly[n]
            ctx.rename[n] = ("name", f"{n}__local")
            ctx.locals.add(f"{n}__local")
        self.ion_copies(block.statement_block.statements, ctx)   # refuses assignments
        body = "".join(self.statements(block.statement_block.statements, ctx))
        return Function(f, tuple(params + extra), body or "pass", table)

    def _function_table(self, f, st, params, extra) -> Table:
        """NEURON's FUNCTION table: ``f``'s value at WITH+1 points (nocmodl's ``_n_<f>``
        interpolates it; ``_f_<f>`` is the exact function)."""
        where, pat = f"FUNCTION {f}", rf"FUNCTION\s+{f}\b"
        if st.table_vars:
            self.fail("TABLE", f"a TABLE in {where} names outputs (a FUNCTION's table holds "
                      "its value)", pat)
        if len(params) != 1:
            self.fail("TABLE", f"a TABLE in {where} of {len(params)} arguments (one is "
                      "translated)", pat)
        for n in extra:      # fixed PARAMETERs are constants by now (_table_fixed)
            self.fail("TABLE", f"{where} reads {n} besides its argument", pat)
        depend, lo, hi, n = self._table_range(st, pat)
        return Table((f,), depend, lo, hi, n)

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
            ctx.no_tables = True         # its body builds the table
        stmts = block.statement_block.statements
        if type(block).__name__ == "ProcedureBlock":    # not a FUNCTION lowered as one
            ctx.return_tail = self.return_tail(stmts)
        self.ion_copies(stmts, ctx)   # refuses assignments
        body = "".join(self.statements(stmts, ctx))
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
        for o in outs:       # a lookup assigns the outputs, whatever their kind
            if o not in self.assigned_names and o not in {s.name for s in self.states}:
                self.fail("TABLE", f"output {o} is not an ASSIGNED or STATE variable", pat)
        info = self.procedure_info(p)
        early = self._read_before_written(p)
        side, side_range = [], []
        outside = self._written_outside(p)
        for n in sorted(info.writes - set(outs)):
            if n in early:
                self.fail("TABLE", f"{where} reads {n} before it writes it", pat)
            if n in outside and not self._one_value(n):
                self.fail("TABLE", f"{where} writes {n}, which is not one of its table "
                          "outputs, and other blocks write it too", pat)
            side.append(n)
            if not self.neuron_global(n):
                side_range.append(n)
        calls_procs = reads_and_calls(self.procedures[p].statement_block.statements)[1]
        for g in calls_procs:
            if g in self.procedures and self.procedure_info(g).table is not None:
                self.fail("TABLE", f"{where} calls PROCEDURE {g}, which has a TABLE", pat)
        depend, lo, hi, n = self._table_range(st, pat)
        ctx.readonly = {}
        reads = tuple(self.__dict__.get("_table_reads", {}).get(p, ()))
        return Table(tuple(outs), depend, lo, hi, int(n), tuple(side), tuple(side_range),
                     reads)

    def _initial_only(self, n) -> bool:
        """Whether INITIAL's own statements write ``n`` (not a STATE) and nothing else
        does: no other block, PROCEDURE or FUNCTION, nor a FUNCTION INITIAL calls."""
        init = self.blocks.get("InitialBlock", [])
        if n in self.state_names or not init:
            return False
        stmts = init[0].statement_block.statements
        if n not in self._expand(writes(stmts)):
            return False
        other = set()
        for g in reads_and_calls(stmts)[1] & set(self.functions):
            other |= set(self.function_side(g))
        for kind in ("BreakpointBlock", "DerivativeBlock", "KineticBlock", "NetReceiveBlock",
                     "ProcedureBlock", "FunctionBlock"):
            for b in self.blocks.get(kind, []):
                body = b.statement_block.statements
                other |= self._expand(writes(body))
                for g in reads_and_calls(body)[1] & set(self.functions):
                    other |= set(self.function_side(g))
        return n not in other

    def neuron_global(self, n) -> bool:
        """Whether NEURON keeps one value of ``n`` for all instances: a GLOBAL, or a
        PARAMETER not declared RANGE."""
        return n in self.globals_declared or (n in self.param_names
                                              and n not in self.range_names)

    def _one_value(self, n) -> bool:
        """Whether every assignment of ``n`` in the file assigns the same expression of
        constants and ``celsius``/``dt`` (then the order of the blocks that write it does
        not matter)."""
        values = set()

        def walk(stmts):
            for st in stmts:
                k = type(st).__name__
                if k == "ExpressionStatement":
                    e = unwrap(st.expression)
                    if type(e).__name__ == "BinaryExpression" and e.op.eval() == "=" \
                            and e.lhs.get_node_name() == n:
                        try:
                            values.add(ex.substitute(ex.from_ast(e.rhs), self.const))
                        except ex.ExpressionError:
                            values.add(None)
                elif k in ("IfStatement", "ElseIfStatement", "ElseStatement",
                           "FromStatement", "WhileStatement"):
                    walk(st.statement_block.statements)
                    if k == "IfStatement":
                        walk(st.elseifs)
                        if st.elses is not None:
                            walk([st.elses])

        for kind in ("InitialBlock", "BreakpointBlock", "DerivativeBlock", "KineticBlock",
                     "NetReceiveBlock", "FunctionBlock", "ProcedureBlock"):
            for b in self.blocks.get(kind, []):
                walk(b.statement_block.statements)
        if len(values) != 1 or None in values:
            return False
        return ex.names(next(iter(values))) <= {"celsius", "dt"}

    def _call_tree(self, p) -> set:
        """PROCEDURE ``p`` and the PROCEDUREs it calls, directly or not."""
        tree, todo = set(), [p]
        while todo:
            g = todo.pop()
            if g in tree or g not in self.procedures:
                continue
            tree.add(g)
            todo += reads_and_calls(self.procedures[g].statement_block.statements)[1]
        return tree

    def _written_outside(self, p) -> set:
        """Mechanism variables that blocks other than PROCEDURE ``p`` (with the procedures
        it calls) write; all that the procedures ``p`` calls write where another block
        calls one of them."""
        tree = self._call_tree(p)
        out = set()
        blocks = [b for kind in ("InitialBlock", "BreakpointBlock", "DerivativeBlock",
                                 "KineticBlock", "NetReceiveBlock")
                  for b in self.blocks.get(kind, [])]
        blocks += [b for g, b in self.procedures.items() if g not in tree]
        for b in blocks:
            stmts = b.statement_block.statements
            out |= self._expand(writes(stmts))
            calls = reads_and_calls(stmts)[1]
            for g in calls & set(self.functions):
                out |= set(self.function_side(g))
            if calls & (tree - {p}):
                out |= self.procedure_info(p).writes
        return out

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

    def tables_fixed(self) -> dict:
        """The PARAMETERs every TABLE depends on, with their values (:meth:`_table_fixed`)."""
        fixed = {}
        for p in self.procedures:
            info = self.procedure_info(p)
            if info.table is not None:
                fixed.update(self._table_fixed(p, info.table))
        for f in self.functions:
            st = self.table_statement(f)
            if st is not None:
                fixed.update(self._table_fixed(f, st))
        return fixed

    def _table_fixed(self, p, st) -> dict:
        """The GLOBAL parameters the TABLE of PROCEDURE or FUNCTION ``p`` depends on, with
        their values: a table is built once, so they are fixed at the file's values."""
        if p in self.functions:
            where, pat = f"FUNCTION {p}", rf"FUNCTION\s+{p}\b"
            reads, outs, side = set(self.function_extra(p)), set(), set()
        else:
            where, pat = f"PROCEDURE {p}", rf"PROCEDURE\s+{p}\b"
            info = self.procedure_info(p)
            outs = self._expand({v.get_node_name() for v in st.table_vars})
            reads = set(info.fields_used) - outs
            side = info.writes - outs       # GLOBALs computed in it (checked in _table)
            for g in reads_and_calls(self.procedures[p].statement_block.statements)[1]:
                if g in self.functions:
                    reads |= set(self.function_extra(g))
        fixed, first = {}, []
        self.__dict__.setdefault("_table_reads", {})[p] = first
        depend = {v.get_node_name() for v in st.depend_vars}
        for part in (getattr(st, "from"), st.to):
            try:
                depend |= ex.names(ex.from_ast(part)) - set(self.const)
            except ex.ExpressionError:
                pass
        # a DEPEND on a variable the table's procedure writes (and no other block does,
        # see _table) compares equal after the first build (nocmodl's _check_<p> saves it
        # after building)
        for n in sorted((reads - side) | (depend - {"celsius", "dt"} - side)):
            if n in ("v", "t") or (n == "dt" and p in self.functions):
                self.fail("TABLE", f"{where} reads {n} besides its argument", pat)
            if n in ("celsius", "dt"):     # fixed for a run; the table is built at its start
                continue
            if p in self.procedures and self._initial_only(n) and (
                    not self.neuron_global(n) or self._one_value(n)):
                first.append(n)      # read from the first instance when built
                continue
            writer = next((g for g, b in self.functions.items() if n not in
                           self.function_side(g)
                           and n in self._expand(writes(b.statement_block.statements))), None)
            if writer is not None:
                self.fail("TABLE", f"{where} depends on {n}, which FUNCTION {writer} writes "
                          "(translated where it is assigned first thing, once, from the "
                          "mechanism's variables and constants)", pat)
            if n not in self.param_names or n in self.written:
                self.fail("TABLE", f"{where} depends on {n}, which is not a PARAMETER "
                          "that no block writes nor a variable only INITIAL computes", pat)
            fixed[n] = ("num", next(q.default for q in self.params if q.name == n))
        return fixed

    def _table_range(self, st, pat) -> tuple:
        """``(depend, start, stop, n)`` of TABLE statement ``st``: constant bounds and a
        positive whole number of intervals, else refused."""
        depend = tuple(v.get_node_name() for v in st.depend_vars)
        lo, hi, n = (self._constant(getattr(st, k), "TABLE", pat)
                     for k in ("from", "to", "with"))
        if n < 1 or n != int(n):
            self.fail("TABLE", f"WITH {n}: a positive whole number of intervals", pat)
        return depend, lo, hi, int(n)

    def _constant(self, node, construct, pat) -> float:
        e = ex.substitute(ex.from_ast(node), self.const)
        value = constant_value(e)
        if value is None:
            self.fail(construct, "bounds must be constants", pat)
        return value

    # ---- blocks -------------------------------------------------------------------------
