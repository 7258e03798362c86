"""The mechanism description: plain data plus code blocks in a small statement language.

A mechanism (NEURON's ``SUFFIX``/``POINT_PROCESS``/``ARTIFICIAL_CELL``) is described once, as
data that a code generator compiles into each backend's loops (:mod:`.codegen` for Numba;
a CUDA C++ emitter reads the same data). A translated NMODL file is meant to produce the
same kind of object.

Data
----
``parameters``, ``states``, ``assigned`` are :class:`Variable` s with NEURON's names (without
the ``_suffix``), defaults and units. Ions read (``ena``) and written (``ina``) are declared
with :class:`Ion`; an ion variable is a per-instance copy with NEURON's default, which the
engine loads from and stores to the node's ion values where the ion is kept per node
(:mod:`.ions`).

Code blocks
-----------
Each block is Python-syntax source restricted to: assignments to a single name, arithmetic
(``+ - * / **``), comparisons, ``and``/``or``/``not``, ``if``/``elif``/``else``,
``while`` (NMODL's WHILE, and FROM loops whose bounds are known only at run time), calls of
``exp`` (NEURON's ``hoc_Exp``: 0 below -700), ``log``, ``pow``, ``fabs``, ``sqrt`` (and the
C library's ``log10``, ``sin``, ``cos``, ``tan``, ``asin``, ``acos``, ``atan``, ``atan2``,
``sinh``, ``cosh``, ``tanh``, ``floor``, ``ceil``, ``fmod``), the mechanism's own functions
and procedures, and NEURON's random numbers (:mod:`.scoprand`): ``normrand(mean, sd)``,
``exprand(mean)``, ``poisrand(mean)``, ``scop_random()`` and the statement
``set_seed(x)``, which draw from (or set) the simulation's one stream, in INITIAL,
``breakpoint``, ``state`` and ``after_solve`` (and the procedures they call) only. Names resolve to the mechanism's variables,
``v`` [mV], ``t`` [ms], ``dt`` [ms], ``celsius`` [degC], ``weight`` (in ``net_receive``), or
locals. A NEURON name that is a Python keyword is written with a trailing underscore
(``del_`` for IClamp's ``del``). Each statement is evaluated left to right in double
precision, as nocmodl's C is.

- ``initial``: NEURON's INITIAL block.
- ``breakpoint``: computes the currents named in ``currents`` from ``v``; the engine
  evaluates it at ``v + 0.001`` and at ``v`` for NEURON's finite-difference conductance.
- ``state``: statements run before the ``cnexp`` updates (for example ``rates(v)``).
- ``cnexp``: one :class:`Cnexp` per state ``y' = b + a·y``, integrated as nocmodl writes
  ``cnexp``: ``y = y + (1 - exp(dt·a))·(-(b)/(a) - y)``.
- ``after_solve``: statements run with the new ``v`` after the states (NEURON's
  ``SOLVE ... METHOD after_cvode``).
- ``net_receive``: NEURON's NET_RECEIVE block. It reads and writes the event's weight
  vector: entry 0 as ``weight``, entries 1, 2, ... by the names in ``net_receive_args``
  (each NetCon keeps its own, as NEURON's ``NetCon.weight[i]``), and reads ``flag``: 0
  for a NetCon's event, the flag given to ``net_send`` for a self-event.
  The statement ``net_send(delay, flag)`` queues a self-event to the same instance at
  ``t + delay`` [ms]; it carries the weight vector of the event being received. The loop
  ``for w1, a1 in netcons():`` (NMODL's FOR_NETCONS) binds ``w1``, ``a1`` to entries
  0, 1 of the weight vector of each NetCon that targets the instance in turn (no
  ``net_send``, ``net_event``, ``watch_above`` or loop inside it). The statement
  ``watch_above(x, flag)`` (NMODL's ``WATCH (v > x) flag``) activates a condition on the
  instance's ``v`` [mV] (:mod:`hinesbatch.engine.watch`); ``x`` must not change during
  the run.
- ``net_receive_initial``: NET_RECEIVE's own INITIAL block, run for each NetCon at
  initialization with that NetCon's weight vector (``t`` = 0). Without it the entries
  after the first start at 0, as NEURON sets them.
- ``initial`` of a point process may also call ``net_send(delay, flag)``; such a
  self-event carries a weight vector of zeros.
- ``diffusion``: :class:`Diffusion` s, NEURON's LONGITUDINAL_DIFFUSION: after every
  mechanism's state update the engine moves each listed state between the neighbouring
  instances of a cell (implicitly, NEURON's ``ldifus.cpp``).

Pointers
--------
``pointers`` names NEURON's ``POINTER`` variables: read-only values that live elsewhere
(the membrane potential of a node, a variable of another mechanism's instance), set per
instance before a run (:meth:`hinesbatch.Simulation.set_pointer`). A block reads the
target's value at the moment it runs: in ``breakpoint`` the node's ``v`` of the step's
start (only the mechanism's own ``v`` is perturbed by 0.001), in ``state``, ``cnexp`` and
``after_solve`` the new ``v``, and another mechanism's variable as that mechanism's blocks
have left it (mechanisms run in type order within each phase). A pointer is not a field,
cannot be assigned and is not read by ``net_receive``.

Worked example: ExpSyn (NEURON's expsyn.mod) as a description::

    Mechanism(
        name="ExpSyn", kind="point", order=9,
        parameters=(Variable("tau", 0.1, "ms"), Variable("e", 0.0, "mV")),
        states=(Variable("g", 0.0, "uS"),),
        assigned=(Variable("i", 0.0, "nA"),),
        currents=("i",),                       # NONSPECIFIC_CURRENT i
        initial="g = 0.0",
        breakpoint="i = g*(v - e)",
        cnexp=(Cnexp("g", "0.0", "(-1.0)/tau"),),   # g' = -g/tau
        net_receive="g = g + weight",
    )

Its instances are stored as one float64 array ``fields × instances`` in
:attr:`Mechanism.fields` order (here ``tau, e, g, i``); the engine adds
``-i(v)·100/area`` to the node's right-hand side and
``(i(v + 0.001) - i(v))/0.001·100/area`` to its diagonal, and after the solve sets
``g = g + (1 - exp(dt·((-1.0)/tau)))·(-0.0/((-1.0)/tau) - g)``, as nocmodl's C does.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .ions import concentration_names
from .ions import default as ion_default

__all__ = ["Cnexp", "Diffusion", "Function", "Ion", "Mechanism", "Procedure", "Table", "Variable"]

KINDS = ("density", "point", "artificial")
#: Fields the engine can set from an instance's segment (:attr:`Mechanism.geometry`).
GEOMETRY = ("diam",)


@dataclass(frozen=True)
class Variable:
    """A named value of a mechanism: ``name`` (NEURON's, no suffix), default and unit."""

    name: str
    default: float = 0.0
    unit: str = "1"
    doc: str = ""


@dataclass(frozen=True)
class Ion:
    """An ion the mechanism uses (NEURON's ``USEION na READ ena WRITE ina``); ``valence``
    is its charge where NEURON does not know it (``VALENCE``).

    Writing a concentration (``WRITE cai``) or reading the ion's current (``READ ica``)
    makes the engine keep the ion per node, as NEURON's ion mechanism does
    (:mod:`.ions`)."""

    name: str
    read: tuple = ()
    write: tuple = ()
    valence: float | None = None


@dataclass(frozen=True)
class Table:
    """NEURON's ``TABLE outputs DEPEND depend FROM start TO stop WITH n`` (``n + 1`` rows).

    ``side``: variables the procedure writes besides its outputs. NEURON leaves in them
    what the last call of the table's construction wrote (at ``stop``), and a lookup does
    not change them; their rows follow the outputs' in the built table. Those also in
    ``side_range`` are per instance in NEURON: the construction (nocmodl's
    ``_check_<proc>``, called with the first instance's data) writes them into the first
    instance only; the others are GLOBALs (every instance).

    ``reads``: variables that INITIAL computes (and no other block writes) which the
    construction reads from the first instance, as NEURON's ``nrn_thread_table_check``
    does: the table is built before INITIAL with their values then, and built again after
    it where one in ``depend`` changed (NEURON checks before the first step)."""

    outputs: tuple
    depend: tuple
    start: float
    stop: float
    n: int
    side: tuple = ()
    side_range: tuple = ()
    reads: tuple = ()


@dataclass(frozen=True)
class Function:
    """A FUNCTION: ``body`` assigns the result to the function's own name.

    With a ``table`` (one argument; ``table.outputs`` is ``(name,)``), a call with tables
    on is NEURON's lookup in the values of the exact function at ``n + 1`` points."""

    name: str
    args: tuple
    body: str
    table: Table | None = None


@dataclass(frozen=True)
class Procedure:
    """A PROCEDURE. With a ``table``, its body may only assign locals and the outputs."""

    name: str
    args: tuple
    body: str
    table: Table | None = None


@dataclass(frozen=True)
class Cnexp:
    """``state' = b + a·state``, both expressions in the statement language."""

    state: str
    b: str
    a: str


@dataclass(frozen=True)
class Diffusion:
    """Longitudinal diffusion of the state ``state`` (NEURON's ``LONGITUDINAL_DIFFUSION``).

    ``coefficient`` [µm⁴/ms: a diffusion constant times a cross-section, per µm² of the
    ``volume`` unit] and ``volume`` (the state's COMPARTMENT volume per µm of length) are
    expressions evaluated per instance just before the state diffuses. For an instance
    ``i`` whose parent instance is ``p`` (the one on the parent segment; NEURON's rules
    for x = 1 and root nodes), with ``dc = (coef_i + coef_p)/2``, ``dx`` each segment's
    length [µm], ``af = 2/dx_p/(dx_i + dx_p)`` and ``bf = 2/dx_i/(dx_i + dx_p)``, the
    engine solves, over the cell's tree, the backward-Euler step

    ``(y_i - y_i(old))/dt = bf·dc/vol_i·(y_p - y_i)`` plus, at the parent,
    ``(y_p - y_p(old))/dt = af·dc/vol_p·(y_i - y_p)``.

    Worked example (a calcium pool of three shells whose shell ``k`` diffuses with
    ``DCa·diam²·vrat[k]`` between segments)::

        Diffusion("ca__1", "((DCa * diam) * diam) * vrat__1", "(diam * diam) * vrat__1")
    """

    state: str
    coefficient: str
    volume: str


@dataclass(frozen=True)
class Mechanism:
    """One mechanism, described as data (see the module docstring).

    Attributes
    ----------
    name : str
        NEURON's name (``"hh"``, ``"IClamp"``).
    kind : str
        ``"density"`` (currents in mA/cm²), ``"point"`` (nA, scaled by 100/area) or
        ``"artificial"`` (a spike source without a membrane).
    order : int
        NEURON's mechanism type number: contributions are added in increasing order.
    electrode : bool
        Point processes whose ``currents`` enter as NEURON's ELECTRODE_CURRENT (positive
        depolarizes) instead of NONSPECIFIC_CURRENT.
    geometry : tuple
        Fields the engine sets from the instance's segment before each run, as NEURON
        gives them to mechanisms: ``"diam"``, the segment's mean diameter [µm]
        (NEURON's ``seg.diam``).
    stream_calls : tuple of str
        Where the blocks draw random numbers, for messages (``"file.mod:12:
        normrand()"``); a translated file fills it in.
    pointers : tuple of str
        NEURON's ``POINTER`` variables (module docstring, "Pointers"): names the blocks
        read, never fields.
    """

    name: str
    kind: str
    order: int
    parameters: tuple = ()
    states: tuple = ()
    assigned: tuple = ()
    ions: tuple = ()
    currents: tuple = ()
    electrode: bool = False
    functions: tuple = ()
    procedures: tuple = ()
    initial: str = ""
    breakpoint: str = ""
    state: str = ""
    cnexp: tuple = ()
    after_solve: str = ""
    net_receive: str = ""
    net_receive_args: tuple = ()
    net_receive_initial: str = ""
    aliases: dict = field(default_factory=dict)
    doc: str = ""
    geometry: tuple = ()
    stream_calls: tuple = ()
    pointers: tuple = ()
    diffusion: tuple = ()

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"mechanism {self.name}: kind must be one of {KINDS}, "
                             f"got {self.kind!r}")
        for g in self.geometry:
            if g not in GEOMETRY or g not in self.field_names:
                raise ValueError(f"mechanism {self.name}: geometry field {g!r} must be one "
                                 f"of {GEOMETRY} and one of the mechanism's fields")
        clash = set(self.pointers) & ({"v", "t", "dt", "celsius"} | set(self.field_names))
        if clash or len(set(self.pointers)) != len(self.pointers):
            raise ValueError(f"mechanism {self.name}: pointers {list(self.pointers)} must be "
                             "distinct and not the mechanism's fields nor NEURON's "
                             "v, t, dt, celsius")
        states = {s.name for s in self.states}
        for dif in self.diffusion:
            if dif.state not in states:
                raise ValueError(f"mechanism {self.name}: diffusion of {dif.state!r}, which "
                                 "is not one of its states")
        if self.diffusion and self.kind != "density":
            raise ValueError(f"mechanism {self.name}: diffusion needs a density mechanism")
        if (self.net_receive_args or self.net_receive_initial) and not self.net_receive:
            raise ValueError(f"mechanism {self.name}: net_receive_args and "
                             "net_receive_initial need a net_receive block")
        clash = set(self.net_receive_args) & ({"weight", "flag", "v", "t", "dt", "celsius"}
                                              | set(self.field_names))
        if clash:
            raise ValueError(f"mechanism {self.name}: net_receive_args {sorted(clash)} "
                             "clash with the mechanism's names")

    @property
    def weight_size(self) -> int:
        """Entries of a NetCon's weight vector for this mechanism: 1 + the
        ``net_receive_args``."""
        return 1 + len(self.net_receive_args)

    @property
    def ion_variables(self) -> tuple:
        """Ion variables as :class:`Variable` s, each once: reads, then writes not also read.
        Reversal potentials and concentrations have NEURON's defaults, currents 0 (mA/cm²,
        nA for a point process)."""
        out, seen = [], set()
        for ion in self.ions:
            conc = concentration_names(ion.name)
            for name in ion.read + ion.write:
                if name in seen:
                    continue
                seen.add(name)
                if name in conc:
                    out.append(Variable(name, ion_default(name, ion.name), "mM"))
                elif name == f"e{ion.name}":
                    out.append(Variable(name, ion_default(name, ion.name), "mV"))
                else:
                    out.append(Variable(name, 0.0, "nA" if self.kind == "point"
                                        else "mA/cm2"))
        return tuple(out)

    @property
    def fields(self) -> tuple:
        """Every per-instance value, in storage order: parameters, ion reads and writes,
        states, assigned."""
        return tuple(self.parameters) + self.ion_variables + tuple(self.states) \
            + tuple(self.assigned)

    @property
    def field_names(self) -> tuple:
        return tuple(f.name for f in self.fields)

    @property
    def parameter_names(self) -> tuple:
        return tuple(p.name for p in self.parameters) + tuple(
            v.name for v in self.ion_variables if v.name.startswith("e"))

    def unit(self, name: str) -> str:
        for f in self.fields:
            if f.name == name:
                return f.unit
        raise KeyError(name)

