"""What a simulation returns: recorded traces with their sample times and units, and spike
times per source.

``Simulation.run`` builds a :class:`Results`; it can be saved (``.npz``, read back with
``hinesbatch.load_results``), its spikes written as a SONATA spike report, and plotted.
"""
from __future__ import annotations

import difflib
import os
from pathlib import Path
from types import MappingProxyType

import numpy as np

#: Valid keys listed at most in a ``KeyError``.
_SHOWN_KEYS = 5


class Results:
    """Recorded traces and spike times of one simulation run.

    Parameters
    ----------
    traces : dict of str to numpy.ndarray
        Key (``"v@0:soma[0](0.5)"``, ``"i@0:IClamp[0]"``) -> samples, shape (n_samples,)
        (or (n_samples, ...)), in recording order.
    times : dict of str to numpy.ndarray
        Key -> sample times [ms], float, shape (n_samples,); the same keys as ``traces``.
    units : dict of str to str
        Key -> unit of the trace (``"mV"``, ``"nA"``, ``"µS"``, ``"mA/cm2"``, ``"1"``);
        one per trace.
    spikes : dict of str to numpy.ndarray
        Spike key (``"spikes@0:soma[0](0.5)"``, ``"spikes@NetStim[0]"``) -> spike times
        [ms], float64, ascending.
    spike_gids : dict of str to int
        Spike key -> gid of the source (cells 0..N-1, a point process's ``net_event``
        its cell's, then NetStim/VecStim sources N, N+1, ... in creation order); the same
        keys as ``spikes``.
    meta : dict
        Run description (``dt``, ``tstop``, ``celsius``, ``backend``, ...): JSON types, so
        that :meth:`save` can store it.

    Examples
    --------
    >>> res = sim.run(100.0)                                     # doctest: +SKIP
    >>> v = res["v@0:soma[0](0.5)"]; t = res.time("v@0:soma[0](0.5)")
    >>> gids, times = res.spike_report()
    >>> res.save("run.npz"); res.save_spikes("spikes.h5"); res.plot("v.png")
    """

    def __init__(self, traces: dict, times: dict, units: dict, spikes: dict,
                 spike_gids: dict, meta: dict):
        for name, value in (("traces", traces), ("times", times), ("units", units),
                            ("spikes", spikes), ("spike_gids", spike_gids), ("meta", meta)):
            if not isinstance(value, dict):
                raise TypeError(f"{name} must be a dict, not {type(value).__name__}")
        _same_keys("traces", traces, "times", times)
        _same_keys("traces", traces, "units", units)
        _same_keys("spikes", spikes, "spike_gids", spike_gids)
        both = set(traces) & set(spikes)
        if both:
            raise ValueError(f"keys {sorted(both)} name both a trace and a spike source")
        self._traces: dict[str, np.ndarray] = {}
        self._times: dict[str, np.ndarray] = {}
        for key, trace in traces.items():
            if not isinstance(key, str):
                raise TypeError(f"trace keys must be strings, not {type(key).__name__} "
                                f"({key!r})")
            trace, t = np.asarray(trace), np.asarray(times[key])
            if t.ndim != 1 or trace.ndim < 1 or trace.shape[0] != t.shape[0]:
                raise ValueError(f"trace {key!r} has shape {trace.shape} but its times have "
                                 f"shape {t.shape}; a trace's first axis is its sample times")
            self._traces[key], self._times[key] = trace, t
        self.units: dict[str, str] = {key: str(units[key]) for key in traces}
        """Key -> unit of the trace (``"mV"``, ``"nA"``, ``"µS"``, ``"1"``)."""
        self.spikes: dict[str, np.ndarray] = {}
        """Spike key -> spike times [ms] (float64)."""
        self.spike_gids: dict[str, int] = {}
        """Spike key -> gid of its source."""
        for key, ts in spikes.items():
            ts = np.asarray(ts, dtype=np.float64)
            if ts.ndim != 1:
                raise ValueError(f"spike times of {key!r} must be 1-D, not shape {ts.shape}")
            gid = spike_gids[key]
            if isinstance(gid, (bool, np.bool_)) or not isinstance(gid, (int, np.integer)) \
                    or gid < 0:
                raise ValueError(f"spike_gids[{key!r}] must be an int >= 0, not {gid!r}")
            self.spikes[key], self.spike_gids[key] = ts, int(gid)
        self.meta: dict = dict(meta)
        """The run's description (``dt`` [ms], ``tstop`` [ms], ``celsius`` [°C], ...)."""

    # -- traces -------------------------------------------------------------------------
    def __getitem__(self, key: str) -> np.ndarray:
        """The trace recorded under ``key``; ``KeyError`` listing valid keys otherwise."""
        try:
            return self._traces[key]
        except (KeyError, TypeError):
            raise self._missing(key) from None

    def __contains__(self, key) -> bool:
        return key in self._traces

    def __iter__(self):
        return iter(self._traces)

    def __len__(self) -> int:
        return len(self._traces)

    def keys(self) -> list[str]:
        """The trace keys, in recording order."""
        return list(self._traces)

    @property
    def traces(self) -> MappingProxyType:
        """Key -> trace, read-only, in recording order (``res[key]`` for one)."""
        return MappingProxyType(self._traces)

    @property
    def times(self) -> MappingProxyType:
        """Key -> sample times [ms], read-only (``res.time(key)`` for one)."""
        return MappingProxyType(self._times)

    def time(self, key: str) -> np.ndarray:
        """Sample times [ms] of the trace ``key``."""
        if key not in self._times:
            raise self._missing(key)
        return self._times[key]

    @property
    def t(self) -> np.ndarray:
        """Sample times [ms] of the recordings taken every step: the longest time array
        (every-step recordings have the most samples; the first such key's), or an empty
        array when nothing was recorded."""
        best = None
        for t in self._times.values():
            if best is None or t.shape[0] > best.shape[0]:
                best = t
        return np.empty(0) if best is None else best

    # -- spikes -------------------------------------------------------------------------
    def spike_report(self) -> tuple[np.ndarray, np.ndarray]:
        """All spikes as one report.

        Returns
        -------
        gids : numpy.ndarray of int64, shape (k,)
        times : numpy.ndarray of float64, shape (k,)
            Spike times [ms]; sorted by time, then by gid (stable for equal pairs).
        """
        if not self.spikes:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
        times = np.concatenate(list(self.spikes.values()))
        gids = np.concatenate([np.full(ts.shape[0], self.spike_gids[key], dtype=np.int64)
                               for key, ts in self.spikes.items()])
        order = np.lexsort((gids, times))
        return gids[order], times[order]

    # -- files --------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> Path:
        """Save every trace, its times and unit, the spikes and ``meta`` to an ``.npz`` file
        (``.npz`` appended when missing), atomically; ``hinesbatch.load_results`` reads it
        back. The layout is described in :mod:`hinesbatch.io.npz`.

        Returns
        -------
        pathlib.Path
            The path written.
        """
        from ..io.npz import write_results

        return write_results(path, self._traces, self._times, self.units, self.spikes,
                             self.spike_gids, self.meta)

    def save_spikes(self, path: str | os.PathLike, population: str = "hinesbatch") -> Path:
        """Write the spikes as a SONATA spike report (HDF5; needs h5py, the ``sonata``
        extra), atomically: ``/spikes/<population>/timestamps`` (float64, ``units="ms"``)
        and ``/spikes/<population>/node_ids`` (uint64, the gids), sorted by time
        (``sorting = by_time``). The layout is described in :mod:`hinesbatch.io.sonata`.

        Returns
        -------
        pathlib.Path
            The path written (as given: ``.h5`` is the usual suffix).
        """
        from ..io.sonata import write_spike_report

        gids, times = self.spike_report()
        return write_spike_report(path, gids, times, population=population)

    # -- figures ------------------------------------------------------------------------
    def plot(self, path: str | os.PathLike | None = None, keys=None):
        """Plot traces against time [ms]: one axis per unit, a legend naming the keys.

        Parameters
        ----------
        path : str or os.PathLike, optional
            Also write the figure there (format from the suffix, ``.png`` appended when
            there is none), atomically.
        keys : str or list of str, optional
            The traces to draw; all by default.

        Returns
        -------
        matplotlib.figure.Figure
            Needs matplotlib (the ``plot`` extra).
        """
        from ..io.plots import plot_traces

        return plot_traces(self, keys, path)

    def raster(self, path: str | os.PathLike | None = None):
        """Plot the spike raster (gid against time [ms]); written to ``path`` when given.
        Returns the ``matplotlib.figure.Figure`` (needs the ``plot`` extra)."""
        from ..io.plots import plot_raster

        return plot_raster(self, path)

    # -- printing -----------------------------------------------------------------------
    def __repr__(self) -> str:
        keys = self.keys()
        shown = ", ".join(keys[:3]) + (f", ... ({len(keys) - 3} more)" if len(keys) > 3 else "")
        t = self.t
        span = f"{t.shape[0]} samples, t = {t[0]:g}..{t[-1]:g} ms" if t.shape[0] else "no samples"
        n_spikes = sum(ts.shape[0] for ts in self.spikes.values())
        return (f"Results({len(keys)} traces [{shown}], {span}, {n_spikes} spikes from "
                f"{len(self.spikes)} sources)")

    def _missing(self, key) -> KeyError:
        if isinstance(key, str) and key in self.spikes:
            return KeyError(f"{key!r} is a spike source: its times are res.spikes[{key!r}]")
        keys = self.keys()
        close = difflib.get_close_matches(str(key), keys, n=_SHOWN_KEYS, cutoff=0.5)
        shown = close + [k for k in keys if k not in close][:_SHOWN_KEYS - len(close)]
        more = f" and {len(keys) - len(shown)} more" if len(keys) > len(shown) else ""
        valid = ", ".join(repr(k) for k in shown) + more if keys else "none recorded"
        return KeyError(f"no trace {key!r}; valid keys: {valid}")


def _same_keys(a_name: str, a: dict, b_name: str, b: dict) -> None:
    if a.keys() != b.keys():
        only_a = [k for k in a if k not in b]
        only_b = [k for k in b if k not in a]
        detail = "; ".join(filter(None, [
            f"{a_name} only: {only_a[:3]}" if only_a else "",
            f"{b_name} only: {only_b[:3]}" if only_b else ""]))
        raise ValueError(f"{a_name} and {b_name} must have the same keys ({detail})")
