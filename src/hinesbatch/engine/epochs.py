"""``EpochSimulation``: the CPU engine run one epoch at a time, for networks split over ranks.

:class:`~.simulation.Simulation` fans a spike out to its NetCons the moment it happens.
A rank of a split network cannot: the NetCons of a spike may live on other ranks. Here
every spike of a local source (threshold sources and generators alike) goes to an outbox
instead, and the events of every spike of the network, local ones included, come back
through :meth:`EpochSimulation.receive` after the exchange::

    sim = EpochSimulation(cells, gids=[3, 7], dt=0.025)
    sim.cell_source(0, "soma[0](0.5)", 10.0)       # gid 3's spike source
    sim.add_input(5, cells[0].point_processes[0], weight=0.01, delay=1.0)  # gid 5 -> gid 3
    gids, times = sim.begin(tstop)          # finitialize; spikes at t = 0
    ...exchange...; sim.receive(all_gids, all_times)
    while (steps := epoch_steps(sim.t, min_delay, dt, tstop=tstop)):
        gids, times = sim.advance(steps)    # the epoch's spikes
        ...exchange...; sim.receive(all_gids, all_times)
    results = sim.finish()

Within an epoch the steps, the event delivery and the kernels are the one-process
engine's (the same generated code); an epoch ends with the delivery of every event due by
its last ``t``, as NEURON's step does. ``receive`` queues ``te = ts + delay`` for the
local NetCons of each spike in the order given ((time, gid) from
:func:`hinesbatch.network.parallel.exchange_spikes`), so events at equal times act in the
same order whatever the split.

Gids: the cells' gids are given (``gids[i]`` is ``cells[i]``'s); generators get theirs
from :meth:`EpochSimulation.net_stim` and :meth:`EpochSimulation.vec_stim`.
"""
from __future__ import annotations

import numpy as np

from ..model.cell import format_location
from ..network import (
    INIT_LIMIT,
    NetConTable,
    NetStimGenerator,
    VecStimGenerator,
    start_of_step_limit,
)
from ..network.parallel import deliver_remote
from ..sim.errors import NonFiniteStateError
from .artificial import ArtificialCell
from .events import SpikeSource
from .simulation import Simulation, _finite

__all__ = ["EpochSimulation"]


class EpochSimulation(Simulation):
    """A :class:`~.simulation.Simulation` stepped epoch by epoch (module docstring).

    Parameters
    ----------
    cells : list of Cell
        The cells of this rank.
    gids : sequence of int
        Global gid of each cell.
    **options
        ``dt``, ``celsius``, ``v_init``, ``backend`` (``gpu`` included), ``tables``,
        ``threads``, ``precision``, ``devices`` as for :class:`~.simulation.Simulation`.
    """

    def __init__(self, cells, *, gids, **options):
        super().__init__(cells, **options)
        gids = np.asarray(gids, dtype=np.int64)
        if gids.shape != (len(self.cells),):
            raise ValueError(f"gids has {gids.size} entries for {len(self.cells)} cells")
        self.global_gids = gids
        self._generator_gid: dict[int, int] = {}     # id(SpikeSource) -> gid
        self._inputs = NetConTable()                 # source gid -> local target id
        self._input_targets: list = []               # local target id -> PointProcess
        self._input_ids: dict[int, int] = {}         # id(PointProcess) -> target id
        self._cell_sources: set[int] = set()
        self._outbox_gids: list[int] = []
        self._outbox_times: list[float] = []
        self._run = None

    # ---- the network's side -----------------------------------------------------------
    def net_stim(self, *, gid: int, **params) -> SpikeSource:
        """A NetStim with global ``gid`` (parameters as :meth:`Simulation.net_stim`)."""
        source = self._stimulator("NetStim", NetStimGenerator(**params))
        self._generator_gid[id(source)] = int(gid)
        return source

    def vec_stim(self, times, *, gid: int, delay: float = 0.0) -> SpikeSource:
        """A VecStim with global ``gid`` playing ``times`` [ms], each ``delay`` [ms] later."""
        source = self._stimulator("VecStim", VecStimGenerator(np.ravel(times), delay))
        self._generator_gid[id(source)] = int(gid)
        return source

    def artificial_cell(self, kind: str, *, gid: int, **params) -> ArtificialCell:
        """An artificial cell with global ``gid`` (as :meth:`Simulation.artificial_cell`);
        its ``net_event`` spikes go to the outbox."""
        cell = super().artificial_cell(kind, **params)
        self._generator_gid[id(cell.source)] = int(gid)
        return cell

    def cell_source(self, cell: int, location: str, threshold: float) -> SpikeSource:
        """The one threshold source of local cell ``cell`` (its gid's, as NEURON's
        ``pc.cell``); each cell gets at most one, so none is searched for (the search of
        :meth:`Simulation.spike_source` grows with the sources already made)."""
        if cell in self._cell_sources:
            raise ValueError(f"the cell of gid {int(self.global_gids[cell])} already has "
                             "its spike source")
        c = self.cells[cell]
        sec, x = c.check_location(location)
        source = SpikeSource("threshold", cell, f"{cell}:{format_location(sec, x)}",
                             c.geometry.node(sec, x), _finite(threshold, "threshold"))
        self._cell_sources.add(cell)
        self.sources.append(source)
        return source

    def add_input(self, source_gid: int, target, *, weight, delay: float) -> int:
        """A NetCon from ``source_gid`` (anywhere in the network) to the synapse
        ``target`` of a local cell; returns its index among this rank's inputs.
        ``weight`` is a number or a weight vector, as for :meth:`Simulation.connect`;
        ``target`` may be a local artificial cell (:meth:`artificial_cell`)."""
        if isinstance(target, ArtificialCell):
            if not any(c is target for c in self._artificial.cells):
                raise ValueError(f"{target.name} is not an artificial cell of this rank")
        else:
            self._gid(target.cell)
        if id(target) not in self._input_ids:
            self._input_ids[id(target)] = len(self._input_targets)
            self._input_targets.append(target)
        return self._inputs.add(int(source_gid), self._input_ids[id(target)],
                                weight=weight, delay=delay)

    @property
    def inputs(self) -> NetConTable:
        """This rank's NetCons: source gid -> local target id (weight, delay)."""
        return self._inputs

    @property
    def t(self) -> float:
        """The accumulated time [ms] reached (0 before :meth:`begin`)."""
        return 0.0 if self._run is None else float(self._tgrid[self._run["step"]])

    # ---- running ----------------------------------------------------------------------
    def begin(self, tstop: float) -> tuple[np.ndarray, np.ndarray]:
        """``finitialize``: set up the run to ``tstop`` [ms]; returns the spikes at t = 0
        (gids, times [ms]) of local generators."""
        lay, run = self._initialize(_finite(tstop, "tstop"))
        self._run = {"lay": lay, "arrays": run, "step": 0, "n_steps": run.tgrid.size - 1}
        return self._take_outbox()

    def advance(self, steps: int) -> tuple[np.ndarray, np.ndarray]:
        """Take ``steps`` steps (an epoch) and deliver the events due by its end; returns
        the epoch's spikes of local sources (gids, times [ms], in the order they fired)."""
        run = self._require_run()
        stop = run["step"] + int(steps)
        if not run["step"] < stop <= run["n_steps"]:
            raise ValueError(f"an epoch of {steps} steps from step {run['step']} does not "
                             f"fit the run's {run['n_steps']} steps")
        tgrid = self._tgrid
        step = run["step"]
        if self.backend == "gpu":
            self._gpu.advance(step, stop)
            self._gpu.deliver_until(tgrid[stop], stop)   # the end of the epoch's last step
            run["step"] = stop
            return self._take_outbox()
        a = run["arrays"]
        if self._watches:       # WATCH conditions: NEURON's phases, step by step
            self._watches.steps(self, run["lay"], a, step, stop)
            step = stop
        while step < stop:      # local spikes leave by the exchange: no delay binds here
            step = self._epoch(self._km, run["lay"], step, min(stop - step, self.MAX_EPOCH),
                               a.sources, (a.src_node, a.src_thr, a.src_flag), a.src_off,
                               (a.rec_m, a.rec_f, a.rec_i, a.rec_every), a.rec_off,
                               a.rec_buf, a.model)
        self._deliver(tgrid[stop])   # the end of the epoch's last step
        run["step"] = stop
        return self._take_outbox()

    def receive(self, gids, times) -> int:
        """Queue the local NetCons' events of the network's spikes (all ranks', sorted by
        (time, gid)), and deliver those due by the epoch's end; returns how many were
        queued. An event due before the epoch's last step raises
        :class:`~hinesbatch.network.parallel.LateSpikeError`.

        An event is due by the epoch's end only when the epoch's one step is longer than
        the delay on the accumulated clock (:func:`~hinesbatch.network.parallel.
        epoch_steps`); it gets the end-of-step delivery NEURON gives it, after the events
        that delivery gave before the exchange.
        """
        step = self._require_run()["step"]
        t_end = self._tgrid[step]
        t_solved = start_of_step_limit(self._tgrid[step - 1], self.dt) if step else INIT_LIMIT
        queued = deliver_remote(gids, times, self._inputs, self._queue, t_solved=t_solved)
        if self._queue.next_time() <= t_end:
            if self.backend == "gpu":
                self._gpu.deliver_until(t_end, step)
            else:
                self._deliver(t_end)
        return queued

    def finish(self):
        """The local recordings (:class:`~.results.Results`, keys with local indices)."""
        run = self._require_run()
        if run["step"] != run["n_steps"]:
            raise RuntimeError(f"the run stopped at step {run['step']} of {run['n_steps']}")
        if self.backend == "gpu":
            self._gpu.finish()
        a = run["arrays"]
        return self._results(a.rows, a.rec_buf, self._tgrid, run["n_steps"])

    @property
    def n_steps(self) -> int:
        """Steps of the run :meth:`begin` set up."""
        return self._require_run()["n_steps"]

    # ---- where spikes go --------------------------------------------------------------
    def _fire(self, source: SpikeSource, ts: float) -> None:
        self._spikes[id(source)].append(ts)
        self._outbox_gids.append(int(self.global_gids[source.gid]))
        self._outbox_times.append(ts)

    def _generator_spike(self, source: int, te: float) -> None:
        s = self._all_sources[source]
        self._spikes[id(s)].append(te)
        self._outbox_gids.append(self._generator_gid[id(s)])
        self._outbox_times.append(te)

    def _point_spike(self, m: str, j: int, te: float) -> None:
        """An artificial cell's ``net_event(te)``: recorded, and to the outbox with its
        gid (its NetCons may live on any rank)."""
        source = self._event_sources.get((m, j))
        if source is None:
            return
        s = self._all_sources[source]
        self._spikes[id(s)].append(te)
        self._outbox_gids.append(self._generator_gid[id(s)])
        self._outbox_times.append(te)

    def _event_target(self, event):
        return self._input_targets[event.target]

    def _receiving(self) -> tuple:
        return self._inputs, self._input_targets

    def _non_finite(self, lay, gid: int, t: float):
        """The engine's error, naming the cell by its global gid."""
        try:
            super()._non_finite(lay, gid, t)
        except NonFiniteStateError as exc:
            g = int(self.global_gids[gid])
            raise NonFiniteStateError(
                f"the membrane potential became non-finite in the cell of gid {g} at "
                f"{exc.location} at t = {exc.t_ms:g} ms", cell=g, location=exc.location,
                t_ms=exc.t_ms) from None

    def _take_outbox(self) -> tuple[np.ndarray, np.ndarray]:
        gids = np.array(self._outbox_gids, dtype=np.int64)
        times = np.array(self._outbox_times, dtype=np.float64)
        self._outbox_gids.clear()
        self._outbox_times.clear()
        return gids, times

    def _require_run(self) -> dict:
        if self._run is None:
            raise RuntimeError("call begin(tstop) first")
        return self._run
