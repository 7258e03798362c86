"""NET_RECEIVE on the CPU engine: weight vectors, ``flag`` and ``net_send`` self-events.

A mechanism's NET_RECEIVE (``_net_receive_<m>``, :mod:`hinesbatch.mechanisms.codegen`)
runs with the event's time as ``t``, its ``flag`` and the weight vector it carries, which
it may update in place; it returns the self-events it sent (``net_send``) and the spikes
it emitted (``net_event``) as rows ``te, flag, kind``, and :class:`Receiver` queues them,
in that order, on the run's queue: a self-event to the instance, a spike through the
NetCons whose source is the instance (``on_event``). A NET_RECEIVE that draws random
numbers takes the run's stream; events are delivered one at a time, so its draws come in
NEURON's order.

NEURON's rules, reproduced here:

- each NetCon has a weight vector of as many entries as its target's NET_RECEIVE has
  arguments; at initialization NET_RECEIVE's own INITIAL block runs for every NetCon with
  that NetCon's vector (``t`` = 0), and without one the entries after the first are set
  to 0 (:meth:`Receiver.initialize_weights`);
- a self-event acts on the instance that sent it, with its ``flag``, through the same
  queue as NetCon events (equal times in insertion order, delivered within the same
  delivery pass when due), and carries the weight vector of the event that sent it: the
  NetCon's own array, so what NET_RECEIVE writes there persists; one sent from INITIAL
  carries no NetCon, and NET_RECEIVE sees zeros;
- ``net_send`` from a point process's INITIAL queues its events after the spike
  generators' first ones (NEURON's NetStim, a built-in mechanism type, initializes
  first), in mechanism and instance order (:meth:`Receiver.initial_sends`);
- an assigned ``weight`` is entry 0 of the NetCon's own vector: events of that NetCon
  delivered later (already queued ones included) carry the new weight;
- FOR_NETCONS visits the NetCons that target the instance, as NEURON's
  ``fornetcon_prepare`` lists them: by source, sources in the order of their first
  NetCon, and each source's NetCons in creation order; the loop and the event work on the
  same vectors (:meth:`NetConTable.share_weights`);
- ``WATCH`` rows go to ``on_watch(m, j, rows)`` (the rows ``threshold, flag`` of one
  NET_RECEIVE call, in statement order; :mod:`.watch` keeps them).
"""
from __future__ import annotations

import numpy as np

from ..network import EventQueue, NetConTable

__all__ = ["EventConstructError", "Receiver", "SelfEventError", "netcons_order"]


class SelfEventError(ValueError):
    """A ``net_send`` with a negative delay (NEURON stops with ``net_send td-t``)."""


class EventConstructError(ValueError):
    """A mechanism uses an event construct (``WATCH``, ``FOR_NETCONS``, an assigned
    NetCon weight) that the chosen engine does not run; raised before the run.

    Attributes
    ----------
    mechanism : str
    construct : str
    engine : str
    """

    def __init__(self, message: str, *, mechanism: str, construct: str, engine: str):
        super().__init__(message)
        self.mechanism, self.construct, self.engine = mechanism, construct, engine


def netcons_order(sources, targets) -> dict:
    """NetCon indices by target, in NEURON's FOR_NETCONS order.

    Parameters
    ----------
    sources, targets : (n,) int arrays
        Each NetCon's source and target id, NetCons in creation order.

    Returns
    -------
    dict of int to list of int
        Target id -> its NetCons, by source (sources in the order of their first NetCon),
        then in creation order.

    Examples
    --------
    >>> netcons_order(np.array([5, 2, 5, 2]), np.array([0, 0, 0, 1]))
    {0: [0, 2, 1], 1: [3]}
    """
    first: dict = {}
    for i, s in enumerate(np.asarray(sources).tolist()):
        first.setdefault(s, i)
    out: dict = {}
    order = sorted(range(len(sources)), key=lambda i: (first[int(sources[i])], i))
    for i in order:
        out.setdefault(int(targets[i]), []).append(i)
    return dict(sorted(out.items()))


class Receiver:
    """The NET_RECEIVE functions of a run's mechanisms and their scratch arrays.

    Parameters
    ----------
    km : KernelModule or sequence of them
        The run's generated modules (each with ``module`` and ``codes``: one
        MechanismCode per mechanism), the artificial cells' (:mod:`.artificial`)
        included.
    data : dict of str to ndarray
        Each mechanism's ``fields × instances`` array, updated in place.
    dt, celsius : float
        [ms], [degC].
    stream : ndarray, optional
        The random-number stream's state (one int64), for NET_RECEIVE blocks that draw.
    on_event : callable, optional
        ``on_event(m, j, te)``: instance ``j`` of mechanism ``m`` called ``net_event(te)``
        (``te`` [ms]); without it a ``net_event`` sends nothing (a point process no NetCon
        leaves).
    on_watch : callable, optional
        ``on_watch(m, j, rows)``: instance ``j`` of mechanism ``m`` ran WATCH statements,
        ``rows`` a list of ``(threshold [mV], flag)``; needed where a mechanism has any.
    """

    def __init__(self, km, data: dict, dt: float, celsius: float, stream=None,
                 on_event=None, on_watch=None):
        self.data, self.dt, self.celsius = data, float(dt), float(celsius)
        self.on_event, self.on_watch = on_event, on_watch
        modules = list(km) if isinstance(km, (list, tuple)) else [km]
        codes = [(k, code) for k in modules for code in k.codes]
        self.mechs = {code.mech.name: code.mech for _, code in codes}
        self._receive = {}
        self._init = {}
        self._netcons = {code.mech.name for _, code in codes
                         if code.mech.net_receive and code.receive_netcons}
        self._blocks: dict = {}       # (m, j) -> weight vectors of its NetCons
        for k, code in codes:
            m = code.mech.name
            if code.mech.net_receive:
                rs = (stream,) if code.receive_stream else ()
                self._receive[m] = (getattr(k.module, f"_net_receive_{m}"),
                                    np.empty((max(code.receive_sends, 1), 3)), rs)
            if code.mech.net_receive_initial:
                self._init[m] = getattr(k.module, f"_net_init_{m}")

    def initialize_weights(self, table: NetConTable, where) -> None:
        """Size every NetCon's weight vector to its target's and run NET_RECEIVE's
        INITIAL on it (or set the entries after the first to 0).

        Parameters
        ----------
        table : NetConTable
        where : callable
            ``where(target_id) -> (mechanism name, instance)``.
        """
        found: dict = {}
        for i, t in enumerate(table.targets.tolist()):
            if t not in found:
                found[t] = where(t)
            m, j = found[t]
            size = self.mechs[m].weight_size
            if size == 1 and table.weight_vector(i).size == 1:
                continue            # a weight alone: nothing to size or initialize
            table.resize_weights(i, size)
            w = table.weight_vector(i)
            if m in self._init:
                self._init[m](self.data[m], j, w, 0.0, self.dt, self.celsius)
            else:
                w[1:] = 0.0
        self._blocks = {}
        if self._netcons:
            for t, netcons in netcons_order(table.sources, table.targets).items():
                m, j = found[t]
                if m in self._netcons:
                    self._blocks[(m, j)] = table.share_weights(netcons,
                                                               self.mechs[m].weight_size)

    def initial_sends(self, queue: EventQueue, sends) -> None:
        """Queue the self-events INITIAL blocks sent: ``sends`` holds ``(mechanism name,
        rows)`` in mechanism order, each row ``instance, te, flag``."""
        for m, rows in sends:
            for j, te, flag in rows:
                self._check(m, int(j), te, 0.0)
                queue.push(te, (m, int(j)), 0.0, kind="self", netcon=-1, flag=flag)

    def receive(self, event, m: str, j: int, table: NetConTable | None,
                queue: EventQueue) -> None:
        """Run NET_RECEIVE of instance ``j`` of mechanism ``m`` for ``event`` and queue
        the self-events it sends.

        ``table`` holds the NetCon ``event.netcon`` whose weight vector the event
        carries (None or ``netcon == -1``: a vector of zeros).
        """
        fn, rows, rs = self._receive[m]
        if event.netcon >= 0 and table is not None:
            w = table.weight_vector(event.netcon)
        else:
            w = np.zeros(self.mechs[m].weight_size)
        fw = ()
        if m in self._netcons:
            fw = (self._blocks.get((m, j)),)
            if fw[0] is None:       # no NetCon targets the instance
                fw = (np.zeros((0, self.mechs[m].weight_size)),)
        sent = fn(self.data[m], j, w, event.te, self.dt, self.celsius, event.flag, *rs,
                  *fw, rows)
        watches = []
        for r in range(sent):
            te, flag = float(rows[r, 0]), float(rows[r, 1])
            if rows[r, 2] == 2.0:
                watches.append((te, flag))
                continue
            if rows[r, 2] != 0.0:
                if self.on_event is not None:
                    self.on_event(m, j, te)
                continue
            self._check(m, j, te, event.te)
            queue.push(te, (m, j), w[0], kind="self", netcon=event.netcon, flag=flag)
        if watches:
            self.on_watch(m, j, watches)

    def _check(self, m: str, j: int, te: float, t: float) -> None:
        if not te >= t:
            raise SelfEventError(f"{m}[{j}]: net_send at t = {t!r} ms with delay "
                                 f"{te - t!r} ms: the delay must be >= 0 (and finite)")
