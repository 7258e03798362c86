"""The event queue: NetCon events and spike-generator events, in NEURON's delivery order.

NEURON keeps its events in a splay tree keyed by delivery time ``te``; equal keys leave in
the order they were inserted (first in, first out). :class:`EventQueue` reproduces that
order with a binary heap of ``(te, sequence number, event)``: the sequence number grows by
one per push, so two events with bit-identical ``te`` pop in insertion order.

Worked example::

    q = EventQueue()
    q.push(1.0, target=3, weight=0.5)     # sequence 0
    q.push(0.5, target=1, weight=0.1)     # sequence 1
    q.push(1.0, target=2, weight=0.2)     # sequence 2
    q.pop_until(1.0)  # -> te 0.5 (target 1), te 1.0 (target 3), te 1.0 (target 2)

Which events a step delivers, and when, is the business of :mod:`.delivery`.
"""
from __future__ import annotations

import heapq
import math
from typing import Any, NamedTuple

import numpy as np

__all__ = ["EVENT_KINDS", "Event", "EventQueue", "finite_number"]

#: Kinds of events: ``"net"`` is a NetCon event that acts on a target (a synapse) with a
#: weight; ``"spike"`` is a spike generator's own next spike (NEURON's NetStim or VecStim
#: self-event), whose target is the source id and whose weight is unused; ``"start"`` is
#: NetStim's INITIAL self-event, which queues the first ``"spike"`` at its own time;
#: ``"self"`` is a mechanism's own self-event (NMODL's ``net_send``): it acts on its
#: target like a ``"net"`` event, with its ``flag``.
EVENT_KINDS = ("net", "spike", "start", "self")


class Event(NamedTuple):
    """One queued event.

    Attributes
    ----------
    te : float
        Delivery time [ms].
    target : Any
        What the event acts on: for ``"net"`` events the engine's target id (a synapse
        index), for ``"spike"`` events the spike source's index.
    weight : float
        NetCon weight (µS for ExpSyn and Exp2Syn); 0 for ``"spike"`` events.
    kind : str
        One of :data:`EVENT_KINDS`.
    netcon : int
        The NetCon whose weight vector the event carries (``"net"`` events, and
        ``"self"`` events sent while receiving one); -1 for none (a self-event sent from
        INITIAL).
    flag : float
        NET_RECEIVE's ``flag``: 0 for ``"net"`` events, ``net_send``'s for ``"self"``.
    """

    te: float
    target: Any
    weight: float
    kind: str = "net"
    netcon: int = -1
    flag: float = 0.0


def finite_number(value, what: str) -> float:
    """``value`` as a float; ``TypeError`` naming ``what`` unless it is a real number (not a
    bool), ``ValueError`` unless it is finite."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{what} must be a number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{what} must be finite, got {value}")
    return value


class EventQueue:
    """Events ordered by delivery time; equal times first in, first out (NEURON's order).

    Examples
    --------
    >>> q = EventQueue()
    >>> q.push(2.0, 0, 0.1)
    >>> q.next_time()
    2.0
    >>> [e.te for e in q.pop_until(1.0)]
    []
    """

    __slots__ = ("_heap", "_seq")

    def __init__(self):
        self._heap: list[tuple[float, int, Event]] = []
        self._seq = 0

    def push(self, te: float, target: Any, weight: float = 0.0, *, kind: str = "net",
             netcon: int = -1, flag: float = 0.0) -> None:
        """Queue an event.

        Parameters
        ----------
        te : float
            Delivery time [ms]; finite.
        target : Any
            What it acts on (see :class:`Event`).
        weight : float
            Weight [µS for the built-in synapses]; finite.
        kind : str
            One of :data:`EVENT_KINDS`.
        netcon : int
            The NetCon whose weight vector the event carries, or -1.
        flag : float
            NET_RECEIVE's ``flag`` (``"self"`` events); finite.

        Raises
        ------
        ValueError
            ``te``, ``weight`` or ``flag`` not finite, or an unknown ``kind``.
        TypeError
            ``te`` or ``weight`` not a number.
        """
        te = finite_number(te, "event time te [ms]")
        weight = finite_number(weight, "event weight")
        if kind not in EVENT_KINDS:
            raise ValueError(f"unknown event kind {kind!r}; valid kinds: {', '.join(EVENT_KINDS)}")
        if flag != 0.0:
            flag = finite_number(flag, "event flag")
        heapq.heappush(self._heap, (te, self._seq, Event(te, target, weight, kind,
                                                         int(netcon), flag)))
        self._seq += 1

    def push_netcon(self, te: float, target: Any, weight: float, netcon: int) -> None:
        """Queue a NetCon's ``"net"`` event from values already checked (a spike's time
        plus the NetCon's delay, its weight): :meth:`push` without the checks, which cost
        as much as the rest of a spike's fan-out."""
        heapq.heappush(self._heap, (te, self._seq, Event(te, target, weight, "net", netcon,
                                                         0.0)))
        self._seq += 1

    def pop_next(self, t_limit: float) -> Event | None:
        """Remove and return the earliest event with ``te <= t_limit`` [ms], or None.

        Delivering one event at a time lets events queued during delivery (a spike
        generator's next spike, a NetCon with delay 0) be delivered in the same pass when
        they fall within ``t_limit``, as NEURON's delivery loop does.
        """
        heap = self._heap
        if heap and heap[0][0] <= t_limit:
            return heapq.heappop(heap)[2]
        return None

    def pop_until(self, t_limit: float) -> list[Event]:
        """Remove and return every event with ``te <= t_limit`` [ms], in delivery order.

        Only the events queued before the call are considered; see :meth:`pop_next` for a
        loop that also delivers events queued while delivering.
        """
        heap = self._heap
        out = []
        while heap and heap[0][0] <= t_limit:
            out.append(heapq.heappop(heap)[2])
        return out

    def next_time(self) -> float:
        """Delivery time [ms] of the earliest event; ``inf`` when the queue is empty."""
        return self._heap[0][0] if self._heap else math.inf

    def peek(self) -> Event | None:
        """The event :meth:`pop_next` would return next, left in the queue; None when
        the queue is empty."""
        return self._heap[0][2] if self._heap else None

    def clear(self) -> None:
        """Drop every event (``finitialize`` empties NEURON's queue)."""
        self._heap.clear()
        self._seq = 0

    def __len__(self) -> int:
        return len(self._heap)

    def __repr__(self) -> str:
        return f"EventQueue({len(self)} events, next at {self.next_time()} ms)"
