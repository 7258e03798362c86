"""Passive simulation of a morphology with a current clamp, stepped exactly as NEURON does.

The model, units and time-step rules are described in ``docs/simulation.md``; the equations
are in :mod:`hinesbatch.sim.assembly`, the time grid and clamp in :mod:`hinesbatch.sim.stimuli`.
"""
from __future__ import annotations

import importlib.resources
import math
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from ..solvers.cpu.backends import THREADS_MIN_UNKNOWNS
from ..solvers.plan import plan as make_plan
from ..tree.structure import MonoBatch
from .assembly import PassiveSystem, make_assembler, passive_system
from .stimuli import IClamp, time_grid

__all__ = ["Result", "simulate_passive", "default_morphology", "NEURON_DEFAULTS"]

#: NEURON's defaults: ``cm`` [µF/cm²], ``Ra`` [Ω·cm], ``pas`` ``g`` [S/cm²] and ``e`` [mV],
#: ``v_init`` [mV], ``dt`` [ms].
NEURON_DEFAULTS = {"cm": 1.0, "ra": 35.4, "g_pas": 0.001, "e_pas": -70.0, "v_init": -65.0, "dt": 0.025}
#: hinesbatch's own defaults for what NEURON leaves to the user: ``tstop`` [ms] and the clamp
#: ``(amp [nA], delay [ms], dur [ms])``.
DEFAULT_TSTOP = 100.0
DEFAULT_ICLAMP = (0.5, 10.0, 50.0)
#: Above this many node-steps, ``progress=None`` shows a bar when stderr is a terminal.
_LONG_RUN = 5e7


@dataclass(frozen=True, eq=False)
class Result:
    """What :func:`simulate_passive` recorded.

    Attributes
    ----------
    t : (n_steps + 1,) float64
        Sample times [ms], starting at 0 (as NEURON's ``Vector.record(h._ref_t)``).
    v : (n_cells, n_steps + 1) float64
        Membrane potential [mV] at the recorded location of every cell, one sample per step
        plus the initial one. Always two-dimensional, also for one cell.
    params : dict
        Every parameter used (JSON-serialisable), including the resolved clamp and record nodes.
    info : dict
        Run details: ``n_nodes`` per cell, ``backend`` (the plan's description), ``setup_s`` and
        ``loop_s`` wall times [s].
    """

    t: np.ndarray
    v: np.ndarray
    params: dict
    info: dict = field(default_factory=dict)


def default_morphology():
    """Context manager yielding the path of the bundled morphology ``c91662.swc``."""
    return importlib.resources.as_file(
        importlib.resources.files("hinesbatch").joinpath("data", "c91662.swc")
    )


def simulate_passive(
    geometry_or_path=None,
    *,
    tstop: float = DEFAULT_TSTOP,
    dt: float = NEURON_DEFAULTS["dt"],
    iclamp: tuple[float, float, float] | IClamp = DEFAULT_ICLAMP,
    nseg: int | None = None,
    d_lambda: float | None = None,
    cm: float | None = None,
    ra: float | None = None,
    g_pas: float = NEURON_DEFAULTS["g_pas"],
    e_pas: float = NEURON_DEFAULTS["e_pas"],
    v_init: float = NEURON_DEFAULTS["v_init"],
    n_cells: int = 1,
    backend: str = "auto",
    clamp: tuple[str, float] = ("soma[0]", 0.5),
    record: tuple[str, float] = ("soma[0]", 0.5),
    progress: bool | None = None,
) -> Result:
    """Simulate a passive cell (``pas`` everywhere) driven by a current clamp.

    Backward (implicit) Euler with NEURON's default fixed step: the same nodes, matrix,
    clamp timing and sample times as ``h.finitialize(v_init); h.continuerun(tstop)`` with
    ``secondorder = 0``, solved through :func:`hinesbatch.plan`.

    Parameters
    ----------
    geometry_or_path : CellGeometry, Morphology, str, os.PathLike or None
        A discretized cell, or a morphology or SWC file (discretized here with
        ``nseg``/``d_lambda``, ``ra`` and ``cm``). ``None`` uses the bundled ``c91662.swc``.
    tstop : float
        End time [ms]; steps are taken while ``t < tstop - dt/2``.
    dt : float
        Time step [ms].
    iclamp : (amp, delay, dur) or IClamp
        Clamp current [nA], onset [ms] and duration [ms]; on during step ``n`` iff
        ``delay <= t_n + dt/2 < delay + dur``.
    nseg, d_lambda : int or float, optional
        Discretization of an SWC file (at most one; see :func:`hinesbatch.discretize`).
        Not allowed with a CellGeometry.
    cm : float, optional
        Membrane capacitance [µF/cm²]; default the geometry's (NEURON's 1.0 for a file).
    ra : float, optional
        Axial resistivity [Ω·cm]; default NEURON's 35.4 for a file. A CellGeometry carries
        its own (its ``ri`` depend on it): a different value raises ``ValueError``.
    g_pas, e_pas : float
        Leak conductance [S/cm²] and reversal potential [mV] (NEURON's ``pas`` defaults).
    v_init : float
        Initial potential [mV] of every node.
    n_cells : int
        Number of identical copies simulated as one batch (:class:`MonoBatch`).
    backend : str
        Solver backend (``"auto"`` or a name from :func:`hinesbatch.backends`).
    clamp, record : (section name, x)
        Where the clamp sits and where ``v`` is recorded (NEURON's ``section(x)``).
    progress : bool or None
        Show a progress bar on stderr; ``None`` shows it on long runs when stderr is a terminal.

    Returns
    -------
    Result
        ``t`` (n_steps + 1,) [ms], ``v`` (n_cells, n_steps + 1) [mV], ``params``, ``info``.
    """
    t0 = time.perf_counter()
    stim = iclamp if isinstance(iclamp, IClamp) else _iclamp_from_tuple(iclamp)
    _check_number("g_pas", g_pas, low=0.0)
    _check_number("e_pas", e_pas)
    _check_number("v_init", v_init)
    n_cells = _check_cells(n_cells)
    geometry, cm, ra = _resolve_geometry(geometry_or_path, nseg=nseg, d_lambda=d_lambda, cm=cm, ra=ra)
    clamp_node = _location_node(geometry, clamp, "clamp")
    record_node = _location_node(geometry, record, "record")
    t, t_mid = time_grid(tstop, dt)
    amps = stim.amplitudes(t_mid)
    system = passive_system(geometry, dt=dt, cm=cm, g_pas=g_pas, e_pas=e_pas)

    solver = make_plan(MonoBatch(system.structure, n_cells), backend=backend)
    show = _show_progress(progress, t_mid.size * system.n_nodes * n_cells)
    setup_s = time.perf_counter() - t0
    v, loop_s = run_passive(system, solver, v_init=v_init, amps=amps,
                            stim_node=system.position(clamp_node),
                            record_node=system.position(record_node), progress=show)
    params = {
        "morphology": str(geometry.source),
        "tstop_ms": float(tstop), "dt_ms": float(dt), "n_steps": int(t_mid.size),
        "iclamp": {"amp_nA": stim.amp, "delay_ms": stim.delay, "dur_ms": stim.dur},
        "clamp": {"section": clamp[0], "x": float(clamp[1]), "node": clamp_node},
        "record": {"section": record[0], "x": float(record[1]), "node": record_node},
        "nseg": nseg, "d_lambda": d_lambda,
        "cm_uF_per_cm2": float(cm), "ra_ohm_cm": float(ra),
        "g_pas_S_per_cm2": float(g_pas), "e_pas_mV": float(e_pas), "v_init_mV": float(v_init),
        "n_cells": n_cells, "backend": solver.backend_name,
    }
    info = {"n_nodes": system.n_nodes, "n_sections": geometry.n_sections,
            "backend": solver.describe(), "setup_s": setup_s, "loop_s": loop_s}
    return Result(t=t, v=v, params=params, info=info)


def run_passive(system: PassiveSystem, solver, *, v_init: float, amps: np.ndarray, stim_node: int,
                record_node: int, progress: bool = False) -> tuple[np.ndarray, float]:
    """The time loop: assemble, solve through ``solver`` (a :class:`Plan`), ``v += Δv``, record.

    The state lives in the plan's array module (on the device for a GPU backend); the
    recorded voltages are kept there too and copied to the host once, at the end.

    Parameters
    ----------
    system : PassiveSystem
    solver : Plan
        A plan for ``MonoBatch(system.structure, n_cells)``.
    v_init : float
        Initial potential [mV] of every node.
    amps : (n_steps,) float64
        Clamp current [nA] during each step.
    stim_node, record_node : int
        Node indices of the clamp and the recording.
    progress : bool
        Show a tqdm bar on stderr.

    Returns
    -------
    v : (n_cells, n_steps + 1) float64 NumPy array
        Recorded potential [mV], ``v_init`` first.
    loop_s : float
        Wall time of the loop [s] (``time.perf_counter``), including the final copy.
    """
    xp = solver.xp
    n_cells, n = solver.structure.values_shape
    n_steps = int(amps.size)
    parallel = n_cells > 1 and n_cells * n >= THREADS_MIN_UNKNOWNS  # as auto's choice of threads
    assembler = make_assembler(system, xp, parallel=parallel)
    state = xp.full((n_cells, n), float(v_init))
    d = xp.empty((n_cells, n))
    rhs = xp.empty((n_cells, n))
    trace = xp.full((n_cells, n_steps + 1), np.nan)
    trace[:, 0] = state[:, record_node]
    amp_list = [float(a) for a in amps]
    bar = _progress_bar(n_steps) if progress else None
    chunk = max(1, n_steps // 200) if bar is not None else max(1, n_steps)
    start = time.perf_counter()
    step = 0
    while step < n_steps:
        stop = min(n_steps, step + chunk)
        for k in range(step, stop):
            assembler.assemble(state, d, rhs, stim_node, amp_list[k])
            dv = solver.solve(d, rhs, overwrite=True, check_finite=k == 0)
            assembler.advance(state, dv, trace, k + 1, record_node)
        if bar is not None:
            bar.update(stop - step)
        step = stop
    out = trace.get() if hasattr(trace, "get") else np.asarray(trace)
    loop_s = time.perf_counter() - start
    if bar is not None:
        bar.close()
    return out, loop_s


def _progress_bar(total: int):
    from tqdm import tqdm

    return tqdm(total=total, unit="step", file=sys.stderr, mininterval=0.5, leave=False)


def _show_progress(progress: bool | None, work: float) -> bool:
    if progress is not None:
        return bool(progress)
    return work > _LONG_RUN and sys.stderr is not None and sys.stderr.isatty()


def _iclamp_from_tuple(iclamp) -> IClamp:
    try:
        amp, delay, dur = iclamp
    except (TypeError, ValueError):
        raise TypeError(
            f"iclamp must be (amp [nA], delay [ms], dur [ms]) or an IClamp, got {iclamp!r}"
        ) from None
    return IClamp(amp, delay, dur)


def _check_number(name: str, value, *, low: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not math.isfinite(value) or (low is not None and value < low):
        bound = "finite" if low is None else f"finite and >= {low}"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return float(value)


def _check_cells(n_cells) -> int:
    if isinstance(n_cells, bool) or not isinstance(n_cells, (int, np.integer)):
        raise TypeError(f"n_cells must be an integer, got {type(n_cells).__name__}")
    if n_cells < 1:
        raise ValueError(f"n_cells must be >= 1, got {n_cells}")
    return int(n_cells)


def _resolve_geometry(source, *, nseg, d_lambda, cm, ra):
    """A CellGeometry and the cm [µF/cm²] and Ra [Ω·cm] it is simulated with."""
    from ..discretize.geometry import CellGeometry

    if isinstance(source, CellGeometry):
        if nseg is not None or d_lambda is not None:
            raise ValueError(
                "nseg and d_lambda discretize an SWC file; this CellGeometry is already "
                f"discretized (from {source.source}): pass the file instead"
            )
        if ra is not None and _check_number("ra", ra) != source.ra:
            raise ValueError(
                f"the CellGeometry was discretized with Ra = {source.ra} ohm*cm, but ra = {ra} "
                "was asked for: its axial resistances depend on Ra, so discretize again"
            )
        cm = source.cm if cm is None else _check_number("cm", cm, low=0.0)
        return source, cm, source.ra
    cm = NEURON_DEFAULTS["cm"] if cm is None else _check_number("cm", cm, low=0.0)
    ra = NEURON_DEFAULTS["ra"] if ra is None else _check_number("ra", ra, low=0.0)
    from ..discretize import discretize

    if source is None:
        with default_morphology() as path:
            return discretize(path, nseg=nseg, d_lambda=d_lambda, ra=ra, cm=cm), cm, ra
    from ..morphology import Morphology

    if not isinstance(source, (str, os.PathLike, Morphology)):
        raise TypeError(
            f"expected a CellGeometry, a Morphology, an SWC path or None, got "
            f"{type(source).__name__}"
        )
    return discretize(source, nseg=nseg, d_lambda=d_lambda, ra=ra, cm=cm), cm, ra


def _location_node(geometry, location, what: str) -> int:
    """The node of ``location = (section, x)``, with an error that says how to choose another."""
    try:
        section, x = location
        x = float(x)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be (section name, x), e.g. ('soma[0]', 0.5), got {location!r}") from None
    if section not in geometry.section_names:
        names = geometry.section_names
        shown = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
        raise ValueError(
            f"{geometry.source} has no section {section!r} for the {what} (its sections: "
            f"{shown}); choose the clamp and record locations with clamp=/record= "
            f"(section, x), e.g. ('{names[0]}', 0.5), or on the command line with "
            f"--clamp/--record SECTION(X), e.g. --clamp '{names[0]}(0.5)' --record '{names[0]}(0.5)'"
        )
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"{what} location {section}({x}): x must lie in [0, 1]")
    node = geometry.node(section, x)
    if geometry.has_membrane[node] and not geometry.area_um2[node] > 0:
        raise ValueError(
            f"{what} location {section}({x}) in {geometry.source} has zero membrane area "
            "(a zero radius in the file?); NEURON's voltage there is NaN"
        )
    return node
