"""Networks: NEURON's event rules in one process, and networks split over MPI ranks.

Modules::

    events.py        EventQueue, Event         time-ordered, FIFO among equal times
    delivery.py      acting_step, deliver, ...  NEURON's accumulated t and delivery points
    sources.py       ThresholdDetector, threshold_check, NetStimGenerator, VecStimGenerator
    netcon.py        NetConTable               source -> (target, weight, delay) fan-out
    description.py   Network                   cells by gid, generators, connections
                                               (run by hinesbatch.run_network, docs/networks.md)
    distribution.py  distribute, check_network  LPT by compartments; checks before a run
    parallel.py      world, exchange_spikes    communicators, spike exchange, aborts
    ringtest.py      ringtest                  NEURON's ringtest as a Network
    random123.py     Random123Stream           NEURON's Random123 draws

A step of an engine, with these pieces (NEURON 9.0.2's ``nrn_fixed_step``)::

    fired, ts = detector.check(v, t)                 # 1. threshold detection at t_n
    for s, t_s in zip(fired, ts):
        netcons.on_spike(s, t_s, queue)
    deliver(queue, start_of_step_limit(t, dt), ...)  # 2. te <= t_n + dt/2
    t_mid, t = advance_time(t, dt)                   # 3.-7. assemble at t_mid, solve
    ...                                              # 8.-9. states, record at t_{n+1}
    deliver(queue, end_of_step_limit(t), ...)        # 10. te <= t_{n+1}
"""
from .delivery import (
    INIT_LIMIT,
    acting_step,
    advance_time,
    deliver,
    end_of_step_limit,
    keeps_stepping,
    prime_generators,
    start_of_step_limit,
    time_grid,
)
from .description import Network
from .distribution import NetworkCheckError
from .events import EVENT_KINDS, Event, EventQueue
from .netcon import NetConTable
from .sources import (
    SPIKE_OFFSET,
    NetStimGenerator,
    ThresholdDetector,
    VecStimGenerator,
    threshold_check,
)

__all__ = [
    # the queue
    "Event", "EventQueue", "EVENT_KINDS",
    # time and delivery
    "INIT_LIMIT", "advance_time", "start_of_step_limit", "end_of_step_limit",
    "keeps_stepping", "time_grid", "acting_step", "prime_generators", "deliver",
    # sources
    "SPIKE_OFFSET", "ThresholdDetector", "threshold_check", "NetStimGenerator",
    "VecStimGenerator",
    # connections
    "NetConTable",
    # networks over ranks
    "Network", "NetworkCheckError",
]
