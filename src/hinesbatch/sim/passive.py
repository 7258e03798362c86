"""Passive simulation of a morphology with a current clamp, stepped exactly as NEURON does.

The model, units and time-step rules are described in ``docs/simulation.md``; the equations
are in :mod:`hinesbatch.sim.assembly`, the time grid and clamp in :mod:`hinesbatch.sim.stimuli`.
"""
from __future__ import annotations

import importlib.resources
import math
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .errors import InsufficientMemoryError, NonFiniteStateError
from .memory import MemoryEstimate, available_device_memory, format_bytes
from .stimuli import IClamp, TimeGrid

if TYPE_CHECKING:  # imported where used: `hinesbatch simulate --mechanism` needs no solver
    from .assembly import PassiveSystem

__all__ = ["Result", "simulate_passive", "default_morphology", "NEURON_DEFAULTS"]

#: NEURON's defaults: ``cm`` [µF/cm²], ``Ra`` [Ω·cm], ``pas`` ``g`` [S/cm²] and ``e`` [mV],
#: ``v_init`` [mV], ``dt`` [ms].
NEURON_DEFAULTS = {"cm": 1.0, "ra": 35.4, "g_pas": 0.001, "e_pas": -70.0, "v_init": -65.0, "dt": 0.025}
#: hinesbatch's own defaults for what NEURON leaves to the user: ``tstop`` [ms] and the clamp
#: ``(amp [nA], delay [ms], dur [ms])``.
DEFAULT_TSTOP = 100.0
DEFAULT_ICLAMP = (0.5, 10.0, 50.0)
#: The largest ``|v_init|`` and ``|e_pas|`` accepted [mV] (a kilovolt; membrane potentials
#: are tens of mV).
MAX_ABS_POTENTIAL_MV = 1e6
#: Above this many node-steps, ``progress=None`` shows a bar when stderr is a terminal.
_LONG_RUN = 5e7


@dataclass(frozen=True, eq=False)
class Result:
    """What :func:`simulate_passive` recorded.

    Attributes
    ----------
    t : (n_samples,) float64
        Sample times [ms], starting at 0 (as NEURON's ``Vector.record(h._ref_t)``);
        ``n_samples = n_steps // record_every + 1``.
    v : (n_cells, n_samples) float64
        Membrane potential [mV] at the recorded location of every cell: the initial value,
        then one sample every ``record_every`` steps. Always two-dimensional, also for one
        cell; a read-only memory map when the run streamed it to a file.
    params : dict
        Every parameter used (JSON-serialisable), including the resolved clamp and record nodes.
    info : dict
        Run details: ``n_nodes`` per cell, ``backend`` (the plan's description) and wall
        times [s]: ``setup_s`` (reading, discretizing, planning), ``first_step_s`` (the first
        step, which loads or compiles the kernels) and ``loop_s`` (the other steps).
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
    record_every: int = 1,
    record_to: str | os.PathLike | None = None,
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
        ``delay <= t_n + dt/2 < delay + dur``. ``|amp| <= 1e6`` nA.
    nseg, d_lambda : int or float, optional
        Discretization of an SWC file (at most one; see :func:`hinesbatch.discretize`).
        Not allowed with a CellGeometry.
    cm : float, optional
        Membrane capacitance [µF/cm²], > 0; default the geometry's (NEURON's 1.0 for a file).
    ra : float, optional
        Axial resistivity [Ω·cm], a normal float > 0; default NEURON's 35.4 for a file. A
        CellGeometry carries its own (its ``ri`` depend on it): a different value raises
        ``ValueError``.
    g_pas, e_pas : float
        Leak conductance [S/cm²], >= 0, and reversal potential [mV] (NEURON's ``pas``
        defaults).
    v_init : float
        Initial potential [mV] of every node. ``v_init`` and ``e_pas`` lie within
        ``±1e6`` mV.
    n_cells : int
        Number of identical copies simulated as one batch (:class:`MonoBatch`).
    backend : str
        Solver backend (``"auto"`` or a name from :func:`hinesbatch.backends`).
    clamp, record : (section name, x)
        Where the clamp sits and where ``v`` is recorded (NEURON's ``section(x)``).
    record_every : int
        Record one sample every ``record_every`` steps (and the initial one): a long run's
        recordings shrink by that factor. 1 (default) records every step.
    record_to : str or os.PathLike, optional
        Stream the recordings into this ``.npy`` file as the run goes instead of holding
        them in memory; ``Result.v`` is then a read-only memory map of it.
    progress : bool or None
        Show a progress bar on stderr; ``None`` shows it on long runs when stderr is a terminal.

    Returns
    -------
    Result
        ``t`` (n_samples,) [ms], ``v`` (n_cells, n_samples) [mV], ``params``, ``info``, with
        ``n_samples = n_steps // record_every + 1``.

    Raises
    ------
    ValueError, TypeError
        A parameter out of range or of the wrong kind (the message names it).
    InsufficientMemoryError
        The state and recordings would not fit in the memory available (checked before
        anything large is allocated); the message says what to change.
    NonFiniteStateError
        The potential became NaN or infinite; names the cell, location and time.
    """
    t0 = time.perf_counter()
    stim = iclamp if isinstance(iclamp, IClamp) else _iclamp_from_tuple(iclamp)
    _check_number("g_pas", g_pas, low=0.0)
    _check_potential("e_pas", e_pas)
    _check_potential("v_init", v_init)
    n_cells = _check_cells(n_cells)
    record_every = _check_every(record_every)
    grid = TimeGrid(tstop, dt)
    geometry, cm, ra = _resolve_geometry(geometry_or_path, nseg=nseg, d_lambda=d_lambda, cm=cm, ra=ra)
    clamp_node = _location_node(geometry, clamp, "clamp")
    record_node = _location_node(geometry, record, "record")
    from ..solvers.plan import plan as make_plan
    from ..tree.structure import MonoBatch
    from .assembly import passive_system

    system = passive_system(geometry, dt=dt, cm=cm, g_pas=g_pas, e_pas=e_pas)
    _check_system(system, cm=cm, g_pas=g_pas, dt=dt)

    solver = make_plan(MonoBatch(system.structure, n_cells), backend=backend)
    n_samples = grid.n_steps // record_every + 1
    out_path = None if record_to is None else os.fspath(record_to)
    _check_memory(solver, system.n_nodes, n_samples, record_every, out_path)
    out = None
    if out_path is not None:
        out = np.lib.format.open_memmap(out_path, mode="w+", dtype=np.float64,
                                        shape=(n_cells, n_samples))
    show = show_progress(progress, grid.n_steps * system.n_nodes * n_cells)
    setup_s = time.perf_counter() - t0
    v, times = run_passive(system, solver, v_init=v_init, grid=grid, iclamp=stim,
                           stim_node=system.position(clamp_node),
                           record_node=system.position(record_node), progress=show,
                           record_every=record_every, out=out,
                           node_name=_node_names(geometry, system))
    if out_path is not None:
        v.flush()
        v = np.load(out_path, mmap_mode="r")  # read-only from here on
    params = {
        "morphology": str(geometry.source),
        "tstop_ms": float(tstop), "dt_ms": float(dt), "n_steps": grid.n_steps,
        "record_every": record_every,
        "iclamp": {"amp_nA": stim.amp, "delay_ms": stim.delay, "dur_ms": stim.dur},
        "clamp": {"section": clamp[0], "x": float(clamp[1]), "node": clamp_node},
        "record": {"section": record[0], "x": float(record[1]), "node": record_node},
        "nseg": nseg, "d_lambda": d_lambda,
        "cm_uF_per_cm2": float(cm), "ra_ohm_cm": float(ra),
        "g_pas_S_per_cm2": float(g_pas), "e_pas_mV": float(e_pas), "v_init_mV": float(v_init),
        "n_cells": n_cells, "backend": solver.backend_name,
    }
    info = {"n_nodes": system.n_nodes, "n_sections": geometry.n_sections,
            "backend": solver.describe(), "setup_s": setup_s, **times}
    return Result(t=grid.sample_times(record_every), v=v, params=params, info=info)


def run_passive(system: PassiveSystem, solver, *, v_init: float, amps: np.ndarray | None = None,
                grid: TimeGrid | None = None, iclamp: IClamp | None = None, stim_node: int,
                record_node: int, progress: bool = False, record_every: int = 1,
                out: np.ndarray | None = None, node_name=None):
    """The time loop: assemble, solve through ``solver`` (a :class:`Plan`), ``v += Δv``, record.

    The state lives in the plan's array module (on the device for a GPU backend), with a
    small recording buffer copied to ``out`` on the host every few steps. At each copy (and
    at the end) the state is checked for NaN and infinity.

    Parameters
    ----------
    system : PassiveSystem
    solver : Plan
        A plan for ``MonoBatch(system.structure, n_cells)``.
    v_init : float
        Initial potential [mV] of every node.
    amps : (n_steps,) float64, optional
        Clamp current [nA] during each step. Or give ``grid`` and ``iclamp`` instead, which
        generate the currents as the run goes (no array of n_steps values).
    grid : TimeGrid, optional
    iclamp : IClamp, optional
    stim_node, record_node : int
        Node indices of the clamp and the recording.
    progress : bool
        Show a tqdm bar on stderr.
    record_every : int
        Record one sample every ``record_every`` steps, after the initial one.
    out : (n_cells, n_steps // record_every + 1) float64 array, optional
        Where the samples go (e.g. a memory-mapped ``.npy``); allocated when not given.
    node_name : callable, optional
        ``node_name(node) -> str`` naming a node in error messages (default ``"node i"``).

    Returns
    -------
    v : (n_cells, n_steps // record_every + 1) float64 NumPy array
        Recorded potential [mV], ``v_init`` first (``out`` when given).
    times : dict
        ``first_step_s``: wall time [s] of the first step, which loads or compiles the
        kernels; ``loop_s``: wall time [s] of the other steps, including the copies of the
        recordings to the host (``time.perf_counter``).

    Raises
    ------
    NonFiniteStateError
        The state holds NaN or infinity at a check.
    """
    xp = solver.xp
    n_cells, n = solver.structure.values_shape
    steps = _Steps(amps, grid, iclamp)
    n_samples = steps.n_steps // record_every + 1
    if out is None:
        out = np.empty((n_cells, n_samples))
    elif out.shape != (n_cells, n_samples):
        raise ValueError(f"out has shape {out.shape}, expected {(n_cells, n_samples)}")
    from ..solvers.cpu.backends import THREADS_MIN_UNKNOWNS
    from .assembly import make_assembler

    parallel = n_cells > 1 and n_cells * n >= THREADS_MIN_UNKNOWNS  # as auto's choice of threads
    assembler = make_assembler(system, xp, parallel=parallel)
    state = xp.full((n_cells, n), float(v_init))
    d = xp.empty((n_cells, n))
    rhs = xp.empty((n_cells, n))
    chunk = _chunk_steps(steps.n_steps, n_cells, record_every)
    buffer = xp.empty((n_cells, -(-chunk // record_every) + 1))  # last column: unrecorded steps
    sink = buffer.shape[1] - 1
    out[:, 0] = float(v_init)
    checker = _FiniteCheck(xp, node_name)
    bar = _progress_bar(steps.n_steps) if progress else None
    k = column = 0  # steps taken, samples stored
    first_step_s = 0.0
    start = time.perf_counter()
    try:
        for amp_list, t_after in steps.pieces(chunk):
            used = 0
            for amp in amp_list:
                assembler.assemble(state, d, rhs, stim_node, amp)
                dv = solver.solve(d, rhs, overwrite=True, check_finite=False)
                k += 1
                if k % record_every:
                    assembler.advance(state, dv, buffer, sink, record_node)
                else:
                    assembler.advance(state, dv, buffer, used, record_node)
                    used += 1
            if used:
                block = buffer[:, :used]
                out[:, column + 1 : column + 1 + used] = block.get() if hasattr(block, "get") else block
                column += used
            checker(state, k, t_after)
            if k == 1:
                first_step_s = time.perf_counter() - start
                start = time.perf_counter()
            if bar is not None:
                bar.update(len(amp_list))
    finally:
        if bar is not None:
            bar.close()
    loop_s = time.perf_counter() - start if k > 1 else 0.0
    return out, {"first_step_s": first_step_s, "loop_s": loop_s}


class _Steps:
    """The clamp current of every step, handed out in pieces: the first piece is one step
    (it loads or compiles the kernels and is timed apart), the others ``size`` steps."""

    def __init__(self, amps, grid, iclamp):
        if amps is not None:
            if grid is not None or iclamp is not None:
                raise TypeError("give amps, or grid and iclamp, not both")
            self._amps = np.asarray(amps, dtype=np.float64).reshape(-1)
            self.n_steps = int(self._amps.size)
        else:
            if grid is None or iclamp is None:
                raise TypeError("give amps, or both grid and iclamp")
            self._amps = None
            self.n_steps = grid.n_steps
        self._grid, self._iclamp = grid, iclamp

    def _arrays(self):
        """(amps [nA], t_end [ms] or None) in chunks."""
        if self._amps is not None:
            yield self._amps, None
            return
        for t_mid, t_end in self._grid.chunks():
            yield self._iclamp.amplitudes(t_mid), t_end

    def pieces(self, size: int):
        """Yield ``(amps as a list of floats, t after the piece's last step or None)``."""
        first = True
        for amps, t_end in self._arrays():
            i = 0
            while i < amps.size:
                stop = i + 1 if first else min(amps.size, i + size)
                first = False
                yield amps[i:stop].tolist(), None if t_end is None else float(t_end[stop - 1])
                i = stop


class _FiniteCheck:
    """After each piece of steps: every value of the state is finite, or an error that says
    which cell, where and when."""

    def __init__(self, xp, node_name):
        self._xp = xp
        self._name = node_name or (lambda node: f"node {node}")
        self._last = "the start"

    def __call__(self, state, k: int, t_ms: float | None) -> None:
        xp = self._xp
        when = f"t = {t_ms:g} ms" if t_ms is not None else f"step {k}"
        if bool(xp.isfinite(state).all()):
            self._last = when
            return
        flat = int(xp.flatnonzero(~xp.isfinite(state.reshape(-1)))[0])
        cell, node = divmod(flat, state.shape[1])
        value = float(state.reshape(-1)[flat])
        where = self._name(node)
        raise NonFiniteStateError(
            f"the membrane potential became {value} in cell {cell} at {where} by {when} "
            f"(step {k}; it was finite everywhere at {self._last}): the parameters overflow "
            "the update; check cm, ra, g_pas, v_init, e_pas and the clamp amplitude",
            cell=cell, location=where, t_ms=float("nan") if t_ms is None else t_ms)


#: Steps between the loop's copies of recordings and checks of the state, at least.
_MIN_CHUNK = 16
#: Bytes of the recording buffer, at most (unless one column per cell is more).
_BUFFER_BYTES = 64 * 2**20


def _chunk_steps(n_steps: int, n_cells: int, record_every: int) -> int:
    """Steps per piece of the loop: about 1/200 of the run (the progress bar's resolution),
    at least 16, and no more than fits a 64 MiB recording buffer."""
    columns = max(1, _BUFFER_BYTES // (8 * n_cells))
    return max(1, min(max(_MIN_CHUNK, n_steps // 200), columns * record_every))


def _node_names(geometry, system: PassiveSystem):
    """``name(system node) -> "section(x)"`` for error messages."""
    def name(node: int) -> str:
        g = int(system.node_order[node])
        return f"{geometry.section_names[int(geometry.section[g])]}({float(geometry.x[g]):g})"

    return name


def _check_memory(solver, n_nodes: int, n_samples: int, record_every: int, out_path) -> None:
    n_cells = solver.structure.n_cells
    columns = -(-_chunk_steps((n_samples - 1) * record_every, n_cells, record_every) // record_every)
    on_device = solver.xp is not np
    estimate = MemoryEstimate.passive(
        n_cells=n_cells, n_nodes=n_nodes, n_samples=n_samples, buffer_columns=columns,
        on_device=on_device, streamed=out_path is not None)
    hint = ("simulate fewer cells (n_cells, --cells), record every k-th step (record_every, "
            "--record-every K) or stream the recordings to disk (record_to, --stream)")
    estimate.check(hint=hint, device_free=(lambda: available_device_memory(solver.xp))
                   if on_device else None)
    if out_path is not None:
        folder = os.path.dirname(os.path.abspath(out_path))
        free = shutil.disk_usage(folder).free
        if estimate.disk > free:
            raise InsufficientMemoryError(
                f"the recordings need {format_bytes(estimate.disk)} on disk but {folder} has "
                f"{format_bytes(free)} free; record every k-th step (record_every, "
                "--record-every K) or write elsewhere", needed=estimate.disk, available=free,
                where="disk")


def _progress_bar(total: int):
    from tqdm import tqdm

    return tqdm(total=total, unit="step", file=sys.stderr, mininterval=0.5, leave=False)


def show_progress(progress: bool | None, work: float) -> bool:
    """Whether to draw a progress bar: ``progress`` when given, else for runs of more than
    ``_LONG_RUN`` node-steps (``work``) with stderr a terminal."""
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


def _check_potential(name: str, value) -> float:
    value = _check_number(name, value)
    if abs(value) > MAX_ABS_POTENTIAL_MV:
        raise ValueError(
            f"{name} must lie within +-{MAX_ABS_POTENTIAL_MV:g} mV, got {value:g} mV: membrane "
            "potentials are tens of mV, and far larger ones overflow the update")
    return value


def _check_positive(name: str, value, unit: str) -> float:
    """A finite, normal (not subnormal) float > 0: its reciprocal is finite."""
    value = _check_number(name, value)
    if not value > 0:
        raise ValueError(f"{name} must be finite and > 0 {unit}, got {value}")
    if value < sys.float_info.min:
        raise ValueError(
            f"{name} = {value} {unit} is below the smallest normal float64 "
            f"({sys.float_info.min:.3g}); {name} must be a normal number > 0")
    return value


def _check_every(record_every) -> int:
    if isinstance(record_every, bool) or not isinstance(record_every, (int, np.integer)):
        raise TypeError(f"record_every must be an integer, got {type(record_every).__name__}")
    if record_every < 1:
        raise ValueError(f"record_every must be >= 1 (steps), got {record_every}")
    return int(record_every)


def _check_system(system: PassiveSystem, *, cm: float, g_pas: float, dt: float) -> None:
    """Every coefficient finite: huge ``cm/dt`` or ``g_pas`` overflow float64 (a non-finite
    ``1/ri`` is refused by :func:`.assembly.passive_system`)."""
    for values, what in ((system.c_dt_uS, f"the capacitance over dt (cm = {cm:g} uF/cm2, "
                                          f"dt = {dt:g} ms)"),
                         (system.g_leak_uS, f"the leak conductance (g_pas = {g_pas:g} S/cm2)"),
                         (system.diagonal_uS, "the diagonal (cm/dt + g_pas + axial)")):
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            raise ValueError(f"{what} is not finite at {bad.size} of {values.size} nodes: "
                             "the parameters overflow float64")


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
        if ra is not None and _check_positive("ra", ra, "ohm*cm") != source.ra:
            raise ValueError(
                f"the CellGeometry was discretized with Ra = {source.ra} ohm*cm, but ra = {ra} "
                "was asked for: its axial resistances depend on Ra, so discretize again"
            )
        cm = _check_positive("cm", source.cm if cm is None else cm, "uF/cm2")
        return source, cm, source.ra
    cm = _check_positive("cm", NEURON_DEFAULTS["cm"] if cm is None else cm, "uF/cm2")
    ra = _check_positive("ra", NEURON_DEFAULTS["ra"] if ra is None else ra, "ohm*cm")
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
