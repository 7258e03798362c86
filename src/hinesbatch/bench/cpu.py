"""``hinesbatch bench cpu``: CPU solver throughput, and the passive simulation against NEURON.

Question: how fast do the CPU backends solve batches of real cells (``serial`` against
``multicore``), and are hinesbatch's serial solver and passive simulation at least as fast as
NEURON on one core, for the same cell, geometry and number of steps?

* Solver: for each morphology (discretized with d_lambda 0.1) and batch size, a
  :class:`MonoBatch` of copies is solved with ``plan(..., backend).solve(d, rhs,
  overwrite=True, check_finite=False)``; ``d`` and ``rhs`` are those of a passive time step
  and are restored (untimed) before every call. Median of ``--repeats`` after one warm-up.
  Contenders: ``serial`` (Algorithm 1, cell after cell), ``serial`` with ``lockstep=8`` (the
  multicore kernel on one core) and ``multicore`` (``lockstep=8``, its default). Every
  contender's solution is compared with the others'.
* Simulation: NEURON (Import3d, same nseg per section, ``pas``, ``IClamp`` at soma(0.5),
  fixed step) times ``h.continuerun(tstop)`` only; hinesbatch times the
  :func:`~hinesbatch.sim.passive.run_passive` loop for one cell on the ``serial`` backend,
  after a warm-up run (JIT compilation excluded). Both use NEURON's defaults (dt 0.025 ms).
  Also timed: ``plan.solve`` alone on that cell (the solver's share of a step).
  The two traces are compared as a check that the same thing was computed.
* Contenders are timed in turn (serial, multicore, serial, ...; NEURON, hinesbatch, ...), so
  that load from other processes on a shared machine hits them alike.

Goals: serial solver and simulation at least as fast as NEURON on one core; multicore at least
0.7 x threads x serial on the largest batch.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from .common import find_morphologies, interleaved_times, machine_info, write_results

__all__ = ["configure", "run", "QUESTION"]

QUESTION = ("How fast do the CPU backends solve batches of real cells (serial vs multicore), "
            "and are hinesbatch's serial solver and passive simulation at least as fast as "
            "NEURON on one core for the same cell, geometry and step count?")
#: Default morphologies (repository test set), small / medium / big by node count at d_lambda 0.1.
MORPHOLOGIES = ("mp_ma_40984_gc2.CNG.swc", "c91662.swc", "C220498B-I4.CNG.swc")
CELLS = (256, 2560, 25600)
D_LAMBDA = 0.1
#: The simulated protocol (NEURON's pas and cable defaults).
PROTOCOL = {"tstop": 100.0, "dt": 0.025, "iclamp": (0.5, 10.0, 50.0), "cm": 1.0, "ra": 35.4,
            "g_pas": 0.001, "e_pas": -70.0, "v_init": -65.0}
#: The multicore backend runs LOCKSTEP cells together per thread (its default); serial runs
#: Algorithm 1, cell after cell. "serial_lockstep" is multicore's kernel on one core, so that
#: multicore / serial_lockstep measures the threads alone.
LOCKSTEP = 8
CONTENDERS = {"serial": ("serial", {}), "serial_lockstep": ("serial", {"lockstep": LOCKSTEP}),
              "multicore": ("multicore", {"lockstep": LOCKSTEP})}
QUICK = {"cells": (2, 8), "tstop": 2.0, "repeats": 1}
EFFICIENCY_GOAL = 0.7


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``bench cpu``'s arguments to ``parser``."""
    parser.description = QUESTION
    parser.add_argument("--out", default=".", metavar="DIR",
                        help="directory for cpu.json and cpu.md (default: the current folder)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: bundled c91662 only, tiny batches, a 2 ms simulation")
    parser.add_argument("--swc", nargs="+", metavar="FILE",
                        help=f"morphologies (default the repository's {', '.join(MORPHOLOGIES)})")
    parser.add_argument("--cells", nargs="+", type=int, metavar="N",
                        help=f"batch sizes (default {' '.join(map(str, CELLS))})")
    parser.add_argument("--repeats", type=int, default=7, help="timed repeats (median; default 7)")
    parser.add_argument("--no-neuron", action="store_true", help="skip the NEURON comparison")


def run(args: argparse.Namespace) -> int:
    """Run the benchmark; print rows as they finish; write the results. Returns the exit status."""
    import warnings

    try:
        paths = find_morphologies(args, MORPHOLOGIES)
    except FileNotFoundError as exc:
        print(f"hinesbatch bench cpu: error: {exc}", file=sys.stderr)
        return 1
    cells = tuple(args.cells or (QUICK["cells"] if args.quick else CELLS))
    repeats = QUICK["repeats"] if args.quick else args.repeats
    protocol = dict(PROTOCOL, tstop=QUICK["tstop"] if args.quick else PROTOCOL["tstop"])
    if repeats < 1 or min(cells) < 1:
        print("hinesbatch bench cpu: error: --repeats and --cells must be >= 1", file=sys.stderr)
        return 1
    with warnings.catch_warnings():  # SWC convention warnings of real files: not our topic here
        warnings.simplefilter("ignore", UserWarning)
        geometries = _geometries(paths, protocol)
    for geo in geometries:
        if "soma[0]" not in geo.section_names:
            print(f"hinesbatch bench cpu: error: {geo.source} has no soma[0]; the benchmark "
                  "clamps and records soma[0](0.5)", file=sys.stderr)
            return 1
    solver_rows = [row for geo in geometries for row in _solver_rows(geo, cells, protocol, repeats)]
    sim_rows = [_sim_row(geo, protocol, repeats, use_neuron=not args.no_neuron) for geo in geometries]
    notes = _goals(solver_rows, sim_rows)
    for note in notes:
        print(note)
    tables = {"Solver: serial vs multicore (ms per batch solve)": solver_rows,
              "Passive simulation, one cell, one core: NEURON vs hinesbatch": sim_rows}
    json_path, md_path = write_results(tables, args.out, "cpu", question=QUESTION, notes=notes,
                                       machine=machine_info({"protocol": _describe(protocol)}))
    print(f"wrote {json_path} and {md_path}")
    return 0


def _describe(p: dict) -> str:
    amp, delay, dur = p["iclamp"]
    return (f"d_lambda {D_LAMBDA}, Ra {p['ra']} ohm*cm, cm {p['cm']} uF/cm2, pas g {p['g_pas']} "
            f"S/cm2 e {p['e_pas']} mV, v_init {p['v_init']} mV, IClamp {amp} nA {delay}-"
            f"{delay + dur} ms at soma[0](0.5), dt {p['dt']} ms, tstop {p['tstop']} ms")


def _geometries(paths, protocol) -> list:
    from ..discretize import discretize

    geos = [discretize(p, d_lambda=D_LAMBDA, ra=protocol["ra"], cm=protocol["cm"]) for p in paths]
    return sorted(geos, key=lambda g: g.n_nodes)


def _passive_values(geo, protocol):
    """(system, d, rhs) of one passive step at a non-uniform voltage, for one cell."""
    from ..sim.assembly import make_assembler, passive_system

    system = passive_system(geo, dt=protocol["dt"], cm=protocol["cm"], g_pas=protocol["g_pas"],
                            e_pas=protocol["e_pas"])
    v = np.random.default_rng(0).normal(-65.0, 5.0, (1, geo.n_nodes))
    d, rhs = np.empty_like(v), np.empty_like(v)
    make_assembler(system, np).assemble(v, d, rhs, geo.node("soma[0]", 0.5), 0.1)
    return system, d[0], rhs[0]


def _solver_rows(geo, cells, protocol, repeats) -> list[dict]:
    import numba

    from ..solvers.plan import plan
    from ..tree.structure import MonoBatch

    system, d0, rhs0 = _passive_values(geo, protocol)
    threads = numba.get_num_threads()
    rows = []
    for n in cells:
        batch = MonoBatch(system.structure, n)
        d = np.empty((n, geo.n_nodes))
        rhs = np.empty_like(d)

        def restore():
            np.copyto(d, d0)
            np.copyto(rhs, rhs0)

        plans = {name: plan(batch, backend=backend, **options)
                 for name, (backend, options) in CONTENDERS.items()}
        runs = {name: (lambda s=s: s.solve(d, rhs, overwrite=True, check_finite=False))
                for name, s in plans.items()}
        times = {name: float(np.median(t)) for name, t in
                 interleaved_times(runs, repeats=repeats, setup=restore).items()}
        solutions = []
        for run_ in runs.values():
            restore()
            run_()
            solutions.append(rhs.copy())
        speedup = times["serial"] / times["multicore"]
        rows.append({
            "morphology": Path(geo.source).name, "nodes": geo.n_nodes, "cells": n,
            "serial_ms": 1e3 * times["serial"],
            f"serial_lockstep{LOCKSTEP}_ms": 1e3 * times["serial_lockstep"],
            "multicore_ms": 1e3 * times["multicore"], "threads": threads,
            "speedup": speedup, "efficiency": speedup / threads,
            "parallel_efficiency": times["serial_lockstep"] / times["multicore"] / threads,
            "serial_ns_per_node": 1e9 * times["serial"] / (n * geo.n_nodes),
            "max_abs_diff": float(max(np.max(np.abs(x - solutions[0])) for x in solutions)),
        })
        del solutions, d, rhs
        print(_row_text(rows[-1]), flush=True)
    return rows


def _sim_row(geo, protocol, repeats, *, use_neuron: bool) -> dict:
    """NEURON's ``continuerun`` and hinesbatch's loop on one cell, timed in turn."""
    from ..sim.passive import run_passive
    from ..sim.stimuli import IClamp, time_grid
    from ..solvers.plan import plan
    from ..tree.structure import MonoBatch

    p = protocol
    system, d0, rhs0 = _passive_values(geo, p)
    t, t_mid = time_grid(p["tstop"], p["dt"])
    amps = IClamp(*p["iclamp"]).amplitudes(t_mid)
    node = geo.node("soma[0]", 0.5)
    solver = plan(MonoBatch(system.structure, 1), backend="serial")
    neuron = _neuron_model(geo, p) if use_neuron else None

    def ours():
        return run_passive(system, solver, v_init=p["v_init"], amps=amps, stim_node=node,
                           record_node=node)

    ours_s, nrn_s, solve_s = [], [], []
    for k in range(repeats + 1):  # round 0 compiles and warms up: not counted
        trace, times = ours()
        loop_s = times["first_step_s"] + times["loop_s"]
        nrn = neuron["run"]() if neuron is not None else None
        one = _solve_alone(solver, d0, rhs0, amps.size)
        if k:
            ours_s.append(loop_s)
            solve_s.append(one)
            if nrn is not None:
                nrn_s.append(nrn)
    solve_s = float(np.median(solve_s))
    ours_med = float(np.median(ours_s))
    row = {"morphology": Path(geo.source).name, "nodes": geo.n_nodes, "steps": int(amps.size),
           "neuron_s": None, "hinesbatch_s": ours_med, "speedup_vs_neuron": None,
           "neuron_us_per_step": None, "hinesbatch_us_per_step": 1e6 * ours_med / amps.size,
           "solve_us_per_step": 1e6 * solve_s, "max_abs_dv_mV": None}
    if neuron is not None:
        v_nrn = neuron["trace"]()
        neuron["close"]()
        nrn_med = float(np.median(nrn_s))
        row.update(neuron_s=nrn_med, speedup_vs_neuron=nrn_med / ours_med,
                   neuron_us_per_step=1e6 * nrn_med / amps.size,
                   max_abs_dv_mV=float(np.max(np.abs(v_nrn - trace[0]))) if v_nrn.size == t.size
                   else float("nan"))
    print(_row_text(row), flush=True)
    return row


def _solve_alone(solver, d0, rhs0, n: int) -> float:
    """Seconds per ``plan.solve`` of one cell: n solves minus n restores of their inputs."""
    d, rhs = d0[None].copy(), rhs0[None].copy()
    start = time.perf_counter()
    for _ in range(n):
        np.copyto(d, d0)
        np.copyto(rhs, rhs0)
        solver.solve(d, rhs, overwrite=True, check_finite=False)
    both = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(n):
        np.copyto(d, d0)
        np.copyto(rhs, rhs0)
    return (both - (time.perf_counter() - start)) / n


def _neuron_model(geo, p) -> dict | None:
    """The same passive cell in NEURON: ``run()`` -> continuerun seconds, ``trace()``, ``close()``.

    None (with a message) when NEURON cannot be imported.
    """
    try:
        from neuron import h
    except Exception as exc:  # ImportError, or a broken install
        print(f"NEURON is not available ({exc}): no NEURON comparison", file=sys.stderr)
        return None
    h.load_file("stdrun.hoc")
    h.load_file("import3d.hoc")
    for sec in list(h.allsec()):
        h.delete_section(sec=sec)
    reader = h.Import3d_SWC_read()
    reader.quiet = 1
    reader.input(str(geo.source))
    h.Import3d_GUI(reader, False).instantiate(None)
    sections = {sec.name(): sec for sec in h.allsec()}
    if sorted(sections) != sorted(geo.section_names):
        raise RuntimeError(f"NEURON's sections of {geo.source} differ from hinesbatch's")
    for name, sec in sections.items():
        sec.nseg = int(geo.nseg[geo.section_names.index(name)])  # the very same compartments
        sec.Ra, sec.cm = p["ra"], p["cm"]
        sec.insert("pas")
        for seg in sec:
            seg.pas.g, seg.pas.e = p["g_pas"], p["e_pas"]
    stim = h.IClamp(sections["soma[0]"](0.5))
    stim.amp, stim.delay, stim.dur = p["iclamp"]
    v = h.Vector().record(sections["soma[0]"](0.5)._ref_v)
    h.dt, h.steps_per_ms, h.secondorder = p["dt"], 1.0 / p["dt"], 0

    def run() -> float:
        h.finitialize(p["v_init"])
        start = time.perf_counter()
        h.continuerun(p["tstop"])
        return time.perf_counter() - start

    def close() -> None:
        nonlocal stim
        stim = None
        for sec in list(h.allsec()):
            h.delete_section(sec=sec)

    return {"run": run, "trace": lambda: np.array(v), "close": close}


def _goals(solver_rows, sim_rows) -> list[str]:
    notes = []
    largest = max(r["cells"] for r in solver_rows)
    for r in (r for r in solver_rows if r["cells"] == largest):
        met = r["efficiency"] >= EFFICIENCY_GOAL
        notes.append(
            f"multicore on {r['morphology']} x {largest}: {r['speedup']:.2f}x serial on "
            f"{r['threads']} threads = {r['efficiency']:.2f} x threads x serial; goal >= "
            f"{EFFICIENCY_GOAL} -> {'met' if met else 'NOT met'} (threads alone, same "
            f"{LOCKSTEP}-cell lockstep kernel on one core: {r['parallel_efficiency']:.2f} of linear)")
    for r in sim_rows:
        if r["neuron_s"] is None:
            notes.append(f"{r['morphology']}: NEURON not run, no comparison")
            continue
        sim_met = r["hinesbatch_s"] <= r["neuron_s"]
        solve_met = r["solve_us_per_step"] <= r["neuron_us_per_step"]
        notes.append(
            f"{r['morphology']} ({r['nodes']} nodes, {r['steps']} steps): simulation "
            f"{r['hinesbatch_us_per_step']:.2f} us/step vs NEURON {r['neuron_us_per_step']:.2f} "
            f"({r['speedup_vs_neuron']:.2f}x) -> goal {'met' if sim_met else 'NOT met'}; serial "
            f"solve alone {r['solve_us_per_step']:.2f} us/step (through plan.solve) vs NEURON's "
            f"whole step -> goal {'met' if solve_met else 'NOT met'}; max |dV| "
            f"{r['max_abs_dv_mV']:.1e} mV")
    return notes


def _row_text(row: dict) -> str:
    return "  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items())
