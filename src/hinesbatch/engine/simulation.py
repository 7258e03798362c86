"""``Simulation``: NEURON's fixed step for a batch of cells (docs/simulator.md).

The whole step (threshold detection, assembly, solve, update, states, recording) is one
generated Numba function (:mod:`.kernels`) that runs many steps per call, the events of
synapses that send nothing included; Python runs between calls, to queue the spikes a call
found and to deliver the other events. The model and the run's set-up
are here; the CPU backends' time loop is :mod:`.cpu_loop`, the events on the host
:mod:`.host_events`, the GPU engine :mod:`.gpu`.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from numbers import Real

import numpy as np

from .. import mechanisms as _mechanisms
from ..mechanisms.codegen import count_net_sends, stream_blocks
from ..mechanisms.ions import initialize_reversals, ion_arrays
from ..mechanisms.scoprand import seed_value
from ..model.cell import Cell, PointProcess, format_location
from ..network import (
    INIT_LIMIT,
    NetStimGenerator,
    VecStimGenerator,
)
from ..sim.errors import NonFiniteStateError, PointerError, RandomStreamError
from .artificial import ArtificialCell, ArtificialCells, is_spike_source, sampled
from .cpu_loop import CpuLoop, progress_line
from .events import NetCon, SpikeSource
from .host_events import HostEvents
from .kernels import (
    CHUNK_NODES,
    COMMON_ARRAYS,
    chunk_order,
    chunks,
    join_linked,
    kernel_module,
)
from .layout import Layout
from .pointers import pointer_targets, refuse_on_gpu
from .receive import EventConstructError, Receiver
from .results import Results
from .watch import Watches, WatchSlot, watch_slots

__all__ = ["BACKENDS", "Simulation"]

BACKENDS = ("auto", "serial", "multicore", "gpu")
PRECISIONS = ("float64", "float32")


class Simulation(HostEvents, CpuLoop):
    """A batch of cells stepped with NEURON's fixed-step rules.

    Parameters
    ----------
    cells : Cell or list of Cell
        Cell ``i`` is gid ``i``; cells may differ in everything.
    dt : float
        Time step [ms].
    celsius : float
        Temperature [degC] (hh's q10 = 3^((celsius - 6.3)/10)).
    v_init : float
        Initial membrane potential [mV] of every node.
    backend : str
        ``"serial"``, ``"multicore"`` (Numba threads over cells), ``"gpu"`` (CUDA through
        CuPy: whole epochs of steps in one launch, :mod:`hinesbatch.engine.gpu`) or
        ``"auto"`` (multicore for more than one cell; serial where a mechanism draws
        random numbers). A mechanism on a cell that draws from NEURON's random-number
        stream (``normrand``, ``exprand``, ... of an NMODL file) runs on ``serial`` only:
        the stream is consumed in NEURON's order (:meth:`set_random_seed`);
        ``multicore`` and ``gpu`` refuse it before the run with
        :class:`~hinesbatch.sim.RandomStreamError`. Artificial cells
        (:meth:`artificial_cell`) run on the host for every backend, their draws
        included.
    tables : bool
        NEURON's ``usetable_hh = 1`` (hh's rates from a 201-row table, the default);
        ``False`` computes the rates exactly.
    threads : int, optional
        Numba threads for ``multicore``.
    precision : str
        ``"float64"`` (the default; the CPU backends always use it) or ``"float32"``
        (``gpu`` only).
    devices : int or sequence of int, optional
        ``gpu``: the CUDA devices the cells are spread over (a count takes the first ones);
        all visible devices by default.
    block_threads : int, optional
        ``gpu``: threads that step one cell: a multiple of 32 up to 1024 (a block of its
        own), or 1, 2, 4, 8 or 16 (groups of a warp's lanes, one cell each, several cells a
        block); chosen from the largest cell and the number of cells by default.
    """

    def __init__(self, cells, *, dt: float = 0.025, celsius: float = 6.3,
                 v_init: float = -65.0, backend: str = "auto", tables: bool = True,
                 threads: int | None = None, precision: str = "float64", devices=None,
                 block_threads: int | None = None):
        if isinstance(cells, Cell):
            cells = [cells]
        cells = list(cells)
        for i, c in enumerate(cells):
            if not isinstance(c, Cell):
                raise TypeError(f"cells[{i}] is a {type(c).__name__}, not a hinesbatch.Cell")
        for name, value in (("dt", dt), ("celsius", celsius), ("v_init", v_init)):
            if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value!r}")
        if dt <= 0:
            raise ValueError(f"dt must be > 0, got {dt}")
        if backend not in BACKENDS:
            raise ValueError(f"unknown backend {backend!r}; valid backends: "
                             f"{', '.join(BACKENDS)}")
        if precision not in PRECISIONS:
            raise ValueError(f"unknown precision {precision!r}; valid: {', '.join(PRECISIONS)}")
        if precision != "float64" and backend != "gpu":
            raise ValueError(f"precision {precision!r} needs backend='gpu'; the CPU backends "
                             "compute in float64")
        if (devices is not None or block_threads is not None) and backend != "gpu":
            raise ValueError("devices and block_threads apply to backend='gpu' only")
        self.precision, self.devices, self.block_threads = precision, devices, block_threads
        self.cells = cells
        self.dt, self.celsius, self.v_init = float(dt), float(celsius), float(v_init)
        self.tables = bool(tables)
        self.threads = threads
        self.backend = ("multicore" if len(cells) > 1 else "serial") if backend == "auto" \
            else backend
        self._auto_backend = backend == "auto"
        # NEURON's scop_random state: 1 in a fresh NEURON, continued from run to run
        self._stream = np.ones(1, dtype=np.int64)
        self.sources: list[SpikeSource] = []
        self.netcons: list[NetCon] = []
        self._stimulators: list[SpikeSource] = []
        self._point_sources: list[SpikeSource] = []
        self._artificial = ArtificialCells()
        self._event_sources: dict = {}     # (mechanism, instance) -> source id in a run
        self._recordings: dict = {}
        self._spike_records: dict = {}
        self._pointers: dict = {}          # (owner key, POINTER) -> the value's spec
        self._layout = None
        self._gids = {id(c): i for i, c in enumerate(self.cells)}
        self._step_seconds = None          # the last run's CPU loop [s]

    # ---- the random-number stream ----------------------------------------------------
    def set_random_seed(self, seed) -> None:
        """Set the state of the random-number stream that translated NMODL mechanisms
        draw from (``normrand``, ``exprand``, ``poisrand``, ``scop_random``), as NEURON's
        ``set_seed(seed)``: the state becomes ``seed`` truncated toward zero, modulo
        2**32 (C's ``(uint32_t) seed``).

        The stream starts at 1, as in a fresh NEURON; a run continues it where the run
        before left it (``finitialize`` does not reset it in NEURON either); a
        ``set_seed(x)`` in a mechanism's block sets it during the run.

        Parameters
        ----------
        seed : real number
            Finite, of magnitude below 2**63.
        """
        self._stream[0] = seed_value(seed)

    @property
    def random_state(self) -> int:
        """The random-number stream's state now (an integer in [0, 2**32))."""
        return int(self._stream[0])

    def _check_stream(self, mechs) -> None:
        """Keep mechanisms that draw random numbers on the serial backend: ``auto``
        chooses it; ``multicore`` and ``gpu`` are refused (:class:`RandomStreamError`)."""
        if self.backend == "serial":
            return
        for mech in mechs:
            if not stream_blocks(mech):
                continue
            if self._auto_backend:
                self.backend = "serial"
                return
            calls = mech.stream_calls or tuple(
                f"mechanism {mech.name}, block {b}" for b in stream_blocks(mech))
            raise RandomStreamError(
                f"mechanism {mech.name} draws from NEURON's random-number stream ("
                f"{'; '.join(calls)}): the {self.backend} backend cannot run it, since the "
                "stream is consumed in one order (mechanisms in type order, instances in "
                "node order) that parallel cells do not have; use backend='serial'",
                mechanism=mech.name, calls=calls, backend=self.backend)

    # ---- sources and connections ------------------------------------------------------
    def _gid(self, cell) -> int:
        if isinstance(cell, Cell):
            if id(cell) not in self._gids:
                raise ValueError("that cell is not part of this simulation")
            return self._gids[id(cell)]
        if isinstance(cell, bool) or not isinstance(cell, int) or not 0 <= cell < len(self.cells):
            raise ValueError(f"cell must be a gid in [0, {len(self.cells)}) or a Cell of this "
                             f"simulation, got {cell!r}")
        return cell

    def spike_source(self, cell=0, location="soma[0](0.5)", threshold: float = 10.0) -> SpikeSource:
        """The threshold spike source on ``cell`` at ``location`` (one per node, as
        NEURON's PreSyn; the last threshold set wins)."""
        gid = self._gid(cell)
        c = self.cells[gid]
        sec, x = c.check_location(location)
        node = c.geometry.node(sec, x)
        for s in self.sources:
            if s.kind == "threshold" and s.gid == gid and s.node == node:
                s.threshold = _finite(threshold, "threshold")
                return s
        s = SpikeSource("threshold", gid, f"{gid}:{format_location(sec, x)}", node,
                        _finite(threshold, "threshold"))
        self.sources.append(s)
        return s

    def net_stim(self, *, start: float = 50.0, interval: float = 10.0, number: float = 10,
                 noise: float = 0.0) -> SpikeSource:
        """A NetStim (NEURON's defaults: start [ms], interval [ms], number of spikes);
        ``noise > 0`` is not supported."""
        return self._stimulator("NetStim", NetStimGenerator(start, interval, number, noise))

    def vec_stim(self, times, *, delay: float = 0.0) -> SpikeSource:
        """A VecStim playing ``times`` [ms] (sorted, finite, >= 0), each ``delay`` [ms]
        later (>= 0: the VecStim whose ``RANGE delay`` NEURON adds to every time)."""
        return self._stimulator("VecStim", VecStimGenerator(np.ravel(times), delay))

    def artificial_cell(self, kind: str, **params) -> ArtificialCell:
        """An artificial cell: an instance of a translated NMODL ``ARTIFICIAL_CELL``
        (NEURON's ``h.NetStimm()``), belonging to no cell (:mod:`.artificial`).

        Parameters
        ----------
        kind : str
            The mechanism's name (``hb.load_mechanisms`` registers it).
        **params
            Its PARAMETERs and ASSIGNED variables for this instance (NEURON's names, the
            file's units; NEURON's ``cell.taum = 10`` for a RANGE variable); the others
            keep the file's values, and INITIAL may overwrite them, as in NEURON.

        Returns
        -------
        ArtificialCell
            A spike source where its NET_RECEIVE calls ``net_event``, with the next
            stimulator gid (N, N+1, ... after the N cells, in creation order with the
            NetStims and VecStims), and a NetCon target where it has a NET_RECEIVE:
            ``connect`` and ``record_spikes`` take it.

        Raises
        ------
        ValueError
            ``kind`` is not an ARTIFICIAL_CELL, or a parameter is unknown or not finite.
        """
        cell = self._artificial.add(kind, params)
        cell.source = SpikeSource("artificial", len(self.cells) + len(self._stimulators),
                                  cell.name, point=cell, index=len(self._artificial) - 1)
        self._stimulators.append(cell.source)
        return cell

    def _artificial_source(self, cell: ArtificialCell) -> SpikeSource:
        """The spike source of the artificial cell ``cell`` of this simulation."""
        if not any(c is cell for c in self._artificial.cells):
            raise ValueError(f"{cell.name} is not an artificial cell of this simulation")
        if not is_spike_source(_mechanisms.get(cell.kind)):
            raise ValueError(f"{cell.name} is not a spike source: the NET_RECEIVE of "
                             f"{cell.kind} does not call net_event")
        return cell.source

    def point_source(self, target: PointProcess) -> SpikeSource:
        """The spike source of a point process whose NET_RECEIVE calls ``net_event(te)``
        (NEURON's ``NetCon(pp, ...)``): each call is a spike at ``te`` [ms], sent through
        the NetCons leaving it and recorded by :meth:`record_spikes`. ``connect`` and
        ``record_spikes`` take the point process itself too."""
        if not isinstance(target, PointProcess):
            raise TypeError(f"target must be a PointProcess, got {type(target).__name__}")
        gid = self._gid(target.cell)
        if not count_net_sends(_mechanisms.get(target.kind).net_receive, ("net_event",)):
            raise ValueError(f"{target.kind} ({target.name} of cell {gid}) is not a spike "
                             "source: its NET_RECEIVE does not call net_event")
        for s in self._point_sources:
            if s.point is target:
                return s
        s = SpikeSource("net_event", gid, f"{gid}:{target.name}", point=target,
                        index=len(self._point_sources))
        self._point_sources.append(s)
        return s

    def _stimulator(self, kind, generator) -> SpikeSource:
        k = sum(1 for s in self._stimulators if s.kind == kind)
        s = SpikeSource(kind, len(self.cells) + len(self._stimulators), f"{kind}[{k}]",
                        generator=generator, index=k)
        self._stimulators.append(s)
        return s

    def connect(self, source, target: PointProcess, *, weight=0.0,
                delay: float = 1.0, threshold: float | None = None) -> NetCon:
        """A NetCon from ``source`` (a SpikeSource, ``(cell, location)`` or a point process
        whose NET_RECEIVE calls ``net_event``: :meth:`point_source`) to a synapse.

        ``weight`` is a number (µS for ExpSyn and Exp2Syn) or the NetCon's weight vector
        ``(w0, w1, ...)``, NEURON's ``NetCon.weight[i]``: at most as many entries as the
        target's NET_RECEIVE has arguments, the missing ones 0."""
        if isinstance(source, tuple):
            source = self.spike_source(*source)
        if isinstance(source, PointProcess):
            source = self.point_source(source)
        if isinstance(source, ArtificialCell):
            source = self._artificial_source(source)
        if not isinstance(source, SpikeSource):
            raise TypeError(f"source must be a SpikeSource, (cell, location), an artificial "
                            f"cell or a point process that calls net_event, got "
                            f"{type(source).__name__}")
        if not isinstance(target, (PointProcess, ArtificialCell)) \
                or not _mechanisms.get(target.kind).net_receive:
            raise ValueError(f"target must be a synapse placed on a cell (ExpSyn, Exp2Syn) "
                             f"or an artificial cell with a NET_RECEIVE, got {target!r}")
        if isinstance(target, PointProcess):
            self._gid(target.cell)
        elif not any(c is target for c in self._artificial.cells):
            raise ValueError(f"{target.name} is not an artificial cell of this simulation")
        name = f"NetCon[{len(self.netcons)}] ({source.name} -> {target.name})"
        if isinstance(delay, bool) or not isinstance(delay, Real) or not math.isfinite(delay) \
                or delay < 0:
            raise ValueError(f"{name}: delay must be finite and >= 0, got {delay!r}")
        nc = NetCon(source, target, _weight(weight, name,
                                            _mechanisms.get(target.kind).weight_size),
                    float(delay), len(self.netcons))
        if threshold is not None:
            if source.kind != "threshold":
                raise ValueError(f"{name}: threshold applies to a cell's spike source only")
            source.threshold = _finite(threshold, "threshold")
        source.netcons.append(nc)
        self.netcons.append(nc)
        return nc

    # ---- recordings -------------------------------------------------------------------
    def record(self, variable: str = "v", *, cell=0, location="soma[0](0.5)",
               target: PointProcess | None = None, every: int = 1) -> str:
        """Record ``variable`` every ``every`` steps (t = 0 included); returns its key.

        Keys are ``"v@0:soma[0](0.5)"`` (cell gid and location) or ``"i@0:IClamp[0]"``
        (with ``target``), followed by ``"|every=k"`` when ``every > 1``.
        """
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError(f"every must be a positive integer, got {every!r}")
        suffix = "" if every == 1 else f"|every={every}"
        if isinstance(target, ArtificialCell):
            return self._record_artificial(variable, target, every, suffix)
        what, where, var, unit = self._value_spec(variable, cell, location, target)
        gid = self._gid(target.cell) if what == "pp" else where[0]
        place = target.name if what == "pp" else format_location(*where[1:])
        key = f"{variable}@{gid}:{place}{suffix}"
        self._recordings[key] = (what, where, var, every, unit)
        return key

    def _value_spec(self, variable: str, cell, location, target) -> tuple:
        """A value of the model named as :meth:`record` names it: ``("pp", point process,
        field, unit)`` or ``("range", (gid, section, x), (mechanism or None, field),
        unit)`` (``_resolve_value`` finds it in the layout)."""
        if target is not None:
            if not isinstance(target, PointProcess):
                raise TypeError(f"target must be a PointProcess, got "
                                f"{type(target).__name__}")
            mech = _mechanisms.get(target.kind)
            if variable not in mech.field_names:
                raise ValueError(f"{target.kind} has no variable {variable!r}; variables: "
                                 f"{', '.join(mech.field_names)}")
            self._gid(target.cell)
            return "pp", target, variable, mech.unit(variable)
        gid = self._gid(cell)
        sec, x = self.cells[gid].check_location(location)
        mech, field = _range_variable(variable)
        unit = "mV" if mech is None else _mechanisms.get(mech).unit(field)
        return "range", (gid, sec, x), (mech, field), unit

    # ---- pointers ---------------------------------------------------------------------
    def set_pointer(self, owner, name: str, variable: str = "v", *, cell=0,
                    location="soma[0](0.5)", target: PointProcess | None = None) -> None:
        """Point the POINTER ``name`` of a mechanism's instance at a value of the model
        (NEURON's ``h.setpointer(target_ref, "name", pp)``, or ``setpointer
        sec(x).mech._ref_name, target_ref`` for a density mechanism).

        The target is named as :meth:`record` names what it records: ``variable`` at
        ``location`` of ``cell`` (``"v"``, the membrane potential there, or a RANGE
        variable of a density mechanism, ``"T_rel"``), or a variable of the point process
        ``target``. The mechanism's blocks read the target's value where they run
        (``docs/nmodl.md``, "POINTER"). Every POINTER that a mechanism's blocks read must
        be set for each of its instances before a run.

        Parameters
        ----------
        owner : PointProcess or tuple
            The point process, or ``(cell, location, mechanism)`` for the instance of a
            density mechanism (``(0, "soma[0](0.5)", "ican")``).
        name : str
            The POINTER's name in the mechanism's NMODL file.
        variable, cell, location, target
            The value pointed at, as for :meth:`record`.

        Raises
        ------
        PointerError
            The mechanism has no POINTER ``name`` (the message lists its POINTERs) or the
            target is unknown (the message lists the valid variables).

        Examples
        --------
        A gap junction between the somas of cells 0 and 1 (``gap`` reads ``POINTER
        vgap``)::

            g0 = cells[0].place("gap", "soma[0](0.5)")
            g1 = cells[1].place("gap", "soma[0](0.5)")
            sim.set_pointer(g0, "vgap", "v", cell=1)
            sim.set_pointer(g1, "vgap", "v", cell=0)
        """
        mech, key, label, gid = self._pointer_owner(owner)
        if not isinstance(name, str) or name not in mech.pointers:
            raise PointerError(f"{label}: {mech.name} has no POINTER {name!r}; its "
                               f"POINTERs: {', '.join(mech.pointers) or '(none)'}",
                               mechanism=mech.name, pointer=str(name))
        try:
            what, where, var, _ = self._value_spec(variable, cell, location, target)
        except ValueError as err:
            raise PointerError(f"{label}: POINTER {name}: {err}", mechanism=mech.name,
                               pointer=name) from None
        self._pointers[(key, name)] = (gid, label, what, where, var)

    def _pointer_owner(self, owner) -> tuple:
        """``(mechanism, key, label, gid)`` of the instance ``owner``
        (:meth:`set_pointer`)."""
        if isinstance(owner, PointProcess):
            gid = self._gid(owner.cell)
            return (_mechanisms.get(owner.kind), ("pp", owner), f"{owner.name} of cell {gid}",
                    gid)
        if not (isinstance(owner, tuple) and len(owner) == 3):
            raise TypeError("owner must be a PointProcess or (cell, location, mechanism), "
                            f"got {owner!r}")
        cell, location, name = owner
        gid = self._gid(cell)
        sec, x = self.cells[gid].check_location(location)
        if name not in _mechanisms.names() or _mechanisms.get(name).kind != "density":
            raise PointerError(f"{name!r} is not a density mechanism; for a point process "
                               "pass the PointProcess", mechanism=str(name))
        label = f"{name} at {format_location(sec, x)} of cell {gid}"
        return _mechanisms.get(name), ("range", gid, sec, x, name), label, gid

    def _record_artificial(self, variable: str, cell: ArtificialCell, every: int,
                           suffix: str) -> str:
        """Record ``variable`` of the artificial cell ``cell``: key
        ``"m@artlif[0]"`` (sampled from its history, :func:`.artificial.sampled`)."""
        if not any(c is cell for c in self._artificial.cells):
            raise ValueError(f"{cell.name} is not an artificial cell of this simulation")
        mech = _mechanisms.get(cell.kind)
        if variable not in mech.field_names:
            raise ValueError(f"{cell.kind} has no variable {variable!r}; variables: "
                             f"{', '.join(mech.field_names)}")
        key = f"{variable}@{cell.name}{suffix}"
        self._recordings[key] = ("art", cell, variable, every, mech.unit(variable))
        return key

    def record_spikes(self, source: SpikeSource) -> str:
        """Record the spike times of ``source`` (NEURON's ``NetCon.record``): a
        SpikeSource, a point process that calls ``net_event`` (:meth:`point_source`) or
        an artificial cell that does (:meth:`artificial_cell`)."""
        if isinstance(source, PointProcess):
            source = self.point_source(source)
        if isinstance(source, ArtificialCell):
            source = self._artificial_source(source)
        if not isinstance(source, SpikeSource):
            raise TypeError(f"source must be a SpikeSource, got {type(source).__name__}")
        key = f"spikes@{source.name}"
        self._spike_records[key] = source
        return key

    # ---- running ----------------------------------------------------------------------
    def _current_layout(self) -> Layout:
        state = self._model_state()
        if self._layout is None or self._layout_state != state:
            self._layout = Layout(self.cells, dt=self.dt)
            self._layout_state = state
        return self._layout

    def _prepare(self):
        lay = self._current_layout()
        self._check_stream(lay.mechs)
        self._km = kernel_module(lay.mechs, tables=self.tables,
                                 parallel=self.backend == "multicore")
        return lay

    def _gpu_options(self) -> dict:
        """The GPU runner's options, with the devices found (or refused) before any work."""
        from .gpu.devices import cuda_devices

        return {"precision": self.precision, "devices": cuda_devices(self.devices),
                "block_threads": self.block_threads}

    def describe(self) -> str:
        """How the batch is laid out and run (for ``gpu``: devices, threads per cell, where
        the per-cell arrays live); the GPU layout is known after the first :meth:`run`."""
        head = (f"{len(self.cells)} cells, backend {self.backend}, dt {self.dt:g} ms, "
                f"celsius {self.celsius:g} degC, {'TABLEs' if self.tables else 'exact rates'}")
        if self.backend != "gpu":
            return head
        gpu = getattr(self, "_gpu", None)
        return head + "\n" + (gpu.describe() if gpu is not None else
                              f"gpu, {self.precision}: laid out at the first run")

    def _model_state(self):
        """What the layout is built from: dt (its capacitance term) and each cell's policy,
        decor and point processes (all in the cell's repr)."""
        return self.dt, [(id(c), repr(c)) for c in self.cells]

    def _model_args(self, lay, tables) -> list:
        arrays = {"v": self._v, "d": self._d, "rhs": self._rhs, "a": lay.a, "b": lay.b,
                  "parent": lay.parent, "capd": lay.capd, "node_off": lay.node_off}
        out = [arrays[n] for n in COMMON_ARRAYS]
        for m in lay.mechs:
            out += [self._data[m.name], lay.nodes[m.name], lay.offsets[m.name],
                    lay.scale[m.name], *lay.scratch[m.name]]
        return out + list(self._ions.values()) + tables \
            + ([self._stream] if self._km.stream else []) \
            + [self._pointer_arrays[a[len("_PT_"):]] for a in self._km.pointer_args]

    def _resolve_recordings(self, lay):
        rows = []
        for key, (what, where, var, every, unit) in self._recordings.items():
            if what == "art":       # sampled from its history on the host (_results)
                continue
            try:
                m, f, i, gid = self._resolve_value(lay, what, where, var)
            except ValueError as err:
                gid, sec, x = where
                raise ValueError(f"cannot record {key.split('@')[0]!r} at "
                                 f"{format_location(sec, x)} of cell {gid}: {err}") from None
            rows.append((key, m, f, i, every, unit, gid))
        return rows

    def _resolve_value(self, lay, what, where, var) -> tuple:
        """``(m, f, i, gid)`` of a value named by :meth:`_value_spec`: the kernels'
        ``_value`` arguments (``m`` the mechanism's place in the layout, -1 for ``v``;
        ``f`` the field; ``i`` the instance, or the node for ``v``) and its cell."""
        if what == "pp":
            m, j = lay.pp_index[id(where)]
            pos = next(k for k, mech in enumerate(lay.mechs) if mech.name == m)
            return pos, _mechanisms.get(m).field_names.index(var), j, self._gid(where.cell)
        gid, sec, x = where
        cl = lay.cells[gid]
        node = cl.global_node(cl.geometry.node(sec, x))
        mech, field = var
        if mech is None:
            return -1, 0, node, gid
        j = lay.instance_at(mech, node)
        if j < 0:
            raise ValueError(f"{mech} is not inserted there")
        pos = next(k for k, m in enumerate(lay.mechs) if m.name == mech)
        return pos, _mechanisms.get(mech).field_names.index(field), j, gid

    def run(self, tstop: float, *, progress: bool = False) -> Results:
        """Initialize (NEURON's ``finitialize(v_init)``) and step while
        ``t < tstop - dt/2``; returns the recordings.

        Parameters
        ----------
        tstop : float
            End time [ms].
        progress : bool
            Write the simulated time to stderr as the run goes.
        """
        tstop = _finite(tstop, "tstop")
        lay, run = self._initialize(tstop)
        tgrid, rows, rec_buf = run.tgrid, run.rows, run.rec_buf
        n_steps = tgrid.size - 1
        if self.backend == "gpu":
            self._gpu.run(progress=progress_line if progress else None)
        else:
            start = time.perf_counter()
            self._run_cpu(lay, run, progress)
            self._step_seconds = time.perf_counter() - start
        self._deliver(tgrid[n_steps])
        self._weights_to_netcons()
        if progress:
            progress_line(tgrid[n_steps], tgrid[n_steps], end=True)
        return self._results(rows, rec_buf, tgrid, n_steps)

    def _weights_to_netcons(self) -> None:
        """The run's weight vectors into the NetCons' ``weight`` (NEURON's
        ``NetCon.weight`` keeps what NET_RECEIVE wrote, and the next run starts from it):
        a number where the vector has one entry, else a tuple."""
        for nc in self.netcons:
            w = self._netcon_table.weight_vector(nc.index)
            nc.weight = float(w[0]) if w.size == 1 else tuple(float(x) for x in w)

    def _initialize(self, tstop: float) -> tuple:
        """NEURON's ``finitialize(v_init)`` for a run to ``tstop`` [ms]: the layout, the
        time grid, the states, the event queue (generators started), the t = 0 samples;
        for ``gpu`` also the runner with the state on the devices. Returns
        ``(layout, run arrays)``."""
        self._check_stream(self._current_layout().mechs)
        if self.backend == "gpu" and not self.cells:
            raise ValueError("backend 'gpu' steps cells on the device, and this simulation "
                             "has none (artificial cells only): use backend 'serial'")
        gpu = self._gpu_options() if self.backend == "gpu" else None
        lay = self._prepare()
        km, dt, celsius = self._km, self.dt, self.celsius
        if gpu is not None:
            _gpu_events_supported(km)
            refuse_on_gpu(km.codes)
        self._pointer_arrays, links = pointer_targets(km.codes, lay, self._pointers,
                                                      self._resolve_value)
        target = CHUNK_NODES
        if self.backend == "multicore":
            import numba

            if self.threads is not None:
                numba.set_num_threads(int(self.threads))
            # at least four chunks a thread, so that small batches still spread
            target = max(1, min(target, lay.n_nodes // (4 * numba.get_num_threads())))
        self._chunk_off = chunks(lay.node_off, target)
        if km.stream:       # one chunk: the cells' draws in NEURON's order
            self._chunk_off = np.array([0, len(lay.cells)], dtype=np.int64)
        # cells a POINTER links step together: each reads the other's values of the step
        self._chunk_off = join_linked(self._chunk_off, links)
        self._node_ord = chunk_order(lay.node_off, lay.depth, self._chunk_off)
        # time grid with NEURON's accumulated t
        times = [0.0]
        t = 0.0
        while t < tstop - dt / 2:
            t = (t + 0.5 * dt) + 0.5 * dt
            times.append(t)
        tgrid = np.array(times)
        self._tgrid = tgrid
        self._tlimit = tgrid + 0.5 * dt      # each step's start-of-step delivery limit
        n_steps = tgrid.size - 1
        # finitialize
        n = lay.n_nodes
        self._v = np.full(n, self.v_init)
        self._d = np.zeros(n)
        self._rhs = np.zeros(n)
        self._data = lay.run_data()
        # NEURON's ion_init: reversal potentials from concentrations where those are read;
        # the ions kept per node start as ion_alloc, nrn_promote and ion_init leave them
        initialize_reversals(lay.mechs, lay.nodes, self._data, n, celsius)
        self._ions = ion_arrays(lay.mechs, lay.nodes, self._data, lay.area, celsius)
        tables, mech_tables = [], {}
        for code in km.codes:
            own = [self._build_table(km, code, p, celsius, dt)
                   for p in code.tabled] if self.tables else []
            mech_tables[code.mech.name] = own
            tables += own
        built = {id(t): self._first_values(code, p) for code in km.codes
                 for p, t in zip(code.table_procedures, mech_tables[code.mech.name])}
        self._artificial.build()
        art_codes = {id(c) for c in self._artificial.codes()}
        sends = []
        for code in sorted(km.codes + self._artificial.codes(), key=lambda c: c.mech.order):
            m = code.mech.name
            if id(code) in art_codes:       # an artificial cell: no cell, no node
                rows = self._artificial.initial(code, dt, celsius, self._stream)
                if rows is not None:
                    sends.append((m, rows))
                continue
            ions = [self._ions[a[len("_I_"):]] for a in code.ion_args()]
            rows = [np.empty((lay.nodes[m].size * code.initial_sends, 3))] \
                if code.initial_sends else []
            stream = [self._stream] if code.stream else []
            reach = [self._pointer_arrays[m]] + [self._data[a[len("_D_"):]] for a in
                                                 code.initial_pointer_args()[1:]] \
                if code.pointers else []
            sent = getattr(km.module, f"_initial_{m}")(self._data[m], lay.nodes[m], self._v,
                                                       0.0, dt, celsius, *mech_tables[m],
                                                       *ions, *stream, *rows, *reach)
            if rows:
                sends.append((m, rows[0][:sent]))
        slots = watch_slots(km, lay)
        # grouped by cell; a cell's WATCH slots after its threshold sources
        sources = sorted(self.sources + slots, key=lambda s: s.gid)
        src_node = np.array([s.node if isinstance(s, WatchSlot)
                             else lay.cells[s.gid].global_node(s.node) for s in sources],
                            dtype=np.int64)
        src_thr = np.array([math.inf if isinstance(s, WatchSlot) else s.threshold
                            for s in sources], dtype=np.float64)
        src_flag = np.zeros(len(sources), dtype=np.int64)
        src_off = np.searchsorted(np.array([s.gid for s in sources], dtype=np.int64),
                                  np.arange(len(lay.cells) + 1)).astype(np.int64)
        self._events([s for s in sources if not isinstance(s, WatchSlot)])
        self._watches = Watches(sources, self._v, src_thr, src_flag)
        modules = [km] + ([self._artificial.module] if self._artificial.module else [])
        self._receiver = Receiver(modules, {**self._data, **self._artificial.data}, dt,
                                  celsius, self._stream, self._point_spike,
                                  self._watches.activate)
        self._receive_table = self._receiving()[0]
        self._receiver.initialize_weights(self._receive_table, self._target_instance)
        self._receiver.initial_sends(self._queue, sends)
        self._kernel_events_setup(km, lay)
        self._start_histories()
        self._deliver(INIT_LIMIT)
        model = self._model_args(lay, tables)
        km.assemble_all(len(lay.cells), 0.0, dt, celsius, *model)
        rows = sorted(self._resolve_recordings(lay), key=lambda r: r[6])
        rec_m = np.array([r[1] for r in rows], dtype=np.int64)
        rec_f = np.array([r[2] for r in rows], dtype=np.int64)
        rec_i = np.array([r[3] for r in rows], dtype=np.int64)
        rec_every = np.array([r[4] for r in rows], dtype=np.int64)
        rec_off = np.searchsorted(np.array([r[6] for r in rows], dtype=np.int64),
                                  np.arange(len(lay.cells) + 1)).astype(np.int64)
        rec_buf = np.full((len(rows), n_steps + 1), np.nan)
        for r, row in enumerate(rows):
            rec_buf[r, 0] = km._value(rec_m[r], rec_f[r], rec_i[r], self._v,
                                      *[self._data[m.name] for m in lay.mechs])
        # NEURON's nrn_thread_table_check before the first step: a table is built again
        # where a DEPEND variable it reads of the first instance changed in INITIAL
        for code in km.codes:
            for p, table in zip(code.table_procedures, mech_tables[code.mech.name]):
                now = self._first_values(code, p)
                if any(a != b for n, a, b in zip(p.table.reads, built[id(table)], now)
                       if n in p.table.depend):
                    table[...] = self._build_table(km, code, p, celsius, dt)
        run = _RunArrays(sources, src_node, src_thr, src_flag, src_off, rows, rec_m, rec_f,
                         rec_i, rec_every, rec_off, rec_buf, model, tgrid, tables)
        if self.backend == "gpu":
            from .gpu.runner import GpuRunner

            self._gpu = GpuRunner(self, lay, run, gpu)
        return lay, run

    def _first_values(self, code, p) -> tuple:
        """The first instance's values of what the table of ``p`` reads (``Table.reads``;
        the defaults where the mechanism has no instance)."""
        data, fields = self._data[code.mech.name], code.mech.field_names
        if data.shape[1] == 0:
            return tuple(code.mech.fields[fields.index(n)].default for n in p.table.reads)
        return tuple(float(data[fields.index(n), 0]) for n in p.table.reads)

    def _build_table(self, km, code, p, celsius, dt) -> np.ndarray:
        """The table of ``p`` (a PROCEDURE or FUNCTION) built now; what a procedure also
        writes keeps its last construction call's values: a GLOBAL everywhere, a RANGE
        variable in the first instance, whose data NEURON's nrn_thread_table_check builds
        the table with."""
        table = getattr(km.module, f"_build_{code.mech.name}_{p.name}")(
            celsius, dt, *self._first_values(code, p))
        fields = code.mech.field_names
        for r, g in enumerate(p.table.side, start=len(p.table.outputs)):
            where = slice(0, 1) if g in p.table.side_range else slice(None)
            self._data[code.mech.name][fields.index(g), where] = table[r, -1]
        return table

    def _non_finite(self, lay, gid: int, t: float):
        cl = lay.cells[gid]
        v = self._v[cl.start:cl.stop]
        bad = np.flatnonzero(~np.isfinite(v))
        k = int(bad[0]) if bad.size else int(np.argmax(np.abs(v)))
        where = cl.location_of(cl.start + k)
        raise NonFiniteStateError(
            f"the membrane potential became {v[k]} in cell {gid} at {where} at t = {t:g} ms",
            cell=gid, location=where, t_ms=t)

    def _results(self, rows, rec_buf, tgrid, n_steps) -> Results:
        row_of = {row[0]: r for r, row in enumerate(rows)}
        traces, times, units = {}, {}, {}
        for key in self._recordings:  # in the order of the record() calls
            if key in self._history_of:
                every = self._recordings[key][3]
                traces[key] = sampled(*self._history_of[key], tgrid, self.dt, every)
                times[key] = tgrid[::every].copy()
                units[key] = self._recordings[key][4]
                continue
            r = row_of[key]
            every, unit = rows[r][4], rows[r][5]
            k = n_steps // every + 1
            traces[key] = rec_buf[r, :k].copy()
            times[key] = tgrid[::every][:k].copy()
            units[key] = unit
        spikes, gids = {}, {}
        for key, s in self._spike_records.items():
            spikes[key] = np.array(self._spikes.get(id(s), []), dtype=np.float64)
            gids[key] = s.gid
        meta = {"dt": self.dt, "celsius": self.celsius, "v_init": self.v_init,
                "tables": self.tables, "backend": self.backend, "n_cells": len(self.cells),
                "tstop": float(tgrid[-1]), "steps": int(n_steps),
                # the CPU loop's time (Simulation.run; a network's epochs report their own)
                "step_seconds": self._gpu.step_seconds if self.backend == "gpu"
                else self._step_seconds}
        if self.backend == "gpu":
            meta.update(precision=self.precision,
                        devices=[repr(p.device) for p in self._gpu.parts])
        return Results(traces, times, units, spikes, gids, meta)


@dataclass
class _RunArrays:
    """The arrays of one run, made by :meth:`Simulation.run` after ``finitialize``: spike
    sources grouped by cell (``src_*``, ``src_off``), recordings grouped by cell (``rows``,
    ``rec_*``, ``rec_off``, ``rec_buf`` with t = 0 filled in), the CPU kernels' model
    arguments, the time grid and the TABLEs."""

    sources: list
    src_node: np.ndarray
    src_thr: np.ndarray
    src_flag: np.ndarray
    src_off: np.ndarray
    rows: list
    rec_m: np.ndarray
    rec_f: np.ndarray
    rec_i: np.ndarray
    rec_every: np.ndarray
    rec_off: np.ndarray
    rec_buf: np.ndarray
    model: list
    tgrid: np.ndarray
    tables: list


def _finite(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def _gpu_events_supported(km) -> None:
    """Refuse, before any GPU work, longitudinal diffusion (a step of the CPU engines
    only), self-events (``net_send``), spikes of point processes (``net_event``), WATCH,
    FOR_NETCONS and assigned NetCon weights: the GPU engine runs NET_RECEIVE on the device
    after the host has ordered the epoch's events, so an event sent there could not enter
    the host's queue in time, and the host's events carry the weight they were queued
    with."""
    for code in km.codes:
        if not code.mech.net_receive:
            continue
        for construct, used in (("WATCH", code.receive_watches),
                                ("FOR_NETCONS", code.receive_netcons),
                                (("an assigned NetCon weight (NET_RECEIVE's first "
                                  "argument)"), code.receive_weight_writes)):
            if used:
                raise EventConstructError(
                    f"mechanism {code.mech.name}: {construct} is not run by the gpu "
                    "backend; use backend 'serial' or 'multicore'",
                    mechanism=code.mech.name, construct=construct.split(" (")[0],
                    engine="gpu")
    for code in km.codes:
        if code.mech.diffusion:
            raise ValueError(f"mechanism {code.mech.name}: longitudinal diffusion "
                             f"(LONGITUDINAL_DIFFUSION of {code.mech.diffusion[0].state}) is "
                             "not run by the gpu backend; use backend 'serial' or "
                             "'multicore'")
        if code.receive_events:
            raise ValueError(f"mechanism {code.mech.name}: spikes of point processes "
                             "(net_event) are not run by the gpu backend; use backend "
                             "'serial' or 'multicore'")
        if code.receive_sends or code.initial_sends:
            raise ValueError(f"mechanism {code.mech.name}: self-events (net_send) are not "
                             "run by the gpu backend; use backend 'serial' or 'multicore'")


def _weight(weight, name: str, size: int):
    """A NetCon's weight: a finite number, or a weight vector (a tuple of finite numbers)
    of at most ``size`` entries, the target's."""
    if isinstance(weight, (list, tuple, np.ndarray)):
        values = tuple(_finite(w, f"{name}: weight[{k}]")
                       for k, w in enumerate(np.ravel(np.asarray(weight, dtype=object))))
        if not 1 <= len(values) <= size:
            raise ValueError(f"{name}: weight vector of {len(values)} entries; the "
                             f"target's NET_RECEIVE takes 1 to {size}")
        return values if len(values) > 1 else values[0]
    return _finite(weight, f"{name}: weight")


def _range_variable(variable: str) -> tuple:
    """``"v"`` -> (None, "v"); ``"m_hh"`` -> ("hh", "m"); ``"ina"`` -> ("hh", "ina")."""
    if variable == "v":
        return None, "v"
    for m in _mechanisms.names():
        mech = _mechanisms.get(m)
        if mech.kind == "density" and variable.endswith("_" + m):
            field = variable[: -len(m) - 1]
            if field in mech.field_names:
                return m, field
            raise ValueError(f"{m} has no variable {field!r}; variables: "
                             f"{', '.join(f + '_' + m for f in mech.field_names)}")
    for m in _mechanisms.names():
        mech = _mechanisms.get(m)
        for v in mech.ion_variables:
            if v.name == variable:
                return m, variable
    valid = ["v"] + [f"{f}_{m}" for m in _mechanisms.names()
                     if _mechanisms.get(m).kind == "density"
                     for f in _mechanisms.get(m).field_names]
    raise ValueError(f"unknown variable {variable!r}; range variables: {', '.join(valid)}")
