"""Stimuli and NEURON's fixed-step time grid.

NEURON's default fixed step (``secondorder = 0``) advances ``t`` in two half steps:
``t += dt/2``, assemble and solve at that mid-step time, then ``t += dt/2``. ``continuerun``
steps while ``t < tstop - dt/2``, and ``Vector.record`` stores one sample at ``t = 0`` (after
``finitialize``) and one after every step. An ``IClamp`` delivers ``amp`` during step ``n``
iff ``del <= t_n + dt/2 < del + dur`` (``stim.mod``'s BREAKPOINT test on the mid-step time).
This module reproduces those rules with the same floating-point accumulation.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["IClamp", "time_grid", "parse_location"]


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

    def amplitudes(self, t_mid: np.ndarray) -> np.ndarray:
        """Current [nA] during each step whose mid-step time [ms] is ``t_mid`` (float64)."""
        t_mid = np.asarray(t_mid, dtype=np.float64)
        on = (self.delay <= t_mid) & (t_mid < self.delay + self.dur)
        return np.where(on, self.amp, 0.0)


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
    if not (math.isfinite(dt) and dt > 0):
        raise ValueError(f"dt must be a positive number of ms, got {dt}")
    if not math.isfinite(tstop) or tstop < 0:
        raise ValueError(f"tstop must be a finite number of ms >= 0, got {tstop}")
    n_max = int(math.ceil(tstop / dt)) + 2
    if n_max > 10**9:
        raise ValueError(f"tstop/dt = {tstop}/{dt} asks for more than 1e9 steps")
    half = dt / 2.0
    t_mid = np.empty(n_max)
    t_end = np.empty(n_max + 1)
    t_end[0] = t = 0.0
    n = 0
    # NEURON's own loop, value by value: a closed form would round differently.
    while t < tstop - half:
        t += half
        t_mid[n] = t
        t += half
        n += 1
        t_end[n] = t
    return t_end[: n + 1].copy(), t_mid[:n].copy()


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
