"""Spike sources and NetCons of a simulation, with NEURON's event rules
(``docs/simulator.md``): the engine's side of :mod:`hinesbatch.network`."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..network import SPIKE_OFFSET, EventQueue

__all__ = ["SPIKE_OFFSET", "EventQueue", "NetCon", "SpikeSource"]


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
