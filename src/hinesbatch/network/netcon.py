"""NetCons: connections from spike sources to targets, with weight and delay.

Each spike of a source at ``ts`` [ms] queues one ``"net"`` event per NetCon from that
source, at ``te = ts + delay``, in the order the NetCons were created. NEURON does the
same; when more than two NetCons leave one source with one delay it queues a single event
for the source and fans it out to the NetCons, in creation order, when it is delivered.
The timing and order are the same as one event per NetCon queued together: the NetCons'
events are queued one after the other, so no other event can fall between them.

Each NetCon carries a weight vector (NEURON's ``NetCon.weight``): entry 0 is the weight,
the others are per-NetCon values that a target's NET_RECEIVE reads and writes (a
facilitating synapse's last release time, say). Events carry the NetCon's index, so the
target's NET_RECEIVE works on the NetCon's own vector (:meth:`NetConTable.weight_vector`).

Sources and targets are integer ids chosen by the engine (a suggestion: threshold
sources first, numbered as in their :class:`~.sources.ThresholdDetector`, then the spike
generators).
"""
from __future__ import annotations

import math

import numpy as np

from .events import EventQueue, finite_number

__all__ = ["NetConTable"]


def _index(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an integer id, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{what} must be >= 0, got {value}")
    return int(value)


class NetConTable:
    """Every NetCon of a network: source -> (target, weight, delay), in creation order.

    Examples
    --------
    >>> table = NetConTable()
    >>> table.add(0, 5, weight=0.01, delay=1.0)
    0
    >>> q = EventQueue()
    >>> table.on_spike(0, 3.5000000001, q)
    1
    >>> q.pop_until(10.0)[0]
    Event(te=4.5000000001, target=5, weight=0.01, kind='net', netcon=0, flag=0.0)
    """

    def __init__(self):
        self._sources: list[int] = []
        self._targets: list[int] = []
        self._weights: list[np.ndarray] = []      # each NetCon's weight vector
        self._delays: list[float] = []
        self._by_source: dict[int, list[int]] = {}
        self._source_ids: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self._sources)

    def __repr__(self) -> str:
        return f"NetConTable({len(self)} NetCons from {len(self._by_source)} sources)"

    def add(self, source: int, target: int, *, weight=0.0, delay: float = 1.0) -> int:
        """Add a NetCon and return its index (NEURON's defaults: weight 0, delay 1 ms).

        Parameters
        ----------
        source, target : int
            Source id and target id (>= 0).
        weight : float or sequence of float
            Weight (µS for ExpSyn and Exp2Syn), or the whole weight vector (entry 0 the
            weight); finite.
        delay : float
            Delay [ms]; finite and >= 0.

        Raises
        ------
        ValueError
            A negative or non-finite delay, or a non-finite weight; the message names the
            NetCon by its index.
        """
        i = len(self)
        source = _index(source, f"NetCon[{i}] source")
        target = _index(target, f"NetCon[{i}] target")
        weight = _check_weight(weight, i)
        delay = _check_delay(delay, i)
        self._sources.append(source)
        self._targets.append(target)
        self._weights.append(weight)
        self._delays.append(delay)
        self._by_source.setdefault(source, []).append(i)
        self._source_ids = None
        return i

    def source_ids(self) -> np.ndarray:
        """The sources that have NetCons here, sorted (int64; kept until the next add)."""
        if self._source_ids is None:
            self._source_ids = np.array(sorted(self._by_source), dtype=np.int64)
        return self._source_ids

    def set_weight(self, netcon: int, weight) -> None:
        """Set the weight of NetCon ``netcon`` (a number: entry 0; a sequence: the whole
        weight vector)."""
        self._weights[self._check(netcon)] = _check_weight(weight, netcon)

    def weight_vector(self, netcon: int) -> np.ndarray:
        """The weight vector of NetCon ``netcon`` (float64, entry 0 the weight): the
        array itself, which NET_RECEIVE updates in place."""
        return self._weights[self._check(netcon)]

    def resize_weights(self, netcon: int, size: int) -> None:
        """Give NetCon ``netcon`` a weight vector of ``size`` entries: the given ones
        kept, the others 0 (the size is the target's, NEURON's NET_RECEIVE arguments).

        Raises
        ------
        ValueError
            The NetCon was given more entries than ``size``.
        """
        w = self._weights[self._check(netcon)]
        if w.size > size:
            raise ValueError(f"NetCon[{netcon}] has a weight vector of {w.size} entries "
                             f"but its target's NET_RECEIVE takes {size}")
        if w.size < size:
            self._weights[netcon] = np.concatenate([w, np.zeros(size - w.size)])

    def share_weights(self, netcons, size: int) -> np.ndarray:
        """Make the weight vectors of ``netcons`` (indices) the rows of one array and
        return it: ``(len(netcons), size)`` float64, row ``r`` the vector of
        ``netcons[r]``, which :meth:`weight_vector` gives from then on as a view of that
        row (what NET_RECEIVE writes through either is the same value, as NEURON's
        FOR_NETCONS and the event's own weight vector are).

        Raises
        ------
        ValueError
            A NetCon's weight vector does not have ``size`` entries.
        """
        netcons = [self._check(int(i)) for i in netcons]
        block = np.zeros((len(netcons), int(size)))
        for r, i in enumerate(netcons):
            w = self._weights[i]
            if w.size != size:
                raise ValueError(f"NetCon[{i}] has a weight vector of {w.size} entries, "
                                 f"not {size}")
            block[r] = w
            self._weights[i] = block[r]
        return block

    def set_delay(self, netcon: int, delay: float) -> None:
        """Set the delay [ms] of NetCon ``netcon``."""
        self._delays[self._check(netcon)] = _check_delay(delay, netcon)

    def _check(self, netcon: int) -> int:
        if not 0 <= netcon < len(self):
            raise IndexError(f"NetCon[{netcon}] does not exist ({len(self)} NetCons)")
        return netcon

    def of_source(self, source: int) -> list[int]:
        """Indices of the NetCons from ``source``, in creation order."""
        return list(self._by_source.get(source, ()))

    def on_spike(self, source: int, ts: float, queue: EventQueue) -> int:
        """Queue ``te = ts + delay`` for every NetCon from ``source``; returns how many.

        ``ts`` [ms] is the spike time: ``t_n + 1e-10`` for a threshold source, the spike
        time itself for a generator.
        """
        netcons = self._by_source.get(source, ())
        for i in netcons:
            queue.push_netcon(ts + self._delays[i], self._targets[i],
                              float(self._weights[i][0]), i)
        return len(netcons)

    def min_delay(self) -> float:
        """The smallest delay [ms] of any NetCon; ``inf`` without NetCons.

        Events queued at ``t`` act no earlier than ``t + min_delay``: the interval over
        which separately stepped parts of a network need not exchange spikes.
        """
        return min(self._delays, default=math.inf)

    def fan_out(self, n_sources: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The NetCons of each source as compressed rows, for compiled loops.

        Parameters
        ----------
        n_sources : int, optional
            Number of source ids ``0 .. n_sources - 1``; default: the largest id + 1.

        Returns
        -------
        indptr : (n_sources + 1,) int64
            The NetCons of source ``s`` are ``netcons[indptr[s]:indptr[s + 1]]``.
        netcons : (n,) int64
            NetCon indices grouped by source, each group in creation order.
        """
        sources = self.sources
        top = int(sources.max()) + 1 if sources.size else 0
        n_sources = top if n_sources is None else int(n_sources)
        if n_sources < top:
            raise ValueError(f"n_sources = {n_sources} but NetCons leave source {top - 1}")
        netcons = np.argsort(sources, kind="stable").astype(np.int64)
        indptr = np.zeros(n_sources + 1, dtype=np.int64)
        np.cumsum(np.bincount(sources, minlength=n_sources), out=indptr[1:])
        return indptr, netcons

    @property
    def sources(self) -> np.ndarray:
        """(n,) int64: source id of each NetCon."""
        return np.array(self._sources, dtype=np.int64)

    @property
    def targets(self) -> np.ndarray:
        """(n,) int64: target id of each NetCon."""
        return np.array(self._targets, dtype=np.int64)

    @property
    def weights(self) -> np.ndarray:
        """(n,) float64: weight of each NetCon (entry 0 of its weight vector)."""
        return np.array([w[0] for w in self._weights], dtype=np.float64)

    @property
    def delays(self) -> np.ndarray:
        """(n,) float64: delay of each NetCon [ms]."""
        return np.array(self._delays, dtype=np.float64)


def _check_weight(weight, i: int) -> np.ndarray:
    """The weight vector (float64, a copy) of NetCon ``i`` from a number or a sequence."""
    if isinstance(weight, (list, tuple, np.ndarray)):
        values = [finite_number(w, f"NetCon[{i}] weight[{k}]")
                  for k, w in enumerate(np.ravel(np.asarray(weight, dtype=object)))]
        if not values:
            raise ValueError(f"NetCon[{i}] weight vector is empty")
        return np.array(values, dtype=np.float64)
    return np.array([finite_number(weight, f"NetCon[{i}] weight")])


def _check_delay(delay, i: int) -> float:
    delay = finite_number(delay, f"NetCon[{i}] delay [ms]")
    if delay < 0:
        raise ValueError(f"NetCon[{i}] delay must be >= 0 ms, got {delay} ms")
    return delay
