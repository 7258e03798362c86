"""Lower an NMODL file (parsed by ``neuron.nmodl``) to a :class:`~hinesbatch.mechanisms.Mechanism`.

The lowering keeps nocmodl's semantics where the engine runs them bit for bit:

- ``SOLVE d METHOD cnexp`` with ``y' = f(y)`` linear in ``y``: ``a = df/dy`` and
  ``b = f(0)`` symbolically (terms that vanish dropped, as nocmodl does), giving
  ``y = y + (1 - exp(dt·a))·(-(b)/(a) - y)``; as :class:`~hinesbatch.mechanisms.Cnexp`
  where the equations only read the mechanism's own values, else as statements in place;
- ``SOLVE p`` of a PROCEDURE: ``p()`` in the state update;
- ``SOLVE k METHOD sparse`` of a KINETIC block and ``SOLVE k STEADYSTATE sparse`` in
  INITIAL: NEURON's backward-Euler Newton system, assembled and eliminated in straight-line
  code (:mod:`.kinetic`); ``derivimplicit`` of coupled equations: NEURON's Newton iteration
  (:mod:`.newton`);
- a PROCEDURE or FUNCTION with a TABLE of one argument:
  :class:`~hinesbatch.mechanisms.Table` (NEURON's linear interpolation); the PARAMETERs it
  depends on are fixed at the file's values (a notice says so; setting one is then an
  error, not a silent difference);
- FUNCTIONs that read the mechanism's variables or ``v``/``t``/``dt`` get them as extra
  arguments; PROCEDUREs are inlined, their LOCALs renamed so they cannot meet the
  caller's;
- a GLOBAL that a block writes is stored per instance (a notice says so);
- FROM loops with constant bounds are unrolled; WHILE, FROM loops over values known only
  during the run, array indices of such values, ``state_discontinuity``, ``printf``,
  FUNCTIONs writing the mechanism's variables used as values and ``diam``:
  :mod:`.constructs`;
- NEURON's random numbers (``normrand``, ``exprand``, ``poisrand``, ``scop_random``,
  ``set_seed``) on the simulation's one stream: :mod:`.scoprand`;
- ARTIFICIAL_CELL: a mechanism of kind ``"artificial"``, run by its events
  (:mod:`.artificial`);
- VERBATIM blocks whose C changes nothing (empty, standard headers, a ``return`` ending a
  PROCEDURE): :mod:`.verbatim`; a copy of NEURON's vecevent.mod stands for the built-in
  VecStim: :mod:`.vecstim`;
- a POINTER that the file only reads: a name read through its target
  (:attr:`~hinesbatch.mechanisms.Mechanism.pointers`, :mod:`.pointers`).

Everything else raises :class:`NmodlError` (``file:line: construct: reason``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..mechanisms.builtins import BUILTINS
from ..mechanisms.description import Ion, Mechanism, Variable
from ..mechanisms.ions import concentration_names
from . import expressions as ex
from .artificial import ArtificialLowering
from .callables import CallableLowering
from .constructs import STATEMENT_CALLS, ConstructLowering
from .derivatives import DerivativeLowering
from .diffusion import DiffusionLowering
from .kinetic import KineticLowering
from .net_receive import NetReceiveLowering
from .newton import NewtonLowering
from .pointers import PointerLowering
from .scoprand import DRAWS, SEED_CALL, StreamLowering
from .syntax import (
    Context,
    IfLike,
    code_lines,
    constant_value,
    discontinuity_target,
    factor_value,
    first_int,
    reads_and_calls,
    unwrap,
    value_calls,
    writes,
)
from .vecstim import builtin_copy
from .verbatim import VerbatimLowering

__all__ = ["NmodlError", "Translation", "translate", "translate_text"]

#: NEURON's own names a mechanism reads (never its fields).
SPECIALS = {"v", "t", "dt", "celsius"}
#: NEURON names the engine does not provide to mechanisms.
UNPROVIDED = {"diam": "the segment diameter", "area": "the segment area",
              "secondorder": "the integration order", "nrn_ghk": "NEURON's ghk helper"}
#: Random-number generators other than NEURON's scoplib stream (:mod:`.scoprand`).
_RANDOM = {"unirand", "random_negexp", "random_normal", "random_uniform", "random_setseq",
           "random_setids", "erand"}
_EVENTS = {"net_send": "self-events (net_send)", "net_event": "net_event",
           "net_move": "net_move"}
_INTRINSICS = {"exp", "log", "log10", "pow", "fabs", "sqrt", "sin", "cos", "tan", "atan",
               "tanh", "sinh", "cosh", "floor", "ceil", "asin", "acos", "atan2", "fmod"}
_IGNORED_CALLS = {"at_time"}   # no-ops for NEURON's fixed step
#: Characters of a translated file's statements (written-out loops, array-element
#: selections, KINETIC eliminations) above which it is refused: ModelDB's largest translated
#: channel has 414,000 and compiles in seconds; a synapse of 834,000 (1646 fields) made
#: Numba's compilation grow past 19 GB.
MAX_CODE_CHARS = 500_000
_FROM_LIMIT = 1000


class NmodlError(ValueError):
    """An NMODL file that cannot be translated.

    The message reads ``file:line: construct: reason``; the parts are attributes.
    """

    def __init__(self, path: str, line: int, construct: str, reason: str):
        self.path, self.line, self.construct, self.reason = str(path), int(line), construct, reason
        super().__init__(f"{path}:{line}: {construct}: {reason}")


@dataclass
class Translation:
    """A translated file: the mechanism and the notices (changes of meaning the engine
    makes, such as a written GLOBAL stored per instance).

    ``builtin`` names the built-in the file is NEURON's own copy of (``"VecStim"`` for
    vecevent.mod, :mod:`.vecstim`): ``mechanism`` is then that built-in, and
    :func:`~hinesbatch.nmodl.load_mechanisms` registers nothing for the file.
    ``builtin_params`` names the per-instance parameters the file's form gives the
    built-in (``("delay",)`` for a VecStim with ``RANGE delay``).
    """

    mechanism: Mechanism
    notices: list = field(default_factory=list)
    path: str = ""
    builtin: str | None = None
    builtin_params: tuple = ()


def translate(path, *, order: int = 1000) -> Translation:
    """Translate the NMODL file ``path``.

    Parameters
    ----------
    path : str or Path
    order : int
        The mechanism's type order (contributions to the matrix are added in increasing
        order, as NEURON adds its types).

    Raises
    ------
    NmodlError
        The file does not parse, or uses a construct the engine cannot run.
    """
    path = Path(path)
    try:
        text = path.read_text(errors="replace")
    except OSError as err:
        raise NmodlError(path, 1, "file", f"cannot be read ({err.strerror})") from None
    return translate_text(text, str(path), order=order)


def translate_text(text: str, path: str = "<string>", *, order: int = 1000) -> Translation:
    """Translate NMODL source ``text`` (``path`` names it in messages)."""
    return _Lowering(text, path).mechanism(order)


# ---- source positions -------------------------------------------------------------------
class _Lowering(CallableLowering, ConstructLowering, DerivativeLowering, KineticLowering,
                NewtonLowering, NetReceiveLowering, VerbatimLowering, StreamLowering,
                ArtificialLowering, PointerLowering, DiffusionLowering):
    def __init__(self, text: str, path: str):
        self.path, self.text = path, text
        self.lines = code_lines(text)
        self.notices: list[str] = []
        try:
            from neuron.nmodl import dsl
        except ImportError as err:       # pragma: no cover - the validate extra
            raise NmodlError(path, 1, "file", f"needs NEURON's NMODL parser "
                             f"(pip install neuron): {err}") from None
        try:
            self.tree = dsl.NmodlDriver().parse_string(text)
        except RuntimeError as err:      # the driver's message holds the location
            msg = str(err).strip().splitlines()
            text = str(err)
            line = first_int(r"Location : (\d+)\.", text) or first_int(r"line (\d+)", text) \
                or 1
            reason = (msg[-1] if msg else "does not parse").replace("NMODL Parser Error : ", "")
            reason = re.sub(r"\s*\[Location : [^]]*\]", "", reason)
            construct = "INCLUDE" if "can not open file" in reason else "syntax"
            raise NmodlError(path, line, construct, reason[:200]) from None

    # ---- errors -------------------------------------------------------------------------
    def line_of(self, *patterns: str) -> int:
        for pat in patterns:
            rx = re.compile(pat)
            for k, line in enumerate(self.lines):
                if rx.search(line):
                    return k + 1
        return 1

    def fail(self, construct: str, reason: str, *patterns: str):
        raise NmodlError(self.path, self.line_of(*(patterns or (re.escape(construct),))),
                         construct, reason)

    def check_arity(self, f: str, args, takes: int, pattern: str, names: str = "") -> None:
        """Refuse a call of ``f`` with other than ``takes`` arguments (``names`` says
        what they are), at the line ``pattern`` finds."""
        if len(args) != takes:
            self.fail(f"{f}()", f"called with {len(args)} argument(s), takes {takes}"
                      + (f" ({names})" if names else ""), pattern)

    def error_at(self, line: int, construct: str, reason: str) -> NmodlError:
        return NmodlError(self.path, line, construct, reason)

    # ---- the file -----------------------------------------------------------------------
    def mechanism(self, order: int) -> Translation:
        blocks = list(self.tree.blocks)
        builtin = builtin_copy(self, blocks)
        if builtin is not None:         # NEURON's own file of a built-in: the built-in
            return Translation(BUILTINS[builtin], self.notices, self.path, builtin,
                               getattr(self, "builtin_params", ()))
        self._refuse_blocks(blocks)
        self.blocks = {}
        for b in blocks:
            self.blocks.setdefault(type(b).__name__, []).append(b)
        self._neuron_block()
        self._constants()
        self._variables()
        self.check_artificial()
        self._callables()
        self.check_artificial_functions()
        self.refuse_variable_functions()
        self.written = self._written_everywhere()
        self.refuse_pointer_writes()
        self.globals_declared = self._expand(self.globals_declared)
        globals_written = sorted(n for n in self.globals_declared & self.written
                                 if n in self.param_names | self.assigned_names)
        for n in globals_written:     # an array's element: the array's declaration
            line = self.line_of(rf"\b{n}\b", rf"\bGLOBAL\b.*\b{n.split('__')[0]}\b")
            self.notices.append(f"{self.path}:{line}: GLOBAL {n} is written by a block: "
                                "stored per instance")
        mech = self._build(order)
        self.refuse_pointer_events(mech)
        return Translation(mech, self.notices, self.path)

    def _refuse_blocks(self, blocks):
        reasons = {
            "LinearBlock": ("LINEAR", "linear systems are not translated", r"\bLINEAR\b"),
            "NonLinearBlock": ("NONLINEAR", "nonlinear systems are not translated",
                               r"\bNONLINEAR\b"),
            "DiscreteBlock": ("DISCRETE", "not translated", r"\bDISCRETE\b"),
            "FunctionTableBlock": ("FUNCTION_TABLE", "not translated", r"FUNCTION_TABLE"),
            "ConstructorBlock": ("CONSTRUCTOR", "not translated", r"\bCONSTRUCTOR\b"),
            "DestructorBlock": ("DESTRUCTOR", "not translated", r"\bDESTRUCTOR\b"),
            "BeforeBlock": ("BEFORE", "BEFORE/AFTER blocks are not translated",
                            r"\bBEFORE\b"),
            "AfterBlock": ("AFTER", "BEFORE/AFTER blocks are not translated", r"\bAFTER\b"),
            "LongitudinalDiffusionBlock": ("LONGITUDINAL_DIFFUSION",
                                           "the engine has no longitudinal diffusion",
                                           r"LONGITUDINAL_DIFF"),
            "Include": ("INCLUDE", "included files are not read", r"\bINCLUDE\b"),
            "IndependentBlock": (None, None, None),
        }
        for b in blocks:
            kind = type(b).__name__
            if kind == "Verbatim":
                self.top_level_verbatim(b)
            if kind in reasons and reasons[kind][0]:
                construct, why, pat = reasons[kind]
                self.fail(construct, why, pat)

    def _neuron_block(self):
        nb = self.blocks.get("NeuronBlock")
        if not nb:
            self.fail("NEURON", "the file has no NEURON block", r"\bNEURON\b")
        self.name = None
        self.kind = None
        self.range_names, self.globals_declared = set(), set()
        self.ions: list[Ion] = []
        self.currents: list[str] = []
        self.electrode = False
        self.ion_read, self.ion_write = set(), set()
        self.pointers: list[str] = []
        for st in nb[0].statement_block.statements:
            k = type(st).__name__
            if k == "Suffix":
                typ = st.type.get_node_name()
                self.name = st.name.get_node_name()
                if typ == "SUFFIX":
                    self.kind = "density"
                elif typ == "POINT_PROCESS":
                    self.kind = "point"
                else:
                    self.kind = "artificial"     # :mod:`.artificial`
            elif k == "Range":
                self.range_names |= {v.get_node_name() for v in st.variables}
            elif k == "Global":
                self.globals_declared |= {v.get_node_name() for v in st.variables}
            elif k == "Useion":
                self._useion(st)
            elif k == "Nonspecific":
                self.currents += [c.get_node_name() for c in st.currents]
            elif k == "ElectrodeCurrent":
                self.currents += [c.get_node_name() for c in st.currents]
                self.electrode = True
            elif k == "Pointer":
                self.pointer_declaration(st)
            elif k == "BbcorePointer":
                self.fail("BBCOREPOINTER", "opaque pointers for VERBATIM code are not "
                          "translated", r"\bBBCOREPOINTER\b")
            elif k == "External":
                self.fail("EXTERNAL", "variables of other mechanisms are not translated",
                          r"\bEXTERNAL\b")
            elif k == "RandomVarList":
                self.fail("RANDOM", "random streams are not translated", r"\bRANDOM\b")
        if self.name is None:
            self.fail("NEURON", "no SUFFIX, POINT_PROCESS or ARTIFICIAL_CELL", r"\bNEURON\b")
        if self.electrode and self.kind == "density" and len(self.currents) > 1:
            self.fail("ELECTRODE_CURRENT", "mixed with transmembrane currents",
                      r"ELECTRODE_CURRENT")

    def _useion(self, st):
        ion = st.name.get_node_name()
        reads = [r.get_node_name() for r in st.readlist]
        writes = [w.get_node_name() for w in st.writelist]
        valence = float(st.valence.value.eval()) if st.valence is not None else None
        conc = concentration_names(ion)
        for w in writes:
            if w == f"e{ion}":
                self.fail(f"USEION {ion} WRITE {w}", f"writes the reversal potential {w}: "
                          "the engine computes reversal potentials from concentrations "
                          "or keeps them constant", rf"USEION\s+{ion}\b")
            if w in conc and self.kind == "point":
                self.fail(f"USEION {ion} WRITE {w}", f"a POINT_PROCESS writing the "
                          f"concentration {w} is not translated (only density mechanisms "
                          "write concentrations)", rf"USEION\s+{ion}\b")
        for r in reads:
            if r not in (f"e{ion}", f"i{ion}", *conc):
                self.fail(f"USEION {ion} READ {r}", f"reads {r}: translated mechanisms "
                          f"read e{ion}, i{ion}, {conc[0]} and {conc[1]}",
                          rf"USEION\s+{ion}\b")
        self.ions.append(Ion(ion, read=tuple(reads), write=tuple(writes), valence=valence))
        self.ion_read |= set(reads)
        self.ion_write |= set(writes)
        self.currents += [w for w in writes if w == f"i{ion}"]

    def _constants(self):
        """CONSTANT block values and UNITS factors as literals."""
        self.const: dict = {}
        for b in self.blocks.get("ConstantBlock", []):
            for st in b.statements:
                if type(st).__name__ != "ConstantStatement":
                    continue
                c = st.constant
                self.const[c.get_node_name()] = ("num", float(c.value.eval()))
        for b in self.blocks.get("UnitBlock", []):
            for d in b.definitions:
                if type(d).__name__ == "FactorDef":
                    name = d.get_node_name()
                    value = factor_value(d)
                    if value is None:
                        self.fail(f"UNITS {name}", "this unit factor is not known to the "
                                  "translator",
                                  rf"\b{re.escape(name)}\s*=")
                    self.const[name] = ("num", value)

    def _variables(self):
        def unit_of(d):
            u = getattr(d, "unit", None)
            return u.name.eval() if u is not None and u.name is not None else "1"

        skip = SPECIALS | set(UNPROVIDED) | self.ion_read | self.ion_write | set(self.pointers)
        self.params: list[Variable] = []
        for b in self.blocks.get("ParamBlock", []):
            for st in b.statements:
                if type(st).__name__ != "ParamAssign":
                    continue
                n = st.get_node_name()
                if type(st.name).__name__ == "IndexedName":
                    self.fail(f"PARAMETER {n}[]", "arrays are not translated",
                              rf"\b{re.escape(n)}\s*\[")
                if n in skip:
                    continue
                # nocmodl writes PARAMETER defaults into its C with printf's %g: six
                # significant digits are what NEURON runs with
                value = float(format(float(st.value.eval()), "g")) if st.value is not None \
                    else 0.0
                self.params.append(Variable(n, value, unit_of(st)))
        self.conc_written = {w for ion in self.ions for w in ion.write
                             if w in concentration_names(ion.name)}
        self.states: list[Variable] = []
        self.ion_states: set = set()
        self.arrays: dict = {}
        for b in self.blocks.get("StateBlock", []):
            for d in b.definitions:
                n = d.get_node_name()
                if d.length is not None or type(d.name).__name__ == "IndexedName":
                    self.state_array(d, unit_of(d))
                    continue
                if n in self.ion_read | self.ion_write:
                    if n not in self.conc_written:
                        self.fail(f"STATE {n}", "an ion variable the mechanism does not "
                                  "WRITE as a concentration, as a state",
                                  rf"\b{re.escape(n)}\b")
                    # a concentration the mechanism integrates: its ion field (loaded
                    # from the node before each block and stored back after it)
                    self.ion_states.add(n)
                    continue
                self.states.append(Variable(n, 0.0, unit_of(d)))
        self.refuse_pointer_states(self.states)
        self.assigned: list[Variable] = []
        for b in self.blocks.get("AssignedBlock", []):
            for d in b.definitions:
                n = d.get_node_name()
                if n in skip:
                    continue
                if d.length is not None:      # inf[2]: the fields inf__0, inf__1
                    length = int(float(d.length.eval()))
                    self.arrays[n] = length
                    self.assigned += [Variable(f"{n}__{k}", 0.0, unit_of(d))
                                      for k in range(length)]
                    continue
                self.assigned.append(Variable(n, 0.0, unit_of(d)))
        # LOCAL at file level: a value per instance
        for b in self.blocks.get("LocalListStatement", []):
            for var in b.variables:
                if type(var.name).__name__ == "IndexedName":     # frat[3]: frat__0, ...
                    self.local_array(var)
                    continue
                self.assigned.append(Variable(var.get_node_name(), 0.0, "1"))
        for c in self.currents:
            if c not in self.ion_write and c not in {a.name for a in self.assigned}:
                self.fail(c, "a current not declared in ASSIGNED", rf"\b{re.escape(c)}\b")
        self.geometry = self.geometry_fields()
        self.param_names = {p.name for p in self.params}
        self.assigned_names = {a.name for a in self.assigned}
        self.state_names = {s.name for s in self.states} | self.ion_states
        self.field_names = (self.param_names | self.assigned_names | self.state_names
                            | self.ion_read | self.ion_write | set(self.pointers))
        for n in self.field_names:
            if n.startswith("_"):
                self.fail(n, "names starting with '_' are not translated",
                          rf"\b{re.escape(n)}\b")

    def _callables(self):
        self.functions = {f.get_node_name(): f for f in self.blocks.get("FunctionBlock", [])}
        self.procedures = {p.get_node_name(): p
                           for p in self.blocks.get("ProcedureBlock", [])}
        self.derivatives = {d.get_node_name(): d
                            for d in self.blocks.get("DerivativeBlock", [])}
        self.kinetics = {b.get_node_name(): b for b in self.blocks.get("KineticBlock", [])}
        # A FUNCTION that writes the mechanism's variables (other than first thing, once,
        # see below) is a PROCEDURE whose own name is a local: called as a statement, a
        # PROCEDURE in all but name; used as a value, called before the statement that
        # uses it (:meth:`value_call`).
        self.function_procedures = set()
        self.value_procedures = set()
        values = set()
        for kind in ("InitialBlock", "BreakpointBlock", "DerivativeBlock", "KineticBlock",
                     "ProcedureBlock", "FunctionBlock", "NetReceiveBlock"):
            for b in self.blocks.get(kind, []):
                values |= value_calls(b.statement_block.statements)
        fields = (self.param_names | self.assigned_names | self.state_names | self.ion_read
                  | self.ion_write)
        for f, block in list(self.functions.items()):
            # a write first thing, once, from the mechanism's values stays a FUNCTION whose
            # callers make that write (CallableLowering.function_side)
            if self._expand(writes(block.statement_block.statements)) & fields \
                    and not self.function_side(f):
                self.function_procedures.add(f)
                if f in values:
                    self.value_procedures.add(f)
                self.procedures[f] = self.functions.pop(f)
        callables = {**self.functions, **self.procedures}
        graph = {n: reads_and_calls(b.statement_block.statements)[1] & set(callables)
                 for n, b in callables.items()}
        state: dict = {}

        def visit(n, path):
            if state.get(n) == 1:
                kind = "FUNCTION" if n in self.functions else "PROCEDURE"
                self.fail(f"{kind} {n}", "recursion (" + " -> ".join(path + [n])
                          + ") is not translated", rf"(FUNCTION|PROCEDURE)\s+{n}\b")
            if state.get(n) == 2:
                return
            state[n] = 1
            for g in sorted(graph[n]):
                visit(g, path + [n])
            state[n] = 2

        for n in sorted(graph):
            visit(n, [])

    # ---- statements ---------------------------------------------------------------------
    def _written_everywhere(self) -> set:
        out: set = set()

        def walk(stmts):
            for st in stmts:
                k = type(st).__name__
                if k == "ExpressionStatement":
                    e = unwrap(st.expression)
                    if type(e).__name__ == "ForNetcon":
                        walk(e.statement_block.statements)
                    elif type(e).__name__ == "BinaryExpression" and e.op.eval() == "=":
                        out.add(e.lhs.get_node_name())
                    elif discontinuity_target(e) is not None:
                        out.add(discontinuity_target(e))
                    elif type(e).__name__ == "DiffEqExpression":
                        out.add(e.expression.lhs.get_node_name().rstrip("'"))
                elif k in ("IfStatement", "ElseIfStatement", "ElseStatement",
                           "FromStatement", "WhileStatement"):
                    walk(st.statement_block.statements)
                    if k == "IfStatement":
                        for e in st.elseifs:
                            walk(e.statement_block.statements)
                        if st.elses is not None:
                            walk(st.elses.statement_block.statements)
                elif k == "TableStatement":
                    out.update(v.get_node_name() for v in st.table_vars)
        for kind in ("InitialBlock", "BreakpointBlock", "DerivativeBlock", "KineticBlock",
                     "ProcedureBlock", "FunctionBlock", "NetReceiveBlock"):
            for b in self.blocks.get(kind, []):
                walk(b.statement_block.statements)
        return self._expand(out)

    def _expr(self, node, ctx) -> tuple:
        try:
            e = ex.from_ast(node)
        except ex.ExpressionError as err:
            self.fail(ctx.where, str(err), *ctx.patterns)
        e = ex.substitute(e, self.const)
        e = ex.substitute(e, ctx.rename)
        e = ex.fold_indices(e, lambda a, i: self._element(a, i, ctx))
        for n in ex.names(e):
            self._check_name(n, ctx)
        if ctx.calls is not None:
            ctx.reads |= ex.names(e)
        e = ex.map_calls(e, lambda f, args: self._call(f, args, ctx))
        self.check_draws(e, ctx)
        return e

    def _element(self, array, index, ctx) -> tuple:
        """``array[index]`` as the field ``array__k`` (the index must be a constant, as
        it is inside an unrolled FROM loop)."""
        pat = rf"\b{re.escape(array)}\s*\["
        if array not in self.arrays:
            self.fail(f"{array}[]", "not an ASSIGNED array (only those are translated)",
                      pat)
        k = constant_value(index)
        if k is None:
            return self.element_load(array, index, ctx)
        if k != int(k):
            self.fail(f"{array}[]", "an index that is not a whole number",
                      rf"\b{re.escape(array)}\s*\[\s*[A-Za-z_(]", pat)
        if not 0 <= k < self.arrays[array]:
            self.fail(f"{array}[]", f"index {int(k)} outside [0, {self.arrays[array]})",
                      rf"\b{re.escape(array)}\s*\[\s*{int(k)}\s*\]", pat)
        return ("name", f"{array}__{int(k)}")

    def _expand(self, names: set) -> set:
        """``names`` with each array replaced by its elements."""
        out = set()
        for n in names:
            out |= {f"{n}__{k}" for k in range(self.arrays[n])} if n in self.arrays else {n}
        return out

    def _check_name(self, n, ctx):
        if n in ctx.locals or n in ctx.args:
            return
        self.refuse_artificial_v(n)
        if n in SPECIALS or n in self.field_names or n in ctx.extra:
            return
        if n in UNPROVIDED:
            self.fail(n, f"{UNPROVIDED[n]} is not provided to mechanisms",
                      rf"\b{re.escape(n)}\b")
        self.fail(n, f"unknown name in {ctx.where}", rf"\b{re.escape(n)}\b")

    def _call(self, f, args, ctx) -> tuple:
        if f in _RANDOM:
            self.fail(f"{f}()", "random-number generators other than NEURON's scoplib "
                      "stream (normrand, exprand, poisrand, scop_random) are not translated",
                      rf"\b{f}\s*\(")
        if f in DRAWS:
            return self.draw_call(f, args, ctx)
        if f == SEED_CALL:
            self.fail(f"{f}()", "set_seed used as a value (it returns nothing)",
                      rf"\b{f}\s*\(")
        if f in _EVENTS:
            self.fail(f"{f}()", f"{_EVENTS[f]} is not translated", rf"\b{f}\s*\(")
        if f in _INTRINSICS:
            return ("call", f, args)
        if f in self.functions:
            self.check_call(f, ctx)
            self.check_procedure_draws(f, ctx)
            extra = self.function_extra(f)
            return ("call", f, args + tuple(ex.substitute(("name", n), ctx.rename)
                                            for n in extra))
        if f in self.value_procedures:
            return self.value_call(f, args, ctx)
        if f in self.procedures:
            self.fail(f"{f}()", "a PROCEDURE used as a value", rf"\b{f}\s*\(")
        self.fail(f"{f}()", "unknown function", rf"\b{f}\s*\(")

    def statements(self, stmts, ctx, indent: int = 0) -> list[str]:
        pad = "    " * indent
        out: list[str] = []
        for st in stmts:
            k = type(st).__name__
            if k in ("LineComment", "BlockComment", "MutexLock", "MutexUnlock", "UnitState"):
                continue
            if k == "LocalListStatement":
                for var in st.variables:
                    n = var.get_node_name()
                    if type(var.name).__name__ == "IndexedName":
                        self.fail(f"LOCAL {n}[]", "arrays are not translated",
                                  rf"\b{re.escape(n)}\s*\[")
                    if ctx.declare_local(n) == n and (n in self.field_names
                                                      or n in SPECIALS):
                        # a LOCAL hides the mechanism's variable of its name
                        ctx.locals.discard(n)
                        ctx.rename[n] = ("name", f"{n}__local")
                        ctx.locals.add(f"{n}__local")
                continue
            if k in ("ExpressionStatement", "ProtectStatement"):   # PROTECT only locks
                out += self.side_writes_before(st, ctx, pad)
                out += self._expression_statement(st.expression, ctx, pad)
                ctx.side_ok = set()
            elif k == "IfStatement":
                out += self._if(st, ctx, indent)
            elif k == "FromStatement":
                out += self._from(st, ctx, indent)
            elif k == "Verbatim":
                self.verbatim_statement(st, ctx)
            elif k == "TableStatement":
                if not ctx.table_ok:
                    self.fail("TABLE", f"a TABLE in {ctx.where} is not translated",
                              r"\bTABLE\b")
            elif k == "SolveBlock":
                out += self._solve_statement(st, ctx, pad)
            elif k in ("ReactionStatement", "Conserve", "Compartment", "LonDiffuse") \
                    and ctx.kinetic is not None:
                out += ctx.kinetic(st, ctx, pad)
            elif k == "WhileStatement":
                out += self.while_loop(st, ctx, indent)
            elif k == "ConserveStatement" or k == "Conserve":
                self.fail("CONSERVE", "kinetic schemes are not translated", r"\bCONSERVE\b")
            elif k == "ReactionStatement":
                self.fail("~", "reactions are not translated", r"~")
            elif k == "WatchStatement":
                out += self.watch_statement(st, ctx, pad)
            elif k == "ForNetcon":
                out += self.for_netcons_statement(st, ctx, indent)
            elif k == "LagStatement":
                self.fail("LAG", "not translated", r"\bLAG\b")
            elif k == "InitialBlock":
                self.fail("INITIAL", f"an INITIAL block inside {ctx.where} is not "
                          "translated", r"\bINITIAL\b")
            else:
                self.fail(k, f"statement not translated in {ctx.where}", *ctx.patterns)
        return out

    def _expression_statement(self, e, ctx, pad) -> list[str]:
        e = unwrap(e)
        k = type(e).__name__
        if k == "SolveBlock":
            return self._solve_statement(e, ctx, pad)
        if k == "DiffEqExpression":
            if ctx.diffeq is None:
                self.fail("'", f"a differential equation in {ctx.where}", *ctx.patterns)
            return ctx.diffeq(e, ctx, pad)
        if k == "BinaryExpression" and e.op.eval() == "=":
            return self.assignment(e.lhs, e.rhs, ctx, pad)
        if k == "ForNetcon":
            return self.for_netcons_statement(e, ctx, len(pad) // 4)
        if k == "WatchStatement":
            return self.watch_statement(e, ctx, pad)
        if k == "FunctionCall":
            f = e.get_node_name()
            if f in _IGNORED_CALLS:
                return []
            if f == "net_send":
                return self.net_send_statement(e, ctx, pad)
            if f == "net_event":
                return self.net_event_statement(e, ctx, pad)
            if f == SEED_CALL:
                return self.seed_statement(e, ctx, pad)
            if f in STATEMENT_CALLS:
                return self.statement_call(f, e, ctx, pad)
            if f in self.procedures:
                text, before = self.with_calls(lambda: self._procedure_call(f, e, ctx), ctx,
                                               pad)
                return before + [pad + text + "\n"]
            value, before = self.with_calls(lambda: self._expr(e, ctx), ctx, pad)
            name = ctx.declare_local("unused")
            return before + [f"{pad}{ex.py_name(name)} = {ex.to_text(value)}\n"]
        self.fail(k, f"expression statement not translated in {ctx.where}", *ctx.patterns)

    def assignment(self, lhs, rhs, ctx, pad, at: tuple = ()) -> list[str]:
        """``lhs = rhs`` (``lhs`` a name or an array element of the AST); ``at``: patterns
        of the statement's line, tried first in messages."""
        if type(lhs).__name__ not in ("Name", "VarName") or (
                type(lhs).__name__ == "VarName" and lhs.index is not None):
            self.fail(lhs.get_node_name(), "assignment to this kind of element", *at,
                      rf"\b{re.escape(lhs.get_node_name())}\s*\[")
        if type(lhs).__name__ == "VarName" and type(lhs.name).__name__ == "IndexedName":
            element = ex.substitute(ex.substitute(ex.from_ast(lhs), self.const),
                                    ctx.rename)
            if element[1] in self.arrays and constant_value(element[2]) is None:
                return self.element_store(element, rhs, ctx, pad)
            target = ex.fold_indices(element, lambda a, i: self._element(a, i, ctx))[1]
        else:
            target = ctx.rename.get(lhs.get_node_name(),
                                    ("name", lhs.get_node_name()))[1]
        if not isinstance(target, str):
            self.fail(lhs.get_node_name(), "assigns a FROM loop's variable or a "
                      "constant", *at, rf"\b{re.escape(lhs.get_node_name())}\s*=")
        if (target in SPECIALS or target in self.geometry) and target not in ctx.args \
                and target not in ctx.locals:
            self.fail(target, f"assigns NEURON's {target}", *at, rf"\b{target}\s*=")
        if target in self.const:
            self.fail(target, "assigns a CONSTANT", *at, rf"\b{target}\s*=")
        self._check_name(target, ctx)
        if target in ctx.readonly:
            name = lhs.get_node_name()
            self.fail(name, ctx.readonly[target], *at, rf"\b{re.escape(name)}\s*=")
        ctx.wrote.add(target)
        value, before = self.with_calls(lambda: self._expr(rhs, ctx), ctx, pad)
        return before + [f"{pad}{ex.py_name(target)} = {ex.to_text(value)}\n"]

    def _solve_statement(self, st, ctx, pad) -> list[str]:
        """``SOLVE kin STEADYSTATE sparse`` in INITIAL; any other SOLVE outside BREAKPOINT
        is refused."""
        name = st.block_name.get_node_name()
        method = st.steadystate.get_node_name() if st.steadystate is not None else None
        if ctx.where != "INITIAL" or method is None:
            self.fail("SOLVE", f"SOLVE in {ctx.where} is not translated", r"\bSOLVE\b")
        pat = rf"SOLVE\s+{name}\b"
        if name not in self.kinetics or method != "sparse":
            self.fail(f"SOLVE {name} STEADYSTATE {method}", "only STEADYSTATE sparse of a "
                      "KINETIC block is translated", pat)
        text = self.kinetic_solve(name, steady=True)
        return ["".join(pad + line for line in text.splitlines(True))]

    def _procedure_call(self, f, call, ctx) -> str:
        self.check_table_reach(f, ctx)
        self.check_procedure_draws(f, ctx)
        args = [self._expr(a, ctx) for a in call.arguments]
        proc = self.procedures[f]
        self.check_arity(f, args, len(proc.parameters), rf"\b{f}\s*\(")
        if not ctx.fields:
            info = self.procedure_info(f)
            if info.fields_used or info.table is not None:
                self.fail(f"{f}()", f"a PROCEDURE that uses the mechanism's variables or a "
                          f"TABLE, called from {ctx.where}", rf"\b{f}\s*\(")
        ctx.wrote |= self.procedure_info(f).writes
        return f"{f}({', '.join(ex.to_text(a) for a in args)})"

    def _if(self, st, ctx, indent) -> list[str]:
        pad = "    " * indent
        cond, out = self.with_calls(lambda: ex.to_text(self._expr(st.condition, ctx)), ctx,
                                    pad)
        out.append(f"{pad}if {cond}:\n")
        out += self.statements(st.statement_block.statements, ctx, indent + 1) \
            or [f"{pad}    pass\n"]
        rest = list(st.elseifs)
        tail = st.elses
        if rest:
            first = rest[0]
            nested = IfLike(first.condition, first.statement_block, rest[1:], tail)
            out += [f"{pad}else:\n"] + self._if(nested, ctx, indent + 1)
        elif tail is not None:
            out += [f"{pad}else:\n"]
            out += self.statements(tail.statement_block.statements, ctx, indent + 1) \
                or [f"{pad}    pass\n"]
        return out

    def _from(self, st, ctx, indent) -> list[str]:
        n = st.get_node_name()
        bounds = []
        for part in (getattr(st, "from"), st.to, st.increment):
            if part is None:
                bounds.append(1.0)
                continue
            e = ex.substitute(ex.from_ast(part), self.const)
            value = constant_value(e)
            if value is None:       # known only at run time: a loop
                return self.from_loop(st, ctx, indent)
            bounds.append(value)
        # nocmodl's C: {int i; for (i = (int) lo; i <= (int) hi; i += step) ...}
        lo, hi, step = (float(int(b)) for b in bounds)
        if step == 0 or (hi - lo) / step > _FROM_LIMIT:
            self.fail("FROM", f"more than {_FROM_LIMIT} iterations", r"\bFROM\b")
        # each pass with the loop variable a constant (so that arrays can be indexed by
        # it); the loop's variable is its own, so the block's variable of that name (a
        # LOCAL or the mechanism's) keeps its value
        before = ctx.rename.get(n)
        out, i = [], lo
        while (step > 0 and i <= hi) or (step < 0 and i >= hi):
            ctx.rename[n] = ("num", float(i))
            out += self.statements(st.statement_block.statements, ctx, indent)
            i += step
        if before is None:
            ctx.rename.pop(n, None)
        else:
            ctx.rename[n] = before
        return out

    # ---- callables ----------------------------------------------------------------------
    def _build(self, order: int) -> Mechanism:
        fixed = self.tables_fixed()
        self.fixed = set(fixed)
        self.const.update(fixed)
        self.param_names -= self.fixed
        self.field_names -= self.fixed
        self.__dict__.pop("_extra", None)
        self.__dict__.pop("_pinfo", None)
        procedures = tuple(self._procedure(p) for p in self.procedures)
        functions = tuple(self._function(f) for f in self.functions)
        initial = self._simple_block("InitialBlock", "INITIAL", r"\bINITIAL\b")
        breakpoint, state, cnexp, after_solve = self._breakpoint()
        net_receive, net_receive_args, net_receive_initial = self.net_receive_block()
        if (net_receive_args or net_receive_initial) and not net_receive.strip():
            net_receive = "pass"        # a NET_RECEIVE whose body is empty
        diffusion = self.diffusion()
        size = sum(len(text) for text in (initial, breakpoint, state, after_solve, net_receive,
                                          net_receive_initial)) \
            + sum(len(c.body) for c in procedures + functions) \
            + sum(len(c.b) + len(c.a) for c in cnexp)
        if size > MAX_CODE_CHARS:
            self.fail("generated code", f"{size:,} characters of statements once loops, "
                      f"array elements and KINETIC schemes are written out (more than "
                      f"{MAX_CODE_CHARS:,} are not translated: the compilers' memory grows "
                      "with them)", r"\b(NEURON)\b")
        params = tuple(p for p in self.params if p.name not in self.fixed)
        for n in sorted(self.fixed):
            line = self.line_of(rf"\b{n}\b")
            self.notices.append(f"{self.path}:{line}: PARAMETER {n} is fixed at the "
                                "file's value (a TABLE depends on it)")
        return Mechanism(
            name=self.name, kind=self.kind, order=order, parameters=params,
            states=tuple(self.states), assigned=tuple(self.assigned), ions=tuple(self.ions),
            currents=tuple(self.currents), electrode=self.electrode,
            functions=functions, procedures=procedures, initial=initial,
            breakpoint=breakpoint, state=state, cnexp=cnexp, after_solve=after_solve,
            net_receive=net_receive, net_receive_args=net_receive_args,
            net_receive_initial=net_receive_initial, aliases={ex.py_name(p.name): p.name for p in params
                     if ex.py_name(p.name) != p.name},
            doc=f"Translated from {Path(self.path).name}.", geometry=self.geometry,
            stream_calls=tuple(self.__dict__.get("stream_calls", ())),
            pointers=tuple(self.pointers), diffusion=diffusion)

    def _simple_block(self, kind, where, pattern) -> str:
        blocks = self.blocks.get(kind, [])
        if not blocks:
            return ""
        ctx = Context(where, [pattern], fields=True)
        ctx.net_send = where == "INITIAL" and self.kind in ("point", "artificial")
        stmts = blocks[0].statement_block.statements
        if where == "INITIAL":
            ctx.return_tail = self.return_tail(stmts)
        prefix = self.ion_copies(stmts, ctx)
        return prefix + "".join(self.statements(stmts, ctx))

    def ion_copies(self, stmts, ctx) -> str:
        """A block that assigns an ion variable it only READs changes its own copy: nocmodl
        loads the ion's value into the copy at the start of each block and never stores it
        back. Such variables become locals of the block, loaded first (the text returned).

        Raises NmodlError where a PROCEDURE or FUNCTION would need to see the copy, or a
        PROCEDURE assigns one (its caller's copy would change)."""
        names = self._expand(writes(stmts)) & (self.ion_read - self.ion_write)
        if not names:
            return ""
        if ctx.where.startswith(("PROCEDURE", "FUNCTION", "NET_RECEIVE")):
            n = min(names)
            self.fail(n, f"{ctx.where} assigns {n}, an ion variable the mechanism only "
                      "READs", rf"\b{re.escape(n)}\s*=")
        if ctx.where == "BREAKPOINT":
            # nocmodl loads the copy once for both evaluations of the currents: the same
            # as once per evaluation where the block first sets it from other values
            for n in sorted(names):
                first = next((st for st in stmts if n in self._expand(
                    reads_and_calls([st])[0] | writes([st]))), None)
                e = unwrap(first.expression) if type(first).__name__ == \
                    "ExpressionStatement" else None
                if e is None or type(e).__name__ != "BinaryExpression" \
                        or e.op.eval() != "=" or e.lhs.get_node_name() != n \
                        or n in self._expand(reads_and_calls([first])[0]):
                    self.fail(n, f"BREAKPOINT assigns {n}, an ion variable the mechanism "
                              "only READs, after using it", rf"\b{re.escape(n)}\b")
        calls = reads_and_calls(stmts)[1]
        for g in calls:
            used = (self.procedure_info(g).fields_used if g in self.procedures
                    else set(self.function_extra(g)) if g in self.functions else set())
            for n in sorted(used & names):
                self.fail(n, f"{ctx.where} assigns {n}, an ion variable the mechanism only "
                          f"READs, and {g} reads it", rf"\b{re.escape(n)}\s*=")
        out = ""
        for n in sorted(names):
            local = f"{n}__copy"
            ctx.rename[n] = ("name", local)
            ctx.locals.add(local)
            out += f"{local} = {ex.py_name(n)}\n"
        return out
