"""``Results``: recorded traces, their sample times and units, and spike times."""
from __future__ import annotations

import numpy as np

__all__ = ["Results"]


class Results:
    """What a run recorded.

    Parameters
    ----------
    traces : dict[str, ndarray]
        Recorded values by key (``"v@0:soma[0](0.5)"``).
    times : dict[str, ndarray]
        Sample times [ms] of each trace.
    units : dict[str, str]
        Unit of each trace.
    spikes : dict[str, ndarray]
        Spike times [ms] by key (``"spikes@0:soma[0](0.5)"``).
    spike_gids : dict[str, int]
        The gid of each spike source.
    meta : dict
        What produced the run (dt, celsius, backend, ...).
    """

    def __init__(self, traces: dict, times: dict, units: dict, spikes: dict,
                 spike_gids: dict, meta: dict):
        self.traces, self.times, self.units = dict(traces), dict(times), dict(units)
        self.spikes, self.spike_gids, self.meta = dict(spikes), dict(spike_gids), dict(meta)

    def __getitem__(self, key: str) -> np.ndarray:
        if key in self.traces:
            return self.traces[key]
        if key in self.spikes:
            return self.spikes[key]
        raise KeyError(f"no recording {key!r}; recorded: "
                       f"{', '.join(list(self.traces) + list(self.spikes))}")

    def time(self, key: str) -> np.ndarray:
        """Sample times [ms] of trace ``key``."""
        if key not in self.times:
            raise KeyError(f"no trace {key!r}; traces: {', '.join(self.traces)}")
        return self.times[key]

    @property
    def t(self) -> np.ndarray:
        """Times [ms] of the every-step recordings (else of the first trace)."""
        if not self.times:
            return np.zeros(0)
        return max(self.times.values(), key=len)
