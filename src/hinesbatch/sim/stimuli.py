"""Stimuli and NEURON's fixed-step time grid.

NEURON's default fixed step (``secondorder = 0``) advances ``t`` in two half steps:
``t += dt/2``, assemble and solve at that mid-step time, then ``t += dt/2``. ``continuerun``
steps while ``t < tstop - dt/2``, and ``Vector.record`` stores one sample at ``t = 0`` (after
``finitialize``) and one after every step. An ``IClamp`` delivers ``amp`` during step ``n``
iff ``del <= t_n + dt/2 < del + dur`` (``stim.mod``'s BREAKPOINT test on the mid-step time).
This module reproduces those rules with the same floating-point accumulation.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

__all__ = ["IClamp", "TimeGrid", "time_grid", "parse_location", "MAX_AMP_NA"]

#: The largest clamp current accepted [nA] (1 mA): electrode currents are nA; far larger
#: ones only overflow the voltage update.
MAX_AMP_NA = 1e6


@dataclass(frozen=True)
class IClamp:
    """A current clamp (NEURON's ``IClamp`` point process).

    Parameters
    ----------
    amp : float
        Injected current [nA]; positive depolarises (an electrode current).
    delay : float
        Onset [ms] (NEURON's ``del``).
    dur : float
        Duration [ms].
    """

    amp: float
    delay: float
    dur: float

    def __post_init__(self):
        for name in ("amp", "delay", "dur"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
                raise TypeError(f"IClamp {name} must be a number, got {type(value).__name__}")
            if not math.isfinite(value):
                raise ValueError(f"IClamp {name} must be finite, got {value}")
            object.__setattr__(self, name, float(value))
        if self.dur < 0:
            raise ValueError(f"IClamp dur must be >= 0 ms, got {self.dur}")
        if abs(self.amp) > MAX_AMP_NA:
            raise ValueError(
                f"IClamp amp must lie within +-{MAX_AMP_NA:g} nA (1 mA), got {self.amp:g} nA: "
                "electrode currents are nA, and far larger ones overflow the voltage update")

    def amplitudes(self, t_mid: np.ndarray) -> np.ndarray:
        """Current [nA] during each step whose mid-step time [ms] is ``t_mid`` (float64)."""
        t_mid = np.asarray(t_mid, dtype=np.float64)
        on = (self.delay <= t_mid) & (t_mid < self.delay + self.dur)
        return np.where(on, self.amp, 0.0)


#: Steps generated at once by :class:`TimeGrid` (two float64 arrays of this length).
_GRID_CHUNK = 1 << 18
#: The most steps one run may take.
MAX_STEPS = 10**9


class TimeGrid:
    """NEURON's fixed-step time grid of ``finitialize`` + ``continuerun(tstop)``, in chunks.

    The times are accumulated as NEURON does, value by value (``t += dt/2`` twice a step; a
    closed form would round differently), with ``np.add.accumulate``, which adds in order.
    Only :attr:`n_steps` is kept (counted on first use): :meth:`chunks` regenerates the times, so a run of 10^9
    steps needs no arrays of 10^9 times.

    Parameters
    ----------
    tstop : float
        End time [ms]; steps are taken while ``t < tstop - dt/2``.
    dt : float
        Time step [ms], > 0.
    """

    def __init__(self, tstop: float, dt: float):
        if not (isinstance(dt, (int, float, np.integer, np.floating)) and math.isfinite(dt)
                and dt > 0):
            raise ValueError(f"dt must be a positive number of ms, got {dt}")
        if not (isinstance(tstop, (int, float, np.integer, np.floating))
                and math.isfinite(tstop) and tstop >= 0):
            raise ValueError(f"tstop must be a finite number of ms >= 0, got {tstop}")
        if tstop / dt > MAX_STEPS:
            raise ValueError(f"tstop/dt = {tstop}/{dt} asks for more than {MAX_STEPS:.0e} steps")
        self.tstop, self.dt = float(tstop), float(dt)

    @functools.cached_property
    def n_steps(self) -> int:
        """Steps of the run (counted by generating the grid once: 10^9 steps take seconds)."""
        return sum(t_mid.size for t_mid, _ in self.chunks())

    def chunks(self, size: int | None = None):
        """Yield ``(t_mid, t_end)`` for consecutive runs of at most ``size`` steps.

        ``t_mid`` [ms] is the time at which a step is assembled (``t_n + dt/2``), ``t_end``
        [ms] the time after it; both float64 arrays of the chunk's step count. ``size``
        defaults to 2^18.
        """
        size = _GRID_CHUNK if size is None else int(size)
        half = self.dt / 2.0
        stop = self.tstop - half
        t = 0.0
        while t < stop:
            s = np.full(2 * size + 1, half)
            s[0] = t
            np.add.accumulate(s, out=s)
            taken = int(np.count_nonzero(s[0:-1:2] < stop))  # t grows: a prefix is taken
            yield s[1 : 2 * taken : 2], s[2 : 2 * taken + 1 : 2]
            if taken < size:
                return
            t = float(s[-1])

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``(t, t_mid)``: every sample time [ms] (0 first) and every mid-step time [ms]."""
        t = np.empty(self.n_steps + 1)
        t_mid = np.empty(self.n_steps)
        t[0] = 0.0
        k = 0
        for mid, end in self.chunks():
            t_mid[k : k + mid.size] = mid
            t[k + 1 : k + 1 + end.size] = end
            k += mid.size
        return t, t_mid

    def sample_times(self, every: int = 1) -> np.ndarray:
        """Times [ms] of the samples recorded every ``every`` steps: 0, then after steps
        ``every``, ``2*every``, ... (``n_steps // every + 1`` values)."""
        out = np.empty(self.n_steps // every + 1)
        out[0] = 0.0
        k = 0  # steps before this chunk; end[i] is the time after step k + 1 + i
        for _, end in self.chunks():
            first = (every - 1 - k % every)  # the chunk's first step that is a multiple
            picked = end[first::every]
            j = (k + 1 + first) // every
            out[j : j + picked.size] = picked
            k += end.size
        return out


def time_grid(tstop: float, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """NEURON's sample times and mid-step times for ``finitialize`` + ``continuerun(tstop)``.

    Parameters
    ----------
    tstop : float
        End time [ms]; steps are taken while ``t < tstop - dt/2``.
    dt : float
        Time step [ms], > 0.

    Returns
    -------
    t : (n_steps + 1,) float64
        Recorded times [ms]: 0, then ``t`` after each step, accumulated as NEURON does.
    t_mid : (n_steps,) float64
        Time [ms] at which step ``n`` is assembled (``t_n + dt/2``, accumulated).
    """
    return TimeGrid(tstop, dt).arrays()


def parse_location(text: str) -> tuple[str, float]:
    """Parse NEURON's ``section(x)`` notation, e.g. ``"dend[3](0.5)"`` -> ``("dend[3]", 0.5)``.

    A bare section name means its middle (``x = 0.5``). ``ValueError`` names the text when
    it cannot be read or ``x`` lies outside [0, 1].
    """
    s = text.strip()
    name, x = s, 0.5
    if s.endswith(")") and "(" in s:
        name, _, rest = s[:-1].rpartition("(")
        try:
            x = float(rest)
        except ValueError:
            raise ValueError(
                f"cannot read the location {text!r}: expected SECTION(X), e.g. soma[0](0.5)"
            ) from None
    name = name.strip()
    if not name or "(" in name or ")" in name:
        raise ValueError(f"cannot read the location {text!r}: expected SECTION(X), e.g. soma[0](0.5)")
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"the location {text!r} has x = {x}; x must lie in [0, 1]")
    return name, x
