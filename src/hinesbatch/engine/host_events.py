"""The host's side of NEURON's events in a :class:`~.simulation.Simulation`: the run's
event queue, NetCons and spike generators, spikes recorded and sent, NET_RECEIVE of the
synapses and artificial cells, and the recorded histories of artificial cells.

The backends run the membrane; events act between their stretches of steps (the CPU loop,
:mod:`.cpu_loop`) or are handed to the device for its next epoch (:mod:`.gpu.runner`),
and every backend calls these methods for them.
"""
from __future__ import annotations

import math

from .. import mechanisms as _mechanisms
from ..network import NetConTable, deliver, prime_generators
from .artificial import ArtificialCell
from .events import EventQueue, SpikeSource

__all__ = ["HostEvents"]


class HostEvents:
    """Events on the host (a mixin of :class:`~.simulation.Simulation`, whose model it
    reads: its stimulators, point sources, NetCons, layout, artificial cells, recordings,
    receiver and WATCH conditions)."""

    def _events(self, sources: list[SpikeSource]) -> None:
        """The run's event queue, NetCons and generators (:mod:`hinesbatch.network`), with
        the generators' first spikes queued (``finitialize``).

        Source ids are the positions in ``sources`` (threshold sources) followed by the
        NetStims, VecStims and artificial cells in creation order, then the point
        processes' sources (:meth:`point_source`); target ids number the synapses and
        artificial cells in the order their first NetCon was made."""
        self._all_sources = sources + self._stimulators + self._point_sources
        ids = {id(s): k for k, s in enumerate(self._all_sources)}
        self._source_ids = ids
        self._spikes = {id(s): [] for s in self._all_sources}
        self._targets, target_ids = [], {}
        self._netcon_table = NetConTable()
        for nc in self.netcons:
            if id(nc.target) not in target_ids:
                target_ids[id(nc.target)] = len(self._targets)
                self._targets.append(nc.target)
            self._netcon_table.add(ids[id(nc.source)], target_ids[id(nc.target)],
                                   weight=nc.weight, delay=nc.delay)
        self._generators = {ids[id(s)]: s.generator for s in self._stimulators
                            if s.generator is not None}
        self._event_sources = {self._layout.pp_index[id(s.point)]: ids[id(s)]
                               for s in self._point_sources}
        self._event_sources.update({self._artificial.instance(s.point): ids[id(s)]
                                    for s in self._stimulators if s.kind == "artificial"})
        self._queue = EventQueue()
        prime_generators(self._queue, self._generators)

    def _fire(self, source: SpikeSource, ts: float) -> None:
        """A threshold source fires at ``ts`` [ms]: record it and queue its NetCons."""
        self._spikes[id(source)].append(ts)
        self._netcon_table.on_spike(self._source_ids[id(source)], ts, self._queue)

    def _deliver(self, limit: float) -> None:
        """Deliver every event with ``te <= limit`` [ms] (:func:`hinesbatch.network.deliver`)."""
        deliver(self._queue, limit, netcons=self._netcon_table, on_net=self._net_receive,
                generators=self._generators, on_spike=self._generator_spike)

    def _event_target(self, event):
        """The synapse (PointProcess) a ``"net"`` event of the queue is for."""
        return self._targets[event.target]

    def _receiving(self) -> tuple:
        """The NetCons whose events this engine receives and their targets (by id)."""
        return self._netcon_table, self._targets

    def _target_instance(self, target: int) -> tuple:
        """``(mechanism name, instance)`` of the target id ``target``."""
        return self._instance_of(self._receiving()[1][target])

    def _instance_of(self, target) -> tuple:
        """``(mechanism name, instance)`` of a point process or an artificial cell."""
        if isinstance(target, ArtificialCell):
            return self._artificial.instance(target)
        return self._layout.pp_index[id(target)]

    def _net_receive(self, event) -> None:
        """NET_RECEIVE for a ``"net"`` or ``"self"`` event (:mod:`.receive`)."""
        if event.kind == "self":
            if len(event.target) == 3 and not self._watches.take(event.target):
                return          # a WATCH event its instance's new conditions removed
            m, j = event.target[:2]
        else:
            m, j = self._instance_of(self._event_target(event))
        self._receiver.receive(event, m, j, self._receive_table, self._queue)
        for field, te, values in self._histories.get((m, j), ()):
            te.append(event.te)
            values.append(float(self._artificial.data[m][field, j]))

    def _start_histories(self) -> None:
        """The recorded artificial cells' values after initialization (before the events
        due at t = 0), each history keyed by its recording."""
        self._histories: dict = {}       # (mechanism, instance) -> [(field, te, values)]
        self._history_of: dict = {}      # recording key -> (te, values)
        for key, (what, cell, var, _, _) in self._recordings.items():
            if what != "art":
                continue
            m, j = self._artificial.instance(cell)
            field = _mechanisms.get(m).field_names.index(var)
            te, values = [-math.inf], [float(self._artificial.data[m][field, j])]
            self._histories.setdefault((m, j), []).append((field, te, values))
            self._history_of[key] = (te, values)

    def _host_event(self, event) -> bool:
        """Run ``event`` now, on the host, where it is for an artificial cell (whose
        NET_RECEIVE runs on the host for every backend); whether it was."""
        if event.kind == "self":
            art = event.target[0] in self._artificial.data
        else:
            art = isinstance(self._event_target(event), ArtificialCell)
        if art:
            self._net_receive(event)
        return art

    def _point_spike(self, m: str, j: int, te: float) -> None:
        """Instance ``j`` of mechanism ``m`` called ``net_event(te)``: record the spike
        and queue its NetCons (NEURON's ``PreSyn::send``); nothing without a source."""
        source = self._event_sources.get((m, j))
        if source is not None:
            self._spikes[id(self._all_sources[source])].append(te)
            self._netcon_table.on_spike(source, te, self._queue)

    def _generator_spike(self, source: int, te: float) -> None:
        self._spikes[id(self._all_sources[source])].append(te)
