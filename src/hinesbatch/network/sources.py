"""Spike sources: threshold detectors on cell voltages, and the NetStim and VecStim generators.

Threshold detection (NEURON's PreSyn on a voltage)
    At the start of every step, at ``(t_n, v_n)``, each source checks its node:

    - ``v - threshold > 0`` with the flag clear: the flag is set and the source fires at
      ``ts = t_n + 1e-10`` (no interpolation; the 1e-10 puts a delay-0.0125 event one step
      later than a delay-0 one);
    - ``v - threshold <= 0`` (or NaN): the flag is cleared.

    ``finitialize`` clears every flag (:meth:`ThresholdDetector.reset`), so a cell above
    threshold at ``v_init`` fires at ``ts = 1e-10``. The sample at ``tstop`` is never
    checked, because no step follows it.

Generators (NEURON's ARTIFICIAL_CELLs)
    :class:`NetStimGenerator` and :class:`VecStimGenerator` produce their spike times one
    at a time (:meth:`~NetStimGenerator.next_spike`), with NEURON's arithmetic, so that an
    engine can queue each next spike when the previous one is delivered, as NEURON does.
    A NetCon from a generator queues ``te = t_spike + delay`` (no 1e-10).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .._numba import light_cache_loads_in
from .events import finite_number

__all__ = ["SPIKE_OFFSET", "ThresholdDetector", "threshold_check", "NetStimGenerator",
           "VecStimGenerator"]

#: Added to the time of the first sample above threshold to give the spike time ts [ms].
SPIKE_OFFSET = 1e-10

#: NetStim's interval when ``interval <= 0`` [ms] (netstim.mod's ``invl``).
_NETSTIM_MIN_INTERVAL = 0.01


@njit(cache=True, nogil=True)
def threshold_check(v, nodes, thresholds, flags, t, out_sources, out_times):
    """Threshold detection of one step, for use inside a compiled step loop.

    Parameters
    ----------
    v : (n_nodes,) float64
        Voltages [mV] at time ``t``.
    nodes : (k,) int64
        Node index in ``v`` watched by each source (not bounds-checked here).
    thresholds : (k,) float64
        Threshold of each source [mV].
    flags : (k,) bool
        Above-threshold flag of each source; updated in place.
    t : float
        Accumulated time ``t_n`` [ms] of the sample.
    out_sources : (>= k,) int64
        Receives the indices of the sources that fire, in source order.
    out_times : (>= k,) float64
        Receives their spike times ``t + 1e-10`` [ms].

    Returns
    -------
    int
        Number of sources that fired (entries written to the outputs).
    """
    count = 0
    ts = t + SPIKE_OFFSET
    for i in range(nodes.shape[0]):
        if v[nodes[i]] - thresholds[i] > 0.0:
            if not flags[i]:
                flags[i] = True
                out_sources[count] = i
                out_times[count] = ts
                count += 1
        else:
            flags[i] = False
    return count


def _check_threshold_value(value, where: str) -> float:
    return finite_number(value, f"{where}: threshold [mV]")


class ThresholdDetector:
    """Voltage threshold sources, one per watched node, as flat arrays.

    Parameters
    ----------
    nodes : sequence of int, optional
        Node index (into the voltage array given to :meth:`check`) of each source.
    thresholds : float or sequence of float
        Threshold of each source [mV] (NEURON's NetCon default, 10 mV).

    Attributes
    ----------
    nodes : (k,) int64
    thresholds : (k,) float64 [mV]
    flags : (k,) bool
        True while the source's voltage stays above its threshold after firing.

    Examples
    --------
    >>> det = ThresholdDetector([0, 2], thresholds=0.0)
    >>> det.check(np.array([5.0, 0.0, -1.0]), 0.0)
    (array([0]), array([1.e-10]))
    """

    def __init__(self, nodes=(), thresholds=10.0):
        nodes = np.asarray(nodes)
        if nodes.ndim != 1 or (nodes.size and not np.issubdtype(nodes.dtype, np.integer)):
            raise TypeError("ThresholdDetector nodes must be a 1-D sequence of integer node indices")
        if nodes.size and nodes.min() < 0:
            raise ValueError(f"ThresholdDetector nodes must be >= 0, got {int(nodes.min())}")
        self.nodes = nodes.astype(np.int64)
        self.thresholds = np.empty(self.nodes.size)
        values = np.broadcast_to(np.asarray(thresholds, dtype=object), self.nodes.shape)
        for i, value in enumerate(values):
            self.thresholds[i] = _check_threshold_value(value, f"threshold source {i}")
        self.flags = np.zeros(self.nodes.size, dtype=np.bool_)

    def __len__(self) -> int:
        return int(self.nodes.size)

    def __repr__(self) -> str:
        return f"ThresholdDetector({len(self)} sources)"

    def add(self, node: int, threshold: float = 10.0) -> int:
        """Add a source watching ``node`` and return its index."""
        if isinstance(node, bool) or not isinstance(node, (int, np.integer)):
            raise TypeError(f"threshold source {len(self)}: node must be an integer, "
                            f"got {type(node).__name__}")
        if node < 0:
            raise ValueError(f"threshold source {len(self)}: node must be >= 0, got {node}")
        threshold = _check_threshold_value(threshold, f"threshold source {len(self)}")
        self.nodes = np.append(self.nodes, np.int64(node))
        self.thresholds = np.append(self.thresholds, threshold)
        self.flags = np.append(self.flags, False)
        return len(self) - 1

    def set_threshold(self, source: int, threshold: float) -> None:
        """Set the threshold [mV] of ``source`` (the last value set wins, as in NEURON)."""
        if not 0 <= source < len(self):
            raise IndexError(f"threshold source {source} does not exist ({len(self)} sources)")
        self.thresholds[source] = _check_threshold_value(threshold, f"threshold source {source}")

    def reset(self) -> None:
        """Clear every flag (``finitialize``)."""
        self.flags[:] = False

    def check(self, v: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray]:
        """Detect threshold crossings in the sample ``(t, v)``; updates the flags.

        Parameters
        ----------
        v : (n_nodes,) float64
            Voltages [mV] at the accumulated time ``t`` [ms].
        t : float
            Time of the sample ``t_n`` [ms].

        Returns
        -------
        sources : (m,) int64
            Indices of the sources that fire, ascending.
        ts : (m,) float64
            Their spike times, ``t + 1e-10`` [ms].
        """
        v = np.asarray(v, dtype=np.float64)
        if v.ndim != 1:
            raise ValueError(f"v must be 1-D (one voltage per node), got shape {v.shape}")
        if len(self) and self.nodes.max() >= v.size:
            bad = int(np.argmax(self.nodes >= v.size))
            raise ValueError(f"threshold source {bad} watches node {int(self.nodes[bad])} "
                             f"but v has {v.size} nodes")
        above = (v[self.nodes] - self.thresholds) > 0.0
        fired = np.flatnonzero(above & ~self.flags)
        self.flags[:] = above
        return fired.astype(np.int64), np.full(fired.size, float(t) + SPIKE_OFFSET)


class NetStimGenerator:
    """NEURON's NetStim with ``noise = 0``: a regular spike train.

    Parameters
    ----------
    start : float
        Time of the first spike [ms]; a negative start gives no spikes.
    interval : float
        Time between spikes [ms]; ``interval <= 0`` means 0.01 ms, as netstim.mod.
    number : float
        Number of spikes: ``ceil(number)`` when positive, none when ``<= 0``.
    noise : float
        Must be 0: noisy trains need a random stream, which is not supported.

    Notes
    -----
    The times follow netstim.mod in double precision: the first spike is at
    ``(start + interval) - interval*(1 - noise)`` (0 if negative; with ``interval <= 0``,
    ``(start + 0.01) - interval``), and each next one at ``t + interval``, accumulated, so
    start 20 and interval 7.3 give 20, 27.3, 34.6, 41.9, 49.199999999999996,
    56.49999999999999. A spike is delivered (and recorded) only if its time is ``<= t``
    of the last step (accumulated), e.g. a spike at 20 is not seen by a run to
    ``tstop = 20`` at dt 0.025, whose last t is 19.9999999999994.

    The first spike is a two-stage event in NEURON (INITIAL queues a self-event that queues
    the firing event at the same time); :attr:`two_stage_start` tells an engine so.

    Examples
    --------
    >>> NetStimGenerator(start=20, interval=7.3, number=3).spike_times(100.0)
    array([20. , 27.3, 34.6])
    """

    #: The first spike is queued through a ``"start"`` event (NetStim's INITIAL self-event).
    two_stage_start = True

    def __init__(self, start: float = 50.0, interval: float = 10.0, number: float = 10,
                 noise: float = 0.0):
        self.start = finite_number(start, "NetStim start [ms]")
        self.interval = finite_number(interval, "NetStim interval [ms]")
        self.number = finite_number(number, "NetStim number")
        noise = finite_number(noise, "NetStim noise")
        if noise != 0.0:
            raise ValueError(f"NetStim noise = {noise}: noise > 0 needs a random stream, "
                             "not supported (use noise = 0)")
        self.noise = noise
        self.reset()

    def __repr__(self) -> str:
        return (f"NetStimGenerator(start={self.start!r}, interval={self.interval!r}, "
                f"number={self.number!r}, noise={self.noise!r})")

    def _first(self) -> float | None:
        if not (self.start >= 0 and self.number > 0):
            return None
        step = self.interval if self.interval > 0.0 else _NETSTIM_MIN_INTERVAL
        first = self.start + step - self.interval * (1.0 - self.noise)
        return 0.0 if first < 0 else first

    def reset(self) -> None:
        """Rewind to the first spike (``finitialize``)."""
        self._next = self._first()
        self._fired = 0

    def next_spike(self) -> float | None:
        """The next spike time [ms], or None when the train is over; advances the train."""
        t = self._next
        if t is None:
            return None
        self._fired += 1
        if self._fired >= self.number:
            self._next = None
        else:
            self._next = t + (self.interval if self.interval > 0.0 else _NETSTIM_MIN_INTERVAL)
        return t

    def spike_times(self, t_end: float) -> np.ndarray:
        """Every spike time ``<= t_end`` [ms] (float64), from the start of the train.

        Pass the accumulated time of the run's last step as ``t_end`` to get the spikes
        NEURON delivers. Does not change the state used by :meth:`next_spike`.
        """
        return _train_until(type(self)(self.start, self.interval, self.number, self.noise),
                            t_end)


class VecStimGenerator:
    """A given spike train (NEURON's VecStim from vecevent.mod).

    Parameters
    ----------
    times : sequence of float
        Spike times [ms]: finite, ``>= 0``, sorted non-decreasing.
    delay : float
        Added to every time [ms], finite and ``>= 0``: the VecStim variant whose
        ``RANGE delay`` queues each time with ``net_send(delay + etime - t, 1)``.

    Notes
    -----
    vecevent.mod queues each next time ``e`` from the previous one ``t`` with
    ``net_send(etime - t)``, which nocmodl writes out as ``t + etime - t`` and C evaluates
    as ``(t + e) - t``; this class does the same, so a time can come out one bit off the
    given value (times 0.762, 5.2 give 0.762, 5.199999999999999 in NEURON 9.0.2). The first
    time is reached from ``t = 0`` and is exact. With a delay ``d`` nocmodl writes
    ``t + d + etime - t``, evaluated as ``((t + d) + e) - t``, and so does this class
    (with ``d = 0`` the same numbers as without).
    """

    two_stage_start = False

    def __init__(self, times, delay: float = 0.0):
        self.delay = finite_number(delay, "VecStim delay [ms]")
        if self.delay < 0:
            raise ValueError(f"VecStim delay = {self.delay} ms is negative")
        if np.ndim(times) != 1:
            raise ValueError(f"VecStim times must be 1-D, got shape {np.shape(times)}")
        arr = np.array(times, dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(arr))
        if bad.size:
            raise ValueError(f"VecStim times[{bad[0]}] = {arr[bad[0]]} is not finite")
        bad = np.flatnonzero(arr < 0)
        if bad.size:
            raise ValueError(f"VecStim times[{bad[0]}] = {arr[bad[0]]} ms is negative")
        bad = np.flatnonzero(np.diff(arr) < 0)
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"VecStim times must be sorted: times[{i + 1}] = {arr[i + 1]} ms "
                             f"< times[{i}] = {arr[i]} ms")
        arr.setflags(write=False)
        self.times = arr
        self.reset()

    def __repr__(self) -> str:
        delay = f", delay={self.delay!r}" if self.delay else ""
        return f"VecStimGenerator({self.times.size} times{delay})"

    def reset(self) -> None:
        """Rewind to the first time (``finitialize``)."""
        self._index = 0
        self._t = 0.0

    def next_spike(self) -> float | None:
        """The next spike time [ms], or None when the train is over; advances the train."""
        if self._index >= self.times.size:
            return None
        e = float(self.times[self._index])
        self._index += 1
        # vecevent.mod's t + etime - t, or t + delay + etime - t
        self._t = ((self._t + self.delay) + e) - self._t
        return self._t

    def spike_times(self, t_end: float) -> np.ndarray:
        """Every spike time ``<= t_end`` [ms] (float64); see :meth:`NetStimGenerator.spike_times`."""
        return _train_until(VecStimGenerator(self.times, self.delay), t_end)


def _train_until(gen, t_end: float) -> np.ndarray:
    t_end = finite_number(t_end, "t_end [ms]")
    out = []
    while (t := gen.next_spike()) is not None and t <= t_end:
        out.append(t)
    return np.array(out, dtype=np.float64)


light_cache_loads_in(globals())  # cached machine code loads without compiler set-up
