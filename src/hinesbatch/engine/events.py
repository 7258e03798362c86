"""Spike sources and NetCons of a simulation, with NEURON's event rules
(NEURON-COMPAT-ACTIVE §6): the engine's side of :mod:`hinesbatch.network`."""
from __future__ import annotations

import heapq
import itertools
import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["SPIKE_OFFSET", "EventQueue", "NetCon", "SpikeSource"]

#: NEURON adds 1e-10 ms to a threshold crossing's time (PreSyn::send).
SPIKE_OFFSET = 1e-10

try:  # the project's event queue, when present
    from ..network import EventQueue
except ImportError:  # pragma: no cover - a minimal queue with the same interface
    from typing import Any, NamedTuple

    class Event(NamedTuple):
        te: float
        target: Any
        weight: float
        kind: str

    class EventQueue:
        """Time-ordered events, FIFO among equal times (NEURON's splay tree)."""

        def __init__(self):
            self._heap: list = []
            self._seq = itertools.count()

        def push(self, te, target, weight=0.0, *, kind="net"):
            heapq.heappush(self._heap, (float(te), next(self._seq),
                                        Event(float(te), target, float(weight), kind)))

        def pop_until(self, t_limit):
            out = []
            while self._heap and self._heap[0][0] <= t_limit:
                out.append(heapq.heappop(self._heap)[2])
            return out

        def next_time(self):
            return self._heap[0][0] if self._heap else math.inf

        def clear(self):
            self._heap.clear()

        def __len__(self):
            return len(self._heap)


@dataclass(eq=False)
class SpikeSource:
    """A spike source: a threshold on a cell's node (NEURON's PreSyn), a NetStim or a
    VecStim.

    Attributes
    ----------
    kind : str
        ``"threshold"``, ``"NetStim"`` or ``"VecStim"``.
    gid : int
        The cell's gid, or N, N+1, ... for stimulators in creation order.
    name : str
        ``"0:soma[0](0.5)"`` or ``"NetStim[0]"``.
    """

    kind: str
    gid: int
    name: str
    node: int = -1
    threshold: float = 10.0
    params: dict = field(default_factory=dict)
    times: np.ndarray | None = None
    netcons: list = field(default_factory=list)
    index: int = 0

    def __repr__(self) -> str:
        return f"SpikeSource({self.kind}, {self.name!r}, gid={self.gid})"


@dataclass(eq=False)
class NetCon:
    """A connection from a spike source to a synapse (NEURON's NetCon).

    Attributes
    ----------
    source : SpikeSource
    target : PointProcess
    weight : float
        [µS] for ExpSyn/Exp2Syn.
    delay : float
        [ms], >= 0.
    """

    source: SpikeSource
    target: object
    weight: float
    delay: float
    index: int = 0

    def __repr__(self) -> str:
        return (f"NetCon[{self.index}]({self.source.name} -> {self.target.name} of cell "
                f"{self.target.cell.name or ''}, weight={self.weight}, delay={self.delay})")


class StimulatorState:
    """Self-events of NetStim (netstim.mod with noise 0) and VecStim (vecevent.mod)."""

    def __init__(self, source: SpikeSource):
        self.source = source
        self.ispike = 0
        self.index = 0

    def initial(self, queue: EventQueue) -> None:
        s = self.source
        if s.kind == "NetStim":
            start, interval, number = (s.params[k] for k in ("start", "interval", "number"))
            noise = s.params.get("noise", 0.0)
            if start >= 0 and number > 0:
                event = start + _invl(interval) - interval * (1.0 - noise)
                if event < 0:
                    event = 0.0
                queue.push(0.0 + event, self, kind="start")
        else:
            self.index = 0
            if len(s.times):
                queue.push(0.0 + (float(s.times[0]) - 0.0), self, kind="spike")
                self.index = 1

    def receive(self, te: float, kind: str, queue: EventQueue, fire) -> None:
        """Handle a self-event at ``te``; ``fire(te)`` sends a spike."""
        s = self.source
        if s.kind == "NetStim":
            if kind == "start":
                self.ispike = 0
                queue.push(te + 0.0, self, kind="spike")
                return
            self.ispike += 1
            fire(te)
            if self.ispike < s.params["number"]:
                queue.push(te + _invl(s.params["interval"]), self, kind="spike")
        else:
            fire(te)
            if self.index < len(s.times):
                etime = float(s.times[self.index])
                self.index += 1
                queue.push(te + (etime - te), self, kind="spike")


def _invl(mean: float) -> float:
    return 0.01 if mean <= 0.0 else mean
