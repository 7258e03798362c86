"""When events act: NEURON's accumulated time and the two delivery points of a step.

NEURON's fixed step advances ``t`` in two half steps, ``t_mid = t_n + dt/2`` and
``t_{n+1} = t_mid + dt/2`` (:func:`advance_time`), so after ``n`` steps ``t`` is not
``n*dt``: at dt 0.025, ``t_200 = 5.0000000000000373`` and ``t_800 = 19.9999999999994``.
A run to ``tstop`` steps while ``t < tstop - dt/2``.

One step ``t_n -> t_{n+1}`` meets the event queue twice:

1. at its start, after threshold detection, it delivers every event with
   ``te <= t_n + dt/2`` (:func:`start_of_step_limit`);
2. at its end, after the states are updated and recorded, every event with
   ``te <= t_{n+1}`` (:func:`end_of_step_limit`).

``finitialize`` delivers the events with ``te <= 0`` (:data:`INIT_LIMIT`) before the
sample at t = 0. An event therefore acts on the step ``n`` with the smallest
``t_n + dt/2 >= te`` (:func:`acting_step`) and first shows in the sample at ``t_{n+1}``.
Ties follow the accumulated t, not ``round(te/dt)``:

================================  ======  ========================================
event                             step    why
================================  ======  ========================================
NetStim spike 20, delay 0.0124    800     20.0124 <= t_800 + dt/2 = 20.0124999999994
NetStim spike 20, delay 0.0125    801     20.0125 > 20.0124999999994
NetStim spike 3.0125, delay 0     120     t_120 + dt/2 = 3.0125000000000091
threshold at t_140, delay 0       140     ts = t_140 + 1e-10 = 3.5000000001
threshold at t_140, delay 0.0125  141     the 1e-10 passes t_140 + dt/2
================================  ======  ========================================
"""
from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from .events import Event, EventQueue, finite_number
from .netcon import NetConTable

__all__ = ["INIT_LIMIT", "advance_time", "start_of_step_limit", "end_of_step_limit",
           "keeps_stepping", "time_grid", "acting_step", "prime_generators", "deliver"]

#: ``finitialize`` delivers the events with ``te <= INIT_LIMIT`` [ms] before the t = 0 sample.
INIT_LIMIT = 0.0


def advance_time(t: float, dt: float) -> tuple[float, float]:
    """One step of NEURON's clock: ``(t_mid, t_next)`` [ms] from ``t`` [ms] and ``dt`` [ms].

    ``t_mid = t + dt/2`` (where the step is assembled) and ``t_next = t_mid + dt/2``, two
    roundings as NEURON's two ``t += 0.5*dt``.
    """
    half = 0.5 * dt
    t_mid = t + half
    return t_mid, t_mid + half


def start_of_step_limit(t_n: float, dt: float) -> float:
    """Delivery limit [ms] at the start of the step from ``t_n``: ``t_n + dt/2``.

    Bit for bit the step's ``t_mid`` of :func:`advance_time`.
    """
    return t_n + 0.5 * dt


def end_of_step_limit(t_next: float) -> float:
    """Delivery limit [ms] at the end of a step: the accumulated ``t_{n+1}`` itself."""
    return float(t_next)


def keeps_stepping(t: float, tstop: float, dt: float) -> bool:
    """NEURON's run-length rule: another step follows ``t`` iff ``t < tstop - dt/2``."""
    return t < tstop - dt / 2.0


def time_grid(tstop: float, dt: float) -> np.ndarray:
    """The accumulated times ``t_0 = 0, t_1, ..., t_N`` [ms] of a run to ``tstop``.

    Parameters
    ----------
    tstop : float
        End time [ms], finite and >= 0.
    dt : float
        Time step [ms], > 0.

    Returns
    -------
    (N + 1,) float64
        The sample times; ``N`` steps are taken (while ``t < tstop - dt/2``).
    """
    from ..sim.stimuli import TimeGrid  # the one implementation of the accumulated grid

    return TimeGrid(tstop, dt).arrays()[0]


def acting_step(te: float, dt: float) -> int:
    """Index ``n`` of the step an event at ``te`` [ms] acts on, walking the accumulated t.

    The smallest ``n`` with ``te <= t_n + dt/2``; 0 for ``te <= 0`` (those are delivered
    by ``finitialize`` and already show in the t = 0 sample). The event first shows in the
    sample at ``t_{n+1}``.
    """
    te = finite_number(te, "event time te [ms]")
    dt = finite_number(dt, "dt [ms]")
    if dt <= 0:
        raise ValueError(f"dt must be > 0 ms, got {dt}")
    if te <= INIT_LIMIT:
        return 0
    from ..sim.stimuli import TimeGrid

    n = 0
    for t_mid, _ in TimeGrid(te + 2.0 * dt, dt).chunks():
        hit = np.flatnonzero(t_mid >= te)
        if hit.size:
            return n + int(hit[0])
        n += t_mid.size
    # The grid to te + 2 dt ends past te; reaching here means dt is lost in te's
    # rounding (te/dt beyond 2**52), where steps cannot advance t at all.
    raise ValueError(f"te = {te} ms is out of reach with dt = {dt} ms: t + dt/2 does not grow")


def prime_generators(queue: EventQueue, generators: Mapping[int, object]) -> None:
    """Queue the first spike of every generator (``finitialize``), in the mapping's order.

    ``generators`` maps a source id to a :class:`~.sources.NetStimGenerator` or
    :class:`~.sources.VecStimGenerator`; each is reset. A NetStim's first spike is queued
    as a ``"start"`` event (netstim.mod's INITIAL self-event), a VecStim's as ``"spike"``.
    """
    for source, gen in generators.items():
        gen.reset()
        te = gen.next_spike()
        if te is not None:
            queue.push(te, source, kind="start" if gen.two_stage_start else "spike")


def deliver(queue: EventQueue, t_limit: float, *, netcons: NetConTable,
            on_net: Callable[[Event], None], generators: Mapping[int, object] | None = None,
            on_spike: Callable[[int, float], None] | None = None) -> int:
    """Deliver every event with ``te <= t_limit`` [ms], in order, as NEURON's delivery loop.

    Events queued while delivering (a generator's next spike, NetCons with delay 0) are
    delivered in the same call when they fall within ``t_limit``.

    Parameters
    ----------
    queue : EventQueue
    t_limit : float
        :func:`start_of_step_limit`, :func:`end_of_step_limit` or :data:`INIT_LIMIT` [ms].
    netcons : NetConTable
        Fans out generator spikes.
    on_net : callable
        ``on_net(event)`` applies a ``"net"`` or ``"self"`` event to its target
        (NET_RECEIVE); self-events it queues (``net_send``) with ``te <= t_limit`` are
        delivered in the same call.
    generators : mapping of int to generator, optional
        Spike generators by source id, for ``"start"`` and ``"spike"`` events.
    on_spike : callable, optional
        ``on_spike(source, ts)`` is told of each generator spike (to record it).

    Returns
    -------
    int
        Number of events delivered.
    """
    count = 0
    while (event := queue.pop_next(t_limit)) is not None:
        count += 1
        if event.kind == "net" or event.kind == "self":
            on_net(event)
        elif event.kind == "start":
            queue.push(event.te, event.target, kind="spike")
        else:
            source = event.target
            if generators is None or source not in generators:
                raise ValueError(f"a spike event at {event.te} ms names source {source!r}, "
                                 "which is not among the generators")
            if on_spike is not None:
                on_spike(source, event.te)
            netcons.on_spike(source, event.te, queue)
            te = generators[source].next_spike()
            if te is not None:
                queue.push(te, source, kind="spike")
    return count
