"""Compile mechanism descriptions into the Numba source of the engine's loops.

The statement language of :mod:`.description` is parsed with :mod:`ast`, checked, and
emitted with every operation parenthesised, so the generated code evaluates each expression
in the order the description gives (no reassociation; Numba without ``fastmath`` does not
contract to FMA). Names are resolved here:

- a mechanism variable becomes ``_D_<mech>[k, _j]``: one float64 array per mechanism,
  ``fields × instances`` (:attr:`Mechanism.fields` order), ``_j`` the instance;
- ``v``, ``t``, ``dt``, ``celsius`` become ``_v``, ``_t``, ``_dt``, ``_celsius``; in
  NET_RECEIVE ``weight`` and the ``net_receive_args`` are the NetCon's weight vector
  ``_w[0]``, ``_w[1]``, ... and ``flag`` is ``_flag``; any other name is a local
  ``_l_<name>``;
- ``net_send(delay, flag)`` writes a row of the array ``_S`` (NET_RECEIVE: ``t + delay,
  flag, 0``; INITIAL: ``instance, t + delay, flag``; ``t + delay`` as nocmodl writes it,
  ``t`` added to the leftmost term of a sum first) and counts it in ``_ns``, which the
  function returns: the engine queues the self-events in that order; ``net_event(te)``
  (NET_RECEIVE only) writes the row ``te, 0, 1``: a spike of the instance at ``te`` [ms],
  which the engine sends through the NetCons leaving it, in the same order;
  ``watch_above(x, flag)`` (NET_RECEIVE only) writes the row ``x, flag, 2``: the engine
  activates a WATCH of the instance's ``v`` rising through ``x`` [mV];
- ``for a, b in netcons():`` (NET_RECEIVE only, FOR_NETCONS) loops over the rows of
  ``_FW``, the weight vectors of the NetCons that target the instance (one row each, in
  NEURON's order), ``a``, ``b`` bound to the row's entries 0, 1; ``_FW`` is an argument
  of ``_net_receive_<m>`` (before ``_S``) where the block has such a loop;
- ``exp`` is NEURON's ``hoc_Exp`` (``_hoc_exp``); ``log``, ``pow``, ``fabs``, ``sqrt``
  (and ``log10``, the trigonometric and hyperbolic functions, ``floor``, ``ceil``,
  ``fmod``, which NMODL files use) are the C library's (``math``; ``fmod``, ``floor``
  and ``ceil`` numpy's, which Numba compiles to C's doubles);
- a FUNCTION becomes ``_F_<mech>_<name>(args..., _celsius)``; one with a TABLE also
  becomes ``_build_<mech>_<name>`` and ``_LF_<mech>_<name>(x, table)`` (NEURON's lookup),
  which its calls are with tables on; a PROCEDURE is inlined at its call; one with a TABLE
  also becomes ``_P_<mech>_<name>`` (the exact outputs, which build the table, built by
  ``_build_<mech>_<name>(celsius, dt, *reads)`` with the first instance's values of the
  table's ``reads``) and
  ``_L_<mech>_<name>`` (NEURON's lookup), and with tables on its call is the lookup,
  inlined. Tables are arguments ``_TB_<mech>_<name>`` of the loops and INITIAL only:
  FUNCTION bodies and NET_RECEIVE cannot call a tabulated FUNCTION or PROCEDURE;
- NEURON's random numbers (:mod:`.scoprand`): ``normrand(m, s)``, ``exprand(m)``,
  ``poisrand(m)``, ``scop_random()`` become ``_rand_<name>(_RS, ...)`` and the statement
  ``set_seed(x)`` ``_rand_set_seed(_RS, x)``, ``_RS`` the simulation's stream (an argument
  of INITIAL and of the loops, after the tables, where a mechanism draws): in INITIAL,
  the BREAKPOINT and the state update only;
- a POINTER (``Mechanism.pointers``) becomes ``_value(m, f, i, v, _D_<a>, _D_<b>, ...)``
  (the recordings' reader: ``v[i]`` where ``m < 0``, else field ``f`` of instance ``i`` of
  the module's ``m``-th mechanism) with ``m, f, i`` the rows ``3k, 3k + 1, 3k + 2`` of
  the instance's column of ``_PT_<mech>`` (int64, ``3·pointers × instances``) for its
  ``k``-th pointer: read live each time, in INITIAL, the BREAKPOINT and the state update.
"""
from __future__ import annotations

import ast
import functools
import keyword
from typing import NamedTuple

from .description import Mechanism
from .ions import FARADAY, GAS_CONSTANT
from .scoprand import DRAWS, SEED_CALL

__all__ = ["DIFFUSION_ROWS", "CodegenError", "IonIO", "MechanismCode", "count_net_sends",
           "hoc_exp_source", "drawing_functions", "ion_io", "nernst_source", "pointers_read",
           "stream_blocks", "uses_netcons"]

_INTRINSICS = {"exp": "_hoc_exp", "log": "math.log", "pow": "math.pow", "fabs": "math.fabs",
               "sqrt": "math.sqrt",
               **{f: f"math.{f}" for f in ("log10", "sin", "cos", "tan", "asin", "acos",
                                           "atan", "atan2", "sinh", "cosh", "tanh")},
               # Numba has no math.fmod, and its math.floor/ceil return integers: numpy's
               # give C's doubles (fmod exactly, as C's)
               **{f: f"np.{f}" for f in ("fmod", "floor", "ceil")}}
_SPECIAL = {"v": "_v", "t": "_t", "dt": "_dt", "celsius": "_celsius"}
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}
_CMPOPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
           ast.NotEq: "!="}


#: Rows of a diffusing mechanism's ``_LC_<m>`` (instances as columns): NEURON's ``af`` and
#: ``bf`` (set by the layout), then the scratch of each step: coefficient, volume, the
#: matrix's ``a``, ``b``, ``d`` and right-hand side.
DIFFUSION_ROWS = ("laf", "lbf", "ldc", "lvol", "lda", "ldb", "ldd", "ldr")


class CodegenError(ValueError):
    """A code block uses something outside the statement language (names the block)."""


def count_net_sends(text: str, names=("net_send",)) -> int:
    """How many ``net_send(...)`` statements (or calls of any of ``names``) the block
    ``text`` holds: the most events one run of it can queue (the statement language has
    no loops)."""
    return sum(isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
               and n.func.id in names for n in _nodes(text))


@functools.lru_cache(maxsize=4096)
def _nodes(text: str) -> tuple:
    """Every node of the block ``text`` (``ast.walk`` order; none where it does not
    parse), kept per text: the checks below read the same blocks again on every run."""
    try:
        return tuple(ast.walk(ast.parse(text.strip() or "pass")))
    except SyntaxError:
        return ()


def uses_netcons(text: str) -> bool:
    """Whether the block ``text`` loops over its instance's NetCons (``for ... in
    netcons():``, NMODL's FOR_NETCONS)."""
    return any(isinstance(n, ast.For) and isinstance(n.iter, ast.Call)
               and isinstance(n.iter.func, ast.Name) and n.iter.func.id == "netcons"
               for n in _nodes(text))


def _draw_calls(text: str) -> set:
    """Names of the functions and procedures ``text`` calls."""
    return {n.func.id for n in _nodes(text)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}


def stream_blocks(mech: Mechanism) -> tuple:
    """The blocks of ``mech`` that draw from the random-number stream or set its seed
    (directly or through the PROCEDUREs and FUNCTIONs they call): of ``"initial"``,
    ``"breakpoint"``, ``"state"``, ``"after_solve"``, ``"net_receive"`` (where the engines
    pass the stream) and ``"function"`` (a FUNCTION that draws takes the stream)."""
    blocks = {"initial": mech.initial, "breakpoint": mech.breakpoint, "state": mech.state,
              "after_solve": mech.after_solve, "net_receive": mech.net_receive
              + "\n" + mech.net_receive_initial}
    out = [b for b, text in blocks.items() if _text_draws(mech, text)]
    if drawing_functions(mech):
        out.append("function")
    return tuple(out)


def drawing_functions(mech: Mechanism) -> frozenset:
    """Names of the FUNCTIONs of ``mech`` that draw from the random-number stream or set
    its seed, themselves or through the PROCEDUREs and FUNCTIONs they call."""
    return frozenset(f.name for f in mech.functions if _text_draws(mech, f.body))


def _text_draws(mech: Mechanism, text: str) -> bool:
    """Whether the block ``text`` of ``mech`` draws, itself or through its callees."""
    own = DRAWS.keys() | {SEED_CALL}
    callees = {p.name: _draw_calls(p.body) for p in mech.procedures}
    callees.update({f.name: _draw_calls(f.body) for f in mech.functions})

    def draws(calls: set, seen: frozenset) -> bool:
        return any(f in own or (f in callees and f not in seen
                                and draws(callees[f], seen | {f})) for f in calls)

    return draws(_draw_calls(text), frozenset())


def _names_in(text: str) -> set:
    """Every name ``text`` uses."""
    return {n.id for n in _nodes(text) if isinstance(n, ast.Name)}


def pointers_read(mech: Mechanism) -> tuple:
    """The POINTERs of ``mech`` that its blocks read (those a run needs set), in
    declaration order: a POINTER only declared is never read."""
    if not mech.pointers:
        return ()
    texts = [mech.initial, mech.breakpoint, mech.state, mech.after_solve,
             mech.net_receive, mech.net_receive_initial]
    texts += [c.b + "\n" + c.a for c in mech.cnexp]
    texts += [f.body for f in mech.functions + mech.procedures]
    used = set().union(*(_names_in(t) for t in texts))
    return tuple(p for p in mech.pointers if p in used)


def hoc_exp_source(vector_exp: bool = False) -> str:
    """NEURON's ``hoc_Exp``: 0 below -700, exp(700) above 700, else the C library's exp
    (with ``vector_exp``, :func:`.libm_exp.hoc_exp`: the same bits without a call, so that
    the loops that call it, the rate functions' among them, vectorize)."""
    if vector_exp:
        return ("@njit(cache=True, error_model='numpy')\n"
                "def _hoc_exp(x):\n"
                "    return _hoc_exp_vector(x)\n")
    return (
        "@njit(cache=True, error_model='numpy')\n"
        "def _hoc_exp(x):\n"
        "    if x < -700.0:\n"
        "        return 0.0\n"
        "    if x > 700.0:\n"
        "        return math.exp(700.0)\n"
        "    return math.exp(x)\n")


def nernst_source() -> str:
    """NEURON's ``nrn_nernst`` [mV] (:func:`.ions.nernst`) in its order of operations."""
    return (
        "@njit(cache=True, error_model='numpy')\n"
        "def _nernst(ci, co, z, _celsius):\n"
        "    if z == 0.0:\n"
        "        return 0.0\n"
        "    if ci <= 0.0:\n"
        "        return 1e6\n"
        "    if co <= 0.0:\n"
        "        return -1e6\n"
        f"    ktf = 1000.0 * {GAS_CONSTANT!r} * (_celsius + 273.15) / {FARADAY!r}\n"
        "    return ktf / z * math.log(co / ci)\n")


class IonIO(NamedTuple):
    """How one mechanism's copies meet the per-node arrays of the ions kept per node:
    ``loads`` (ion, field index, row) before its blocks, ``adds`` (the currents it
    writes) after its current block, ``stores`` (the concentrations it writes) after its
    state and INITIAL blocks, ``wrote_conc`` (ion, charge) where it writes one."""

    loads: list
    adds: list
    stores: list
    wrote_conc: list


def ion_io(mech: Mechanism, kept: dict) -> IonIO:
    """:class:`IonIO` of ``mech`` for the ions ``kept`` per node (name -> charge)."""
    loads, adds, stores, wrote = [], [], [], []
    fields = mech.field_names
    for ion in mech.ions:
        if ion.name not in kept:
            continue
        rows = {f"e{ion.name}": 0, f"{ion.name}i": 1, f"{ion.name}o": 2, f"i{ion.name}": 3}
        conc = {f"{ion.name}i", f"{ion.name}o"}
        for name in dict.fromkeys(ion.read + tuple(w for w in ion.write if w in conc)):
            loads.append((ion.name, fields.index(name), rows[name]))
        for name in ion.write:
            if name == f"i{ion.name}":
                adds.append((ion.name, fields.index(name), 3))
            elif name in conc:
                stores.append((ion.name, fields.index(name), rows[name]))
        if set(ion.write) & conc:
            wrote.append((ion.name, kept[ion.name]))
    return IonIO(loads, adds, stores, wrote)


def _name(code_name: str) -> str:
    """NEURON's name of an identifier (``del_`` -> ``del``)."""
    return code_name[:-1] if code_name.endswith("_") and code_name[:-1] in _KEYWORDS else \
        code_name


_KEYWORDS = set(keyword.kwlist) | set(keyword.softkwlist)


class _Scope:
    """How names resolve inside one block. ``tables``: True where TABLE lookups are used,
    False where the exact forms are, None where the tables are out of reach (FUNCTION
    bodies, NET_RECEIVE)."""

    def __init__(self, mech: Mechanism, *, fields: bool, args: dict | None = None,
                 weight: bool = False, tables: bool | None = True):
        self.mech = mech
        self.fields = {n: k for k, n in enumerate(mech.field_names)} if fields else {}
        self.args = dict(args or {})
        self.weight = weight        # NET_RECEIVE: the weight vector and flag
        self.sends = None           # where net_send may appear: "receive" or "initial"
        self.tables = tables
        self.locals: set = set()
        self.stream = False         # the random-number stream _RS is reachable
        self.pointer = None         # (array, readers' args) where POINTERs are readable
        self.looping = False        # inside NET_RECEIVE's netcons() loop
        self.cache = False          # fields live in locals _c_<name> (see MechanismCode.wrap)
        self.used: dict = {}        # field -> index, in order of first use
        self.written: dict = {}

    def load(self, name: str) -> str:
        name = _name(name)
        if name in self.args:
            return self.args[name]
        if self.weight:
            if name == "weight":
                return "_w[0]"
            if name in self.mech.net_receive_args:
                return f"_w[{self.mech.net_receive_args.index(name) + 1}]"
            if name == "flag":
                return "_flag"
        if name in _SPECIAL:
            return _SPECIAL[name]
        if name in self.mech.pointers:
            if self.pointer is None:
                raise CodegenError(f"mechanism {self.mech.name}: POINTER {name!r} is read "
                                   "in INITIAL, the BREAKPOINT and the state update only")
            array, args = self.pointer
            k = 3 * self.mech.pointers.index(name)
            return (f"_value({array}[{k}, _j], {array}[{k + 1}, _j], {array}[{k + 2}, _j], "
                    f"{args})")
        if name in self.fields:
            if self.cache:
                self.used.setdefault(name, self.fields[name])
                return f"_c_{name}"
            return f"_D_{self.mech.name}[{self.fields[name]}, _j]"
        self.locals.add(name)
        return f"_l_{name}"

    def store(self, name: str) -> str:
        name = _name(name)
        if name in self.args:
            return self.args[name]
        if name in _SPECIAL or (name == "weight" and not self.weight) \
                or (name == "flag" and self.weight) or name in self.mech.pointers:
            raise CodegenError(f"mechanism {self.mech.name}: cannot assign {name!r}")
        if name in self.fields:
            self.written.setdefault(name, self.fields[name])
        return self.load(name)

    def loads(self, pad: str) -> str:
        """Copy every field the block uses into its local (from the per-cell views)."""
        m = self.mech.name
        return "".join(f"{pad}_c_{n} = _fv_{m}_{n}[_j]\n" for n in self.used)

    def stores(self, pad: str) -> str:
        """Copy every field the block wrote back from its local."""
        m = self.mech.name
        return "".join(f"{pad}_fv_{m}_{n}[_j] = _c_{n}\n" for n in self.written)


class MechanismCode:
    """Numba source pieces for one mechanism.

    Parameters
    ----------
    mech : Mechanism
    tables : bool
        Use TABLE lookups (NEURON's ``usetable = 1``) where the description has a TABLE.
    vector_exp : bool
        Evaluate the cnexp exps with :func:`.libm_exp.exp_fast` (vectorized, the C
        library's bits where :func:`.libm_exp.matches_libm`) when every argument of the
        pass takes glibc's common path; otherwise with the module's ``_hoc_exp``
        (:func:`hoc_exp_source`). False: one call of ``exp`` at a time.
    kept : dict, optional
        Ions the engine keeps per node (:func:`.ions.kept_per_node`: name -> charge):
        this mechanism's copies of their variables are loaded from and stored to the
        node's array ``_I_<ion>`` (:data:`.ions.ION_ROWS`).
    peers : sequence of str, optional
        The names of the module's mechanisms in its order, the targets a POINTER can
        read (``_value``'s arrays); needed where the mechanism reads a POINTER.
    """

    def __init__(self, mech: Mechanism, *, tables: bool = True, vector_exp: bool = False,
                 kept: dict | None = None, peers=None):
        self.mech = mech
        self.peers = tuple(peers) if peers is not None else (mech.name,)
        #: the POINTERs the blocks read (``_PT_<m>`` holds their targets)
        self.pointers = pointers_read(mech)
        self.tables = tables
        self.vector_exp = vector_exp
        self._n_selects = 0
        self._functions = {f.name: f for f in mech.functions}
        #: FUNCTIONs that draw random numbers: they take the stream ``_RS`` last
        self._drawing = drawing_functions(mech)
        self._procedures = {p.name: p for p in mech.procedures}
        self._counter = 0
        self.ion_io = ion_io(mech, kept or {})
        #: whether the blocks draw from the random-number stream (take ``_RS``)
        self.stream = bool(stream_blocks(mech))

    # ---- module-level functions -------------------------------------------------------
    @property
    def table_procedures(self) -> list:
        return [p for p in self.mech.procedures if p.table is not None]

    @property
    def tabled(self) -> list:
        """The PROCEDUREs, then the FUNCTIONs, with a TABLE: the order of the tables."""
        return self.table_procedures + [f for f in self.mech.functions
                                        if f.table is not None]

    def table_args(self) -> list[str]:
        """Names of the kernel arguments holding this mechanism's tables."""
        if not self.tables:
            return []
        return [f"_TB_{self.mech.name}_{p.name}" for p in self.tabled]

    def module_functions(self) -> str:
        """FUNCTIONs, TABLE procedures (exact, builder, lookup), INITIAL and NET_RECEIVE."""
        m = self.mech.name
        out = []
        for f in self.mech.functions:
            scope = _Scope(self.mech, fields=False, tables=None,
                           args={a: f"_a_{a}" for a in f.args})
            scope.stream = f.name in self._drawing
            body = self._block(f.body, scope, 1, f"FUNCTION {f.name}")
            args = "".join(f"_a_{a}, " for a in f.args)
            rs = ", _RS" if scope.stream else ""
            out.append(f"@njit(cache=True, error_model='numpy')\n"
                       f"def _F_{m}_{f.name}({args}_celsius{rs}):\n{body}"
                       f"    return _l_{f.name}\n")
            if f.table is not None:
                out.append(self._function_table(f))
        for p in self.table_procedures:
            out.append(self._table_functions(p))
        out.append(self._initial_function())
        if self.mech.net_receive:
            scope = _Scope(self.mech, fields=True, weight=True, tables=None)
            scope.sends = "receive"
            scope.stream = self.receive_stream
            rs = "_RS, " if scope.stream else ""
            fw = "_FW, " if self.receive_netcons else ""
            body = self._block(self.mech.net_receive, scope, 1, "NET_RECEIVE")
            out.append(f"@njit(cache=True, error_model='numpy')\n"
                       f"def _net_receive_{m}(_D_{m}, _j, _w, _t, _dt, _celsius, _flag, {rs}"
                       f"{fw}_S):\n"
                       f"    _ns = 0\n{body}    return _ns\n")
        if self.mech.net_receive_initial:
            scope = _Scope(self.mech, fields=True, weight=True, tables=None)
            body = self._block(self.mech.net_receive_initial, scope, 1,
                               "NET_RECEIVE INITIAL")
            out.append(f"@njit(cache=True, error_model='numpy')\n"
                       f"def _net_init_{m}(_D_{m}, _j, _w, _t, _dt, _celsius):\n{body}")
        return "\n\n".join(out)

    @property
    def initial_sends(self) -> int:
        """``net_send`` statements in INITIAL: with any, ``_initial_<m>`` takes a last
        argument ``_S`` (rows ``instance, te, flag``, this many per instance) and returns
        the rows written."""
        return count_net_sends(self.mech.initial) if self.mech.kind != "density" else 0

    @property
    def receive_sends(self) -> int:
        """``net_send``, ``net_event`` and ``watch_above`` statements in NET_RECEIVE: rows
        of ``_net_receive_<m>``'s ``_S`` (``te, flag, kind``; kind 0 a self-event, 1 a
        spike of the instance, 2 a WATCH, its threshold in place of ``te``)."""
        return count_net_sends(self.mech.net_receive, ("net_send", "net_event",
                                                       "watch_above"))

    @property
    def receive_watches(self) -> int:
        """``watch_above`` statements in NET_RECEIVE: the most WATCHes one instance has
        active at once."""
        return count_net_sends(self.mech.net_receive, ("watch_above",))

    @property
    def receive_netcons(self) -> bool:
        """Whether NET_RECEIVE loops over the NetCons of its instance (FOR_NETCONS):
        ``_net_receive_<m>`` then takes their weight vectors ``_FW`` before ``_S``."""
        return uses_netcons(self.mech.net_receive)

    @property
    def receive_weight_writes(self) -> bool:
        """Whether NET_RECEIVE (or its INITIAL) assigns ``weight``, entry 0 of the
        NetCon's weight vector."""
        return any(isinstance(n, ast.Name) and n.id == "weight"
                   and isinstance(n.ctx, ast.Store)
                   for text in (self.mech.net_receive, self.mech.net_receive_initial)
                   for n in _nodes(text))

    @property
    def receive_events(self) -> int:
        """``net_event`` statements in NET_RECEIVE (the instance is a spike source)."""
        return count_net_sends(self.mech.net_receive, ("net_event",))

    @property
    def receive_stream(self) -> bool:
        """Whether NET_RECEIVE draws random numbers: ``_net_receive_<m>`` then takes the
        stream ``_RS`` after ``_flag``."""
        return "net_receive" in stream_blocks(self.mech)

    def _function_table(self, f) -> str:
        """``_build_<m>_<f>`` (the exact values, one row) and ``_LF_<m>_<f>`` (nocmodl's
        ``_n_<f>``: NaN passes, the ends clamp, else linear interpolation)."""
        m, tb = self.mech.name, f.table
        n, tmin = int(tb.n), float(tb.start)
        dx = (float(tb.stop) - tmin) / float(n)
        return (
            f"@njit(cache=True, error_model='numpy')\n"
            f"def _build_{m}_{f.name}(_celsius, _dt):\n"
            f"    _T = np.empty((1, {n + 1}))\n"
            f"    _x = {tmin!r}\n"
            f"    for _i in range({n + 1}):\n"
            f"        _T[0, _i] = _F_{m}_{f.name}(_x, _celsius)\n"
            f"        _x += {dx!r}\n"
            f"    return _T\n\n\n"
            f"@njit(cache=True, error_model='numpy')\n"
            f"def _LF_{m}_{f.name}(_lv, _T):\n"
            f"    _xi = {1.0 / dx!r}*(_lv - ({tmin!r}))\n"
            f"    if math.isnan(_xi):\n"
            f"        return _xi\n"
            f"    if _xi <= 0.0:\n"
            f"        return _T[0, 0]\n"
            f"    if _xi >= {float(n)!r}:\n"
            f"        return _T[0, {n}]\n"
            f"    _i = int(_xi)\n"
            f"    return _T[0, _i] + (_xi - float(_i))*(_T[0, _i + 1] - _T[0, _i])\n")

    def _table_functions(self, p) -> str:
        m, tb = self.mech.name, p.table
        # the variables it reads of the first instance (Table.reads) are arguments
        scope = _Scope(self.mech, fields=False, tables=None,
                       args={a: f"_a_{a}" for a in p.args + tb.reads})
        body = self._block(p.body, scope, 1, f"PROCEDURE {p.name}")
        outs = ", ".join(f"_l_{o}" for o in tb.outputs + tb.side) + ","
        args = ", ".join(f"_a_{a}" for a in p.args + tb.reads)
        reads = "".join(f", _a_{a}" for a in tb.reads)
        n, k = int(tb.n), len(tb.outputs)
        rows_built = k + len(tb.side)
        tmin = float(tb.start)
        dx = (float(tb.stop) - tmin) / float(n)
        mfac = 1.0 / dx
        rows = lambda i: ", ".join(f"_T[{o}, {i}]" for o in range(k)) + ","
        interp = ", ".join(f"_T[{o}, _i] + _th*(_T[{o}, _i + 1] - _T[{o}, _i])"
                           for o in range(k)) + ","
        return (
            f"@njit(cache=True, error_model='numpy')\n"
            f"def _P_{m}_{p.name}({args}, _celsius, _dt):\n{body}    return ({outs})\n\n\n"
            f"@njit(cache=True, error_model='numpy')\n"
            f"def _build_{m}_{p.name}(_celsius, _dt{reads}):\n"
            f"    _T = np.empty(({rows_built}, {n + 1}))\n"
            f"    _x = {tmin!r}\n"
            f"    for _i in range({n + 1}):\n"
            f"        _r = _P_{m}_{p.name}(_x{reads}, _celsius, _dt)\n"
            + "".join(f"        _T[{o}, _i] = _r[{o}]\n" for o in range(rows_built))
            + f"        _x += {dx!r}\n"
            f"    return _T\n\n\n"
            f"@njit(cache=True, error_model='numpy')\n"
            f"def _L_{m}_{p.name}(_lv, _T):\n"
            f"    _xi = {mfac!r}*(_lv - ({tmin!r}))\n"
            f"    if math.isnan(_xi):\n"
            f"        return ({', '.join(['_xi'] * k)},)\n"
            f"    if _xi <= 0.0:\n"
            f"        return ({rows(0)})\n"
            f"    if _xi >= {float(n)!r}:\n"
            f"        return ({rows(n)})\n"
            f"    _i = int(_xi)\n"
            f"    _th = _xi - float(_i)\n"
            f"    return ({interp})\n")

    def pointer_reach(self, array: str):
        """``_Scope.pointer`` for blocks that read the POINTERs' targets from ``array``
        (None where the mechanism reads none)."""
        if not self.pointers:
            return None
        return array, ", ".join(["v"] + [f"_D_{p}" for p in self.peers])

    def initial_pointer_args(self) -> list[str]:
        """The last arguments of ``_initial_<m>`` where it reads POINTERs: ``_PT_<m>``
        and the other mechanisms' ``_D_<name>`` (in the module's order)."""
        if not self.pointers:
            return []
        m = self.mech.name
        return [f"_PT_{m}"] + [f"_D_{p}" for p in self.peers if p != m]

    def ion_args(self) -> list[str]:
        """Names of the kernel arguments holding the per-node arrays of the ions kept per
        node that this mechanism uses."""
        return list(dict.fromkeys(f"_I_{ion}" for ion, *_ in self.ion_io.loads
                                  + self.ion_io.adds + self.ion_io.stores))

    def _initial_function(self) -> str:
        m, io = self.mech.name, self.ion_io
        scope = _Scope(self.mech, fields=True, tables=self.tables)
        scope.stream = True
        scope.pointer = self.pointer_reach(f"_PT_{m}")
        sends = self.initial_sends
        scope.sends = "initial" if sends else None
        body = self._block(self.mech.initial or "pass", scope, 2, "INITIAL")
        tabs = "".join(f", {a}" for a in self.table_args() + self.ion_args())
        tabs += ", _RS" if self.stream else ""
        tabs += ", _S" if sends else ""
        tabs += "".join(f", {a}" for a in self.initial_pointer_args())
        pad = "        "
        loads = "".join(f"{pad}_D_{m}[{k}, _j] = _I_{ion}[{row}, _n]\n"
                        for ion, k, row in io.loads)
        stores = "".join(f"{pad}_I_{ion}[{row}, _n] = _D_{m}[{k}, _j]\n"
                         for ion, k, row in io.stores)
        # nrn_wrote_conc: the reversal potential from the concentrations just written
        stores += "".join(f"{pad}if _I_{ion}[5, _n] != 0.0:\n"
                          f"{pad}    _I_{ion}[0, _n] = _nernst(_I_{ion}[1, _n], _I_{ion}[2, _n], "
                          f"{z!r}, _celsius)\n" for ion, z in io.wrote_conc)
        return (f"@njit(cache=True, error_model='numpy')\n"
                f"def _initial_{m}(_D_{m}, _N_{m}, v, _t, _dt, _celsius{tabs}):\n"
                + ("    _ns = 0\n" if sends else "")
                + f"    for _j in range(_N_{m}.size):\n"
                f"        _v = v[_N_{m}[_j]]\n"
                + (f"        _n = _N_{m}[_j]\n" if loads or stores else "")
                + loads + body + stores + ("    return _ns\n" if sends else ""))

    # ---- loops inlined in the cell step -----------------------------------------------
    # The loops run over the instances of cells ``[c0, c1)`` through 1-D views (``_fv_<m>_<f>``
    # for field f, ``_nv_<m>`` for the nodes, ...) indexed from 0, the form LLVM
    # vectorizes; :meth:`prelude` makes the views once per cell and call (not per step:
    # a view costs an atomic reference count, which threads would contend for). Values
    # are copied to locals (``_c_<f>``) and written back once.
    def prelude(self, indent: int) -> str:
        """The views of the instances of this mechanism on cells ``[c0, c1)``."""
        m, pad = self.mech.name, "    " * indent
        r = f"_o0_{m}:_o1_{m}"
        src = (f"{pad}_o0_{m} = _O_{m}[c0]\n{pad}_o1_{m} = _O_{m}[c1]\n"
               f"{pad}_n_{m} = _o1_{m} - _o0_{m}\n"
               f"{pad}_nv_{m} = _N_{m}[{r}]\n{pad}_sv_{m} = _S_{m}[{r}]\n"
               f"{pad}_rr_{m} = _R_{m}[0, {r}]\n{pad}_rg_{m} = _R_{m}[1, {r}]\n")
        for g in range(len(self.mech.cnexp)):
            src += (f"{pad}_xv_{m}_{g} = _X_{m}[{g}, {r}]\n"
                    f"{pad}_bv_{m}_{g} = _B_{m}[{g}, {r}]\n")
        for k, f in enumerate(self.mech.field_names):
            src += f"{pad}_fv_{m}_{f} = _D_{m}[{k}, {r}]\n"
        if self.pointers:
            src += f"{pad}_pv_{m} = _PT_{m}[:, {r}]\n"
        if self.mech.diffusion:
            src += f"{pad}_lpv_{m} = _LP_{m}[{r}]\n"
            src += "".join(f"{pad}_{row}_{m} = _LC_{m}[{k}, {r}]\n"
                           for k, row in enumerate(DIFFUSION_ROWS))
        return src

    def current_loop(self, indent: int) -> str:
        """Add this mechanism's current and conductance to rhs and d for cell ``c``:
        one loop computes them (at v + 0.001 and v) into scratch, a second adds them in
        instance order."""
        m, mech = self.mech.name, self.mech
        pad = "    " * indent
        pad2 = pad + "    "
        scope = _Scope(mech, fields=True, tables=self.tables)
        scope.cache = scope.stream = True
        scope.pointer = self.pointer_reach(f"_pv_{m}")

        def evaluation(target: str) -> str:
            code = self._block(mech.breakpoint, scope, indent + 1, "BREAKPOINT")
            code += f"{pad2}{target} = 0.0\n"
            for name in mech.currents:
                code += f"{pad2}{target} = {target} + {scope.load(name)}\n"
            return code

        body = (f"{pad2}_v = v[_nv_{m}[_j]] + 0.001\n"
                + evaluation("_cg")
                + f"{pad2}_v = v[_nv_{m}[_j]]\n"
                + evaluation("_cr"))
        body = scope.loads(pad2) + body + scope.stores(pad2)
        body += f"{pad2}_cg = (_cg - _cr)/0.001\n"
        if mech.kind == "point":
            body += (f"{pad2}_cg = _cg*_sv_{m}[_j]\n"
                     f"{pad2}_cr = _cr*_sv_{m}[_j]\n")
        body += f"{pad2}_rr_{m}[_j] = _cr\n{pad2}_rg_{m}[_j] = _cg\n"
        src = (f"{pad}for _j in range(_n_{m}):\n" + body
               + f"{pad}for _j in range(_n_{m}):\n"
               + f"{pad2}_n = _nv_{m}[_j]\n")
        if mech.electrode:
            src += f"{pad2}rhs[_n] += _rr_{m}[_j]\n{pad2}d[_n] -= _rg_{m}[_j]\n"
        else:
            src += f"{pad2}rhs[_n] -= _rr_{m}[_j]\n{pad2}d[_n] += _rg_{m}[_j]\n"
        for ion, k, _ in self.ion_io.adds:
            value = f"_fv_{m}_{mech.field_names[k]}[_j]"
            if mech.kind == "point":      # nocmodl: _ion_ica += ica * 1.e2/(_nd_area)
                value = f"(({value} * 100.0) / _I_{ion}[6, _n])"
            src += f"{pad2}_I_{ion}[3, _n] += {value}\n"
        return self._ion_loads(indent) + src

    def _ion_loads(self, indent: int) -> str:
        """Load the copies of the kept ions' variables from the nodes (nocmodl's
        ``ena = _ion_ena`` at the start of a block)."""
        if not self.ion_io.loads:
            return ""
        m, pad = self.mech.name, "    " * indent
        return (f"{pad}for _j in range(_n_{m}):\n{pad}    _n = _nv_{m}[_j]\n"
                + "".join(f"{pad}    _fv_{m}_{self.mech.field_names[k]}[_j] = "
                          f"_I_{ion}[{row}, _n]\n" for ion, k, row in self.ion_io.loads))

    def _ion_stores(self, indent: int) -> str:
        """Store the concentrations this mechanism writes into the nodes."""
        if not self.ion_io.stores:
            return ""
        m, pad = self.mech.name, "    " * indent
        return (f"{pad}for _j in range(_n_{m}):\n{pad}    _n = _nv_{m}[_j]\n"
                + "".join(f"{pad}    _I_{ion}[{row}, _n] = "
                          f"_fv_{m}_{self.mech.field_names[k]}[_j]\n"
                          for ion, k, row in self.ion_io.stores))

    def has_state_loop(self) -> bool:
        return bool(self.mech.state or self.mech.cnexp or self.mech.after_solve)

    def state_loop(self, indent: int) -> str:
        """Advance this mechanism's states with the new v for cell ``c``."""
        m, mech = self.mech.name, self.mech
        pad = "    " * indent
        pad2 = pad + "    "

        def loop(text: str, where: str) -> str:
            scope = _Scope(mech, fields=True, tables=self.tables)
            scope.cache = scope.stream = True
            scope.pointer = self.pointer_reach(f"_pv_{m}")
            body = self._block(text, scope, indent + 1, where)
            if where == "state" and self.vector_exp and mech.cnexp:
                # v gathered first into the cnexp pass's first array (written again
                # there): a loop that reads v through _nv stays scalar
                return (f"{pad}for _j in range(_n_{m}):\n"
                        f"{pad2}_xv_{m}_0[_j] = v[_nv_{m}[_j]]\n"
                        f"{pad}for _j in range(_n_{m}):\n{pad2}_v = _xv_{m}_0[_j]\n"
                        + scope.loads(pad2) + body + scope.stores(pad2))
            return (f"{pad}for _j in range(_n_{m}):\n{pad2}_v = v[_nv_{m}[_j]]\n"
                    + scope.loads(pad2) + body + scope.stores(pad2))

        src = self._ion_loads(indent)
        src += loop(mech.state, "state") if mech.state else ""
        if mech.cnexp:
            # y' = b + a·y by cnexp, y += (1 - exp(dt·a))·(-(b)/(a) - y), in passes: the
            # divisions (vectorized), the exps (the C library's, one at a time, or the
            # vectorized copy), and the updates (vectorized). The same operations as one
            # expression: the same bits.
            scope = _Scope(mech, fields=True, tables=self.tables)
            scope.cache = True
            scope.pointer = self.pointer_reach(f"_pv_{m}")
            body = ""
            for g, eq in enumerate(mech.cnexp):
                a = self._expr(_parse_expr(eq.a, mech, "cnexp"), scope)
                b = self._expr(_parse_expr(eq.b, mech, "cnexp"), scope)
                body += (f"{pad2}_k{g} = {a}\n"
                         f"{pad2}_xv_{m}_{g}[_j] = _dt*_k{g}\n"
                         f"{pad2}_bv_{m}_{g}[_j] = -{b}/_k{g}\n")
            n_eq = len(mech.cnexp)
            src += (f"{pad}for _j in range(_n_{m}):\n{pad2}_v = v[_nv_{m}[_j]]\n"
                    + scope.loads(pad2) + body)
            scalar = (f"for _j in range(_n_{m}):\n"
                      + "".join(f"{pad2}_xv_{m}_{g}[_j] = _hoc_exp(_xv_{m}_{g}[_j])\n"
                                for g in range(n_eq)))
            if self.vector_exp:
                # glibc's common path alone where every argument takes it (the usual
                # case; shorter than hoc_Exp whole), else the module's _hoc_exp
                src += f"{pad}_ok = True\n{pad}for _j in range(_n_{m}):\n"
                src += "".join(f"{pad2}_ok &= _exp_in_range(_xv_{m}_{g}[_j])\n"
                               for g in range(n_eq))
                src += f"{pad}if _ok:\n{pad2}for _j in range(_n_{m}):\n"
                src += "".join(f"{pad2}    _xv_{m}_{g}[_j] = _exp_fast(_xv_{m}_{g}[_j])\n"
                               for g in range(n_eq))
                src += f"{pad}else:\n{pad2}" + scalar.replace("\n    ", "\n        ")
            else:
                src += pad + scalar
            # the states' updates in one loop (each reads only its own arrays)
            src += f"{pad}for _j in range(_n_{m}):\n"
            for g, eq in enumerate(mech.cnexp):
                y = f"_fv_{m}_{_name(eq.state)}"
                src += (f"{pad2}{y}[_j] = {y}[_j] + (1.0 - _xv_{m}_{g}[_j])*"
                        f"(_bv_{m}_{g}[_j] - {y}[_j])\n")
        if mech.after_solve:
            src += loop(mech.after_solve, "after_solve")
        return src + self._ion_stores(indent)

    def diffusion_loop(self, indent: int) -> str:
        """NEURON's longitudinal diffusion (ldifus.cpp ``stagger``) of each
        :class:`~.description.Diffusion` state over the instances of cells ``[c0, c1)``,
        one state after the other: the coefficient and volume of every instance, the
        tree's backward-Euler matrix (``_LP_<m>``: each instance's parent instance, -1 at a
        root; rows ``af``, ``bf`` of ``_LC_<m>``, :data:`DIFFUSION_ROWS`), elimination
        from the last instance to the first and substitution back, as
        ``nrn_tree_solve``."""
        m, pad = self.mech.name, "    " * indent
        p2, p3 = pad + "    ", pad + "        "
        src = ""
        for dif in self.mech.diffusion:
            scope = _Scope(self.mech, fields=True, tables=self.tables)
            scope.cache = True
            body = self._block(f"dif__c = {dif.coefficient}\ndif__w = {dif.volume}", scope,
                               indent + 1, "diffusion")
            y = f"_fv_{m}_{_name(dif.state)}"
            src += (f"{pad}for _j in range(_n_{m}):\n{p2}_v = v[_nv_{m}[_j]]\n"
                    + scope.loads(p2) + body
                    + f"{p2}_ldc_{m}[_j] = _l_dif__c\n{p2}_lvol_{m}[_j] = _l_dif__w\n"
                    f"{pad}for _j in range(_n_{m}):\n"
                    f"{p2}_p = _lpv_{m}[_j]\n"
                    f"{p2}_ldd_{m}[_j] = 0.0\n"
                    f"{p2}if _p >= 0:\n"
                    f"{p3}_p = _p - _o0_{m}\n"
                    f"{p3}_dcm = (_ldc_{m}[_j] + _ldc_{m}[_p])/2.0\n"
                    f"{p3}_lda_{m}[_j] = -_laf_{m}[_j]*_dcm/_lvol_{m}[_p]\n"
                    f"{p3}_ldb_{m}[_j] = -_lbf_{m}[_j]*_dcm/_lvol_{m}[_j]\n"
                    f"{pad}for _j in range(_n_{m}):\n"
                    f"{p2}_p = _lpv_{m}[_j]\n"
                    f"{p2}_ldd_{m}[_j] += 1.0/_dt\n"
                    f"{p2}_ldr_{m}[_j] = {y}[_j]/_dt\n"
                    f"{p2}if _p >= 0:\n"
                    f"{p3}_p = _p - _o0_{m}\n"
                    f"{p3}_ldd_{m}[_j] -= _ldb_{m}[_j]\n"
                    f"{p3}_ldd_{m}[_p] -= _lda_{m}[_j]\n"
                    f"{pad}for _j in range(_n_{m} - 1, 0, -1):\n"
                    f"{p2}_p = _lpv_{m}[_j]\n"
                    f"{p2}if _p >= 0:\n"
                    f"{p3}_p = _p - _o0_{m}\n"
                    f"{p3}_pp = _lda_{m}[_j]/_ldd_{m}[_j]\n"
                    f"{p3}_ldd_{m}[_p] -= _pp*_ldb_{m}[_j]\n"
                    f"{p3}_ldr_{m}[_p] -= _pp*_ldr_{m}[_j]\n"
                    f"{pad}for _j in range(_n_{m}):\n"
                    f"{p2}_p = _lpv_{m}[_j]\n"
                    f"{p2}if _p >= 0:\n"
                    f"{p3}_ldr_{m}[_j] -= _ldb_{m}[_j]*_ldr_{m}[_p - _o0_{m}]\n"
                    f"{p2}_ldr_{m}[_j] /= _ldd_{m}[_j]\n"
                    f"{p2}{y}[_j] = _ldr_{m}[_j]\n")
        return src

    # ---- statements and expressions ---------------------------------------------------
    def _block(self, text: str, scope: _Scope, indent: int, where: str) -> str:
        try:
            tree = ast.parse(text.strip() or "pass")
        except SyntaxError as err:
            raise CodegenError(f"mechanism {self.mech.name}, {where}: {err}") from None
        return self._statements(tree.body, scope, indent, where)

    def _statements(self, body, scope, indent, where) -> str:
        pad = "    " * indent
        out = []
        for st in body:
            if isinstance(st, ast.Assign):
                if len(st.targets) != 1 or not isinstance(st.targets[0], ast.Name):
                    self._bad(st, where, "assign to one name at a time")
                value = self._expr(st.value, scope)
                out.append(f"{pad}{scope.store(st.targets[0].id)} = {value}\n")
            elif isinstance(st, ast.If) and self.vector_exp and _selectable(st):
                out.append(self._select(st, scope, pad))
            elif isinstance(st, ast.If):
                out.append(f"{pad}if {self._expr(st.test, scope)}:\n")
                out.append(self._statements(st.body, scope, indent + 1, where))
                if st.orelse:
                    out.append(f"{pad}else:\n")
                    out.append(self._statements(st.orelse, scope, indent + 1, where))
            elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) \
                    and isinstance(st.value.func, ast.Name) and st.value.func.id == "net_send":
                out.append(self._net_send(st.value, scope, pad, where))
            elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) \
                    and isinstance(st.value.func, ast.Name) \
                    and st.value.func.id == "net_event":
                out.append(self._net_event(st.value, scope, pad, where))
            elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) \
                    and isinstance(st.value.func, ast.Name) \
                    and st.value.func.id == "watch_above":
                out.append(self._watch_above(st.value, scope, pad, where))
            elif isinstance(st, ast.For) and scope.sends == "receive":
                out.append(self._for_netcons(st, scope, indent, where))
            elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) \
                    and isinstance(st.value.func, ast.Name) and st.value.func.id == SEED_CALL:
                out.append(self._set_seed(st.value, scope, pad, where))
            elif isinstance(st, ast.While) and not st.orelse:
                out.append(f"{pad}while {self._expr(st.test, scope)}:\n")
                out.append(self._statements(st.body, scope, indent + 1, where))
            elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
                out.append(self._procedure_call(st.value, scope, indent, where))
            elif isinstance(st, ast.Pass):
                out.append(f"{pad}pass\n")
            else:
                self._bad(st, where, "only assignments, if/else, while and procedure calls"
                          " (and `for a, b in netcons():` in NET_RECEIVE)")
        return "".join(out) or f"{pad}pass\n"

    def _select(self, st: ast.If, scope, pad: str) -> str:
        """An if/else that only picks values (:func:`_selectable`) as both branches'
        values, then the test, then one select per name: the same values, and a loop body
        without a branch, which LLVM can vectorize (vtrap's guard in hh's rates)."""
        self._n_selects += 1
        k = self._n_selects
        out = []
        picked = {}
        for side, branch in (("a", st.body), ("b", st.orelse)):
            for i, a in enumerate(branch):
                temp = f"_s{k}{side}{i}"
                out.append(f"{pad}{temp} = {self._expr(a.value, scope)}\n")
                picked.setdefault(_name(a.targets[0].id), {})[side] = temp
        out.append(f"{pad}_s{k} = {self._expr(st.test, scope)}\n")
        for name, temps in picked.items():
            out.append(f"{pad}{scope.store(name)} = {temps['a']} if _s{k} else {temps['b']}\n")
        return "".join(out)

    def _net_send(self, call, scope, pad: str, where: str) -> str:
        """``net_send(delay, flag)``: a row of ``_S`` (see the module docstring)."""
        if scope.sends is None:
            self._bad(call, where, "net_send is allowed in NET_RECEIVE and in a point "
                      "process's INITIAL only")
        if len(call.args) != 2 or call.keywords:
            self._bad(call, where, "net_send takes 2 arguments (delay [ms], flag)")
        te, flag = self._expr(_after_t(call.args[0]), scope), self._expr(call.args[1], scope)
        row = ["_j", te, flag] if scope.sends == "initial" else [te, flag, "0.0"]
        return ("".join(f"{pad}_S[_ns, {k}] = {x}\n" for k, x in enumerate(row))
                + f"{pad}_ns += 1\n")

    def _net_event(self, call, scope, pad: str, where: str) -> str:
        """``net_event(te)``: the row ``te, 0, 1`` of ``_S`` (see the module docstring)."""
        if scope.sends != "receive":
            self._bad(call, where, "net_event is allowed in NET_RECEIVE only")
        if len(call.args) != 1 or call.keywords:
            self._bad(call, where, "net_event takes 1 argument (the spike time [ms])")
        te = self._expr(call.args[0], scope)
        return (f"{pad}_S[_ns, 0] = {te}\n{pad}_S[_ns, 1] = 0.0\n{pad}_S[_ns, 2] = 1.0\n"
                f"{pad}_ns += 1\n")

    def _watch_above(self, call, scope, pad: str, where: str) -> str:
        """``watch_above(x, flag)``: the row ``x, flag, 2`` of ``_S``."""
        if scope.sends != "receive" or scope.looping:
            self._bad(call, where, "watch_above is allowed in NET_RECEIVE only, outside "
                      "its netcons() loop")
        if len(call.args) != 2 or call.keywords:
            self._bad(call, where, "watch_above takes 2 arguments (threshold [mV], flag)")
        x, flag = self._expr(call.args[0], scope), self._expr(call.args[1], scope)
        return (f"{pad}_S[_ns, 0] = {x}\n{pad}_S[_ns, 1] = {flag}\n{pad}_S[_ns, 2] = 2.0\n"
                f"{pad}_ns += 1\n")

    def _for_netcons(self, st, scope, indent: int, where: str) -> str:
        """``for a, b in netcons():``: a loop over the rows of ``_FW``."""
        names = st.target.elts if isinstance(st.target, ast.Tuple) else [st.target]
        if scope.sends != "receive" or scope.looping \
                or st.orelse or not isinstance(st.iter, ast.Call) \
                or not isinstance(st.iter.func, ast.Name) or st.iter.func.id != "netcons" \
                or st.iter.args or st.iter.keywords \
                or not all(isinstance(n, ast.Name) for n in names):
            self._bad(st, where, "the only loop is `for a, b in netcons():`, in NET_RECEIVE "
                      "and not nested")
        if len(names) > self.mech.weight_size:
            self._bad(st, where, f"netcons() gives {self.mech.weight_size} entries per "
                      f"NetCon, not {len(names)}")
        self._counter += 1
        k = f"_fk{self._counter}"
        bound = {_name(n.id): f"_FW[{k}, {i}]" for i, n in enumerate(names)}
        before = {n: scope.args[n] for n in bound if n in scope.args}
        scope.args.update(bound)
        scope.looping = True
        try:
            body = self._statements(st.body, scope, indent + 1, where)
        finally:
            scope.looping = False
            for n in bound:
                del scope.args[n]
            scope.args.update(before)
        pad = "    " * indent
        return f"{pad}for {k} in range(_FW.shape[0]):\n" + body

    def _set_seed(self, call, scope, pad: str, where: str) -> str:
        """``set_seed(x)``: the stream's state becomes ``(uint32) x``."""
        self._stream_reach(call, scope, where)
        if len(call.args) != 1 or call.keywords:
            self._bad(call, where, "set_seed takes 1 argument")
        return f"{pad}_rand_set_seed(_RS, {self._expr(call.args[0], scope)})\n"

    def _stream_reach(self, node, scope, where):
        if not scope.stream:
            self._bad(node, where, "random numbers are drawn in INITIAL, the BREAKPOINT, the "
                      "state update, NET_RECEIVE and the FUNCTIONs they call only")

    def _procedure_call(self, call, scope, indent, where) -> str:
        pad = "    " * indent
        if not isinstance(call.func, ast.Name) or call.func.id not in self._procedures:
            self._bad(call, where, f"unknown procedure; procedures: "
                      f"{', '.join(self._procedures) or '(none)'}")
        p = self._procedures[call.func.id]
        if len(call.args) != len(p.args) or call.keywords:
            self._bad(call, where, f"{p.name} takes {len(p.args)} argument(s)")
        args = [self._expr(a, scope) for a in call.args]
        if p.table is not None and self.tables:
            self._counter += 1
            return self._inline_lookup(p, args[0], scope, pad,
                                       f"_TB_{self.mech.name}_{p.name}")
        # without its table a TABLE procedure is inlined like any other
        self._counter += 1
        inner = _Scope(self.mech, fields=bool(scope.fields), weight=scope.weight,
                       tables=scope.tables,
                       args={a: f"_p{self._counter}_{a}" for a in p.args})
        inner.cache, inner.used, inner.written = scope.cache, scope.used, scope.written
        inner.stream, inner.pointer = scope.stream, scope.pointer
        src = "".join(f"{pad}_p{self._counter}_{a} = {v}\n" for a, v in zip(p.args, args))
        body = ast.parse(p.body.strip() or "pass").body
        return src + self._statements(body, inner, indent, f"PROCEDURE {p.name}")

    def _inline_lookup(self, p, arg: str, scope, pad: str, table: str) -> str:
        """NEURON's table lookup (nocmodl's ``_n_<proc>``), inlined at the call."""
        tb = p.table
        n, tmin = int(tb.n), float(tb.start)
        mfac = 1.0 / ((float(tb.stop) - tmin) / float(n))
        xi, i, th = (f"_{s}{self._counter}" for s in ("xi", "i", "th"))
        outs = [scope.store(o) for o in tb.outputs]
        src = f"{pad}{xi} = {mfac!r}*({arg} - ({tmin!r}))\n"
        src += f"{pad}if math.isnan({xi}):\n"
        src += "".join(f"{pad}    {o} = {xi}\n" for o in outs)
        src += f"{pad}elif {xi} <= 0.0:\n"
        src += "".join(f"{pad}    {o} = {table}[{k}, 0]\n" for k, o in enumerate(outs))
        src += f"{pad}elif {xi} >= {float(n)!r}:\n"
        src += "".join(f"{pad}    {o} = {table}[{k}, {n}]\n" for k, o in enumerate(outs))
        src += f"{pad}else:\n{pad}    {i} = int({xi})\n{pad}    {th} = {xi} - float({i})\n"
        src += "".join(f"{pad}    {o} = {table}[{k}, {i}] + {th}*({table}[{k}, {i} + 1] - "
                       f"{table}[{k}, {i}])\n" for k, o in enumerate(outs))
        return src

    def _expr(self, node, scope) -> str:
        e = lambda n: self._expr(n, scope)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
                and not isinstance(node.value, bool):
            return repr(float(node.value))
        if isinstance(node, ast.Name):
            return scope.load(node.id)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return f"({e(node.left)} {_BINOPS[type(node.op)]} {e(node.right)})"
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return f"(-{e(node.operand)})"
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd):
            return e(node.operand)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return f"(not {e(node.operand)})"
        if isinstance(node, ast.BoolOp):
            op = " and " if isinstance(node.op, ast.And) else " or "
            return "(" + op.join(e(v) for v in node.values) + ")"
        if isinstance(node, ast.Compare) and len(node.ops) == 1 \
                and type(node.ops[0]) in _CMPOPS:
            return f"({e(node.left)} {_CMPOPS[type(node.ops[0])]} {e(node.comparators[0])})"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and not node.keywords:
            f = node.func.id
            args = [e(a) for a in node.args]
            if f in _INTRINSICS:
                return f"{_INTRINSICS[f]}({', '.join(args)})"
            if f in DRAWS:
                self._stream_reach(node, scope, "expression")
                if len(args) != DRAWS[f]:
                    self._bad(node, "expression", f"{f} takes {DRAWS[f]} argument(s)")
                return f"_rand_{f}({', '.join(['_RS'] + args)})"
            fn = self._functions.get(f)
            if fn is not None and fn.table is not None and scope.tables is None:
                self._bad(node, "expression", f"the TABLE of FUNCTION {f} is not "
                          "available here (FUNCTIONs and NET_RECEIVE)")
            if fn is not None and fn.table is not None and scope.tables and self.tables:
                return f"_LF_{self.mech.name}_{f}({args[0]}, _TB_{self.mech.name}_{f})"
            if fn is not None and f in self._drawing:
                self._stream_reach(node, scope, "expression")
                return f"_F_{self.mech.name}_{f}({', '.join(args + ['_celsius', '_RS'])})"
            if fn is not None:
                return f"_F_{self.mech.name}_{f}({', '.join(args + ['_celsius'])})"
        self._bad(node, "expression", "not in the statement language (arithmetic, "
                  "comparisons, exp/log/pow/fabs/sqrt and the mechanism's functions)")

    def _bad(self, node, where, why):
        raise CodegenError(f"mechanism {self.mech.name}, {where}, line "
                           f"{getattr(node, 'lineno', '?')}: {ast.dump(node)[:60]}: {why}")


_PURE_NODES = (ast.Constant, ast.Name, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare,
               ast.IfExp, ast.Call, ast.operator, ast.unaryop, ast.boolop, ast.cmpop,
               ast.expr_context)


def _pure(node: ast.expr) -> bool:
    """Arithmetic, comparisons, names and the math functions only (no FUNCTION of the
    mechanism, no random draw): an expression that can be evaluated when not needed."""
    for sub in ast.walk(node):
        if not isinstance(sub, _PURE_NODES):
            return False
        if isinstance(sub, ast.Call) and not (
                isinstance(sub.func, ast.Name) and sub.func.id in _INTRINSICS
                and sub.func.id not in DRAWS and not sub.keywords):
            return False
    return True


def _selectable(st: ast.If) -> bool:
    """``if c: x = A ... else: x = B ...``: both branches assign the same names, once
    each, with pure values (:func:`_pure`) that read none of them; then evaluating both
    and selecting gives the branch's values."""
    if not st.body or not st.orelse:
        return False
    names = []
    for branch in (st.body, st.orelse):
        if not all(isinstance(a, ast.Assign) and len(a.targets) == 1
                   and isinstance(a.targets[0], ast.Name) for a in branch):
            return False
        assigned = [_name(a.targets[0].id) for a in branch]
        if len(set(assigned)) != len(assigned):
            return False
        names.append(set(assigned))
    if names[0] != names[1] or not _pure(st.test):
        return False
    for a in st.body + st.orelse:
        if not _pure(a.value):
            return False
        called = {id(c.func) for c in ast.walk(a.value) if isinstance(c, ast.Call)}
        read = {_name(n.id) for n in ast.walk(a.value)
                if isinstance(n, ast.Name) and id(n) not in called}
        if read & names[0]:
            return False
    return True


def _after_t(delay: ast.expr) -> ast.expr:
    """``t + delay`` as nocmodl writes ``net_send(delay, ...)``: ``t + `` before the
    delay's text, so C adds ``t`` to the leftmost term of a sum or difference first
    (``net_send(a + b, 1)`` queues at ``(t + a) + b``, ``net_send(a*b, 1)`` at
    ``t + a*b``)."""
    if isinstance(delay, ast.BinOp) and isinstance(delay.op, (ast.Add, ast.Sub)):
        return ast.BinOp(_after_t(delay.left), delay.op, delay.right)
    return ast.BinOp(ast.Name("t", ast.Load()), ast.Add(), delay)


def _parse_expr(text: str, mech: Mechanism, where: str):
    try:
        return ast.parse(text.strip(), mode="eval").body
    except SyntaxError as err:
        raise CodegenError(f"mechanism {mech.name}, {where}: {err}") from None
