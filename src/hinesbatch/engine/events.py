"""Spike sources and NetCons of a simulation, as the user holds them: the engine's handles
on :mod:`hinesbatch.network`, which implements NEURON's event rules (the queue, the NetStim
and VecStim generators, NetCon fan-out and delivery) and documents them."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..network import SPIKE_OFFSET, EventQueue, NetStimGenerator, VecStimGenerator

__all__ = ["SPIKE_OFFSET", "EventQueue", "NetCon", "SpikeSource"]


@dataclass(eq=False)
class SpikeSource:
    """A spike source: a threshold on a cell's node (NEURON's PreSyn), a NetStim, a
    VecStim or a point process whose NET_RECEIVE calls ``net_event``.

    Attributes
    ----------
    kind : str
        ``"threshold"``, ``"NetStim"``, ``"VecStim"``, ``"net_event"`` (a point process
        on a cell) or ``"artificial"`` (an artificial cell).
    gid : int
        The cell's gid (threshold and net_event sources), or N, N+1, ... for stimulators
        in creation order.
    name : str
        ``"0:soma[0](0.5)"``, ``"NetStim[0]"`` or ``"0:NetStim2[0]"`` (the point
        process's name on its cell).
    node : int
        The watched node within the cell (threshold sources).
    threshold : float
        [mV] (threshold sources).
    generator : NetStimGenerator or VecStimGenerator or None
        The spike train of a NetStim or VecStim (:mod:`hinesbatch.network.sources`).
    netcons : list of NetCon
        The NetCons leaving this source, in creation order.
    point : PointProcess or ArtificialCell or None
        The point process (net_event sources) or the artificial cell.
    """

    kind: str
    gid: int
    name: str
    node: int = -1
    threshold: float = 10.0
    generator: NetStimGenerator | VecStimGenerator | None = None
    netcons: list = field(default_factory=list)
    index: int = 0
    point: object = None

    def __repr__(self) -> str:
        return f"SpikeSource({self.kind}, {self.name!r}, gid={self.gid})"


@dataclass(eq=False)
class NetCon:
    """A connection from a spike source to a synapse (NEURON's NetCon).

    Attributes
    ----------
    source : SpikeSource
    target : PointProcess
    weight : float or tuple of float
        [µS] for ExpSyn/Exp2Syn; or the weight vector (NEURON's ``NetCon.weight``) for a
        target whose NET_RECEIVE takes more arguments. After a run of the CPU or GPU
        engine it holds what the run left in the NetCon's weight vector (a tuple where
        the target takes more than a weight), which the next run starts from, as
        NEURON's ``NetCon.weight`` after NET_RECEIVE wrote it.
    delay : float
        [ms], >= 0.
    """

    source: SpikeSource
    target: object
    weight: float | tuple
    delay: float
    index: int = 0

    def __repr__(self) -> str:
        cell = getattr(self.target, "cell", None)
        where = f" of cell {cell.name or ''}" if cell is not None else ""
        return (f"NetCon[{self.index}]({self.source.name} -> {self.target.name}{where}, "
                f"weight={self.weight}, delay={self.delay})")
