"""``hinesbatch bench sim``: the Hodgkin-Huxley simulation on the CPU against NEURON, and on
the GPU against Jaxley.

``--part cpu`` (the default without a GPU) runs this module's benchmark; ``--part gpu`` runs
:mod:`hinesbatch.bench.sim_gpu` (Jaxley's Fig. 2 workload, real-morphology batches, several
GPUs, the card's floors); ``--part all`` (the default with a GPU) runs both, into the same
``--out``.

The CPU part's question: is hinesbatch's ``serial`` simulation of an active cell at least twice as fast per
step as NEURON on one core, does ``multicore`` reach 0.7 x cores x ``serial`` on a batch of
1,000 cells, and does a whole ``hinesbatch simulate`` command (start-up included) finish a
100 ms run before the same NEURON script does?

* Protocol (the validation protocol): hh everywhere with NEURON's defaults, d_lambda 0.1 at
  100 Hz, Ra 100 Ω·cm, IClamp 1 nA 5-55 ms at soma[0](0.5), dt 0.025 ms, v_init -65 mV,
  100 ms; v recorded at soma[0](0.5) every step and the soma's spikes (10 mV).
* One cell, one core: three real cells of different sizes. hinesbatch builds
  :class:`hinesbatch.Cell` + :class:`hinesbatch.Simulation` (``backend="serial"``) and times
  ``Simulation.run`` after a warm-up run (JIT compilation excluded, the run's initialization
  included, which NEURON's timing leaves out); NEURON builds the same
  cell (Import3d, the same nseg, :mod:`hinesbatch.bench.neuron_models`) and times
  ``ParallelContext.psolve`` (its stepping loop in C) after ``finitialize``. Both with
  ``usetable_hh`` 1 (hh's TABLE, NEURON's default) and 0, timed in turn (hinesbatch, NEURON,
  hinesbatch, ...) so that load from other processes hits both alike; median of
  ``--repeats``. The traces and spike times are compared as a check that both computed the
  same thing. A compartment is a node of the Hines system (NEURON's segments plus the
  zero-area section ends): compartment-steps/s = nodes x steps / seconds.
* Batch: ``--batch-cells`` copies of the middle cell, ``serial`` against ``multicore``
  (``--batch-tstop`` ms, shorter than 100 ms so that the serial run takes minutes, not an hour),
  whole runs and their stepping alone (``Results.meta["step_seconds"]``: the set-up, which one
  thread does, left out). Beside it, the speedup the same threads give a vectorized compute-bound loop
  (:mod:`hinesbatch.bench._cpu_ceiling`): where a machine's cores lose clock when all are
  busy, or are logical CPUs of shared cores, that loop shows the ceiling.
* Whole command: ``hinesbatch simulate CELL --mechanism hh ... --tstop 100 --out x.npz`` as a
  subprocess (Python start-up, imports, reading the file, kernels loaded from Numba's cache or
  compiled, the run, writing the file) against ``python script.py`` running the same model with
  NEURON (``h.continuerun``) and saving v, on the middle cell. The first run of each (cold
  caches) is reported apart from the median of the others. ``--command-only`` runs this part
  alone.
"""
from __future__ import annotations

import argparse
import functools
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from . import sim_gpu, sim_nmodl
from .common import find_morphologies, machine_info, write_results
from .neuron_models import HHModel, HHProtocol, neuron_script

__all__ = ["configure", "run", "run_cpu", "QUESTION", "PROTOCOL", "MORPHOLOGIES"]

QUESTION = ("Is hinesbatch's serial simulation of an active (hh) cell at least 2x as fast per "
            "step as NEURON on one core, does multicore reach 0.7 x cores x serial on 1,000 "
            "cells, and does a whole `hinesbatch simulate` command (start-up included) finish a "
            "100 ms run before the same NEURON script?")
PROTOCOL = HHProtocol(d_lambda=0.1, ra=100.0, cm=1.0, iclamp=(1.0, 5.0, 50.0), dt=0.025,
                      v_init=-65.0, threshold=10.0)
TSTOP = 100.0
#: Small, middle and large cells of the repository's test set (nodes at d_lambda 0.1, Ra 100:
#: 169, 1303, 1951).
MORPHOLOGIES = ("mp_ma_40984_gc2.CNG.swc", "c91662.swc", "morph_l5pc_with_axon.swc")
BATCH_CELLS = 1000
BATCH_TSTOP = 10.0
QUICK = {"tstop": 2.0, "batch_cells": 4, "batch_tstop": 1.0, "repeats": 1, "command_repeats": 1}
#: Goals: serial per step against NEURON; multicore against threads x serial.
SPEEDUP_GOAL = 2.0
EFFICIENCY_GOAL = 0.7
#: Largest |ΔV| [mV] between hinesbatch and NEURON for a speed comparison to count (the
#: validation tests' bound): a faster run of a different computation meets no goal.
AGREEMENT_MV = 1e-9


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``bench sim``'s arguments to ``parser``."""
    parser.description = QUESTION
    parser.add_argument("--out", default=".", metavar="DIR",
                        help="directory for sim.json and sim.md, and the GPU part's "
                             "sim_gpu.json, .md and .png (default: the current folder)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: the bundled c91662 only, 2 ms, a batch of 4 cells; "
                             "the GPU part: 2 and 4 simulations, batches of 17 cells, one "
                             "timed call per case")
    parser.add_argument("--swc", nargs="+", metavar="FILE",
                        help=f"morphologies (default the repository's {', '.join(MORPHOLOGIES)})")
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats (median; default 5)")
    parser.add_argument("--batch-cells", type=int, metavar="N",
                        help=f"cells of the multicore batch (default {BATCH_CELLS})")
    parser.add_argument("--batch-tstop", type=float, metavar="MS",
                        help=f"simulated time of the batch [ms] (default {BATCH_TSTOP:g})")
    parser.add_argument("--command-repeats", type=int, default=3, metavar="N",
                        help="runs of each whole command after the cold one (default 3)")
    parser.add_argument("--no-neuron", action="store_true", help="skip NEURON")
    parser.add_argument("--no-command", action="store_true", help="skip the whole-command timing")
    parser.add_argument("--command-only", action="store_true",
                        help="only the whole-command timing (against NEURON's script, on the "
                             "middle cell): no per-step or batch rows")
    parser.add_argument("--part", choices=("cpu", "gpu", "all", "nmodl"),
                        help="the CPU part (sim.json, sim.md), the GPU part against Jaxley "
                             "(sim_gpu.json, .md, .png) or both (default: all with a GPU, cpu "
                             "without); nmodl: a ModelDB model's own mod files, read from "
                             "--mod-dir, against NEURON (sim_nmodl.json, .md)")
    sim_gpu.add_arguments(parser)
    sim_nmodl.add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Run the parts ``args.part`` names; returns the exit status (the first failure's)."""
    part = args.part or ("all" if sim_gpu.gpu_present() else "cpu")
    if part == "nmodl":
        return sim_nmodl.run(args)
    status = 0
    if part in ("cpu", "all"):
        status = run_cpu(args)
    if part in ("gpu", "all"):
        gpu_status = sim_gpu.run(args)
        status = status or gpu_status
    return status


def run_cpu(args: argparse.Namespace) -> int:
    """Run the CPU part; print rows as they finish; write the results. Returns the exit status."""
    settings = {
        "tstop": QUICK["tstop"] if args.quick else TSTOP,
        "repeats": QUICK["repeats"] if args.quick else args.repeats,
        "batch_cells": args.batch_cells or (QUICK["batch_cells"] if args.quick else BATCH_CELLS),
        "batch_tstop": args.batch_tstop or (QUICK["batch_tstop"] if args.quick else BATCH_TSTOP),
        "command_repeats": QUICK["command_repeats"] if args.quick else args.command_repeats,
    }
    try:
        paths = find_morphologies(args, MORPHOLOGIES)
        if settings["repeats"] < 1 or settings["batch_cells"] < 1 or settings["command_repeats"] < 1:
            raise ValueError("--repeats, --batch-cells and --command-repeats must be >= 1")
        if args.command_only and args.no_command:
            raise ValueError("--command-only and --no-command leave nothing to run")
        import hinesbatch as hb

        if not hasattr(hb, "Simulation"):
            raise ImportError("hinesbatch.Simulation (the active simulator) is not installed")
    except (OSError, ValueError, ImportError) as exc:
        print(f"hinesbatch bench sim: error: {exc}", file=sys.stderr)
        return 1
    notes = []
    neuron_error = None if args.no_neuron else _neuron_missing()
    use_neuron = not args.no_neuron and neuron_error is None
    if neuron_error:
        notes.append(f"NEURON is not available ({neuron_error}): no NEURON columns")
        print(notes[-1], file=sys.stderr)
    elif args.no_neuron:
        notes.append("NEURON skipped (--no-neuron): no NEURON columns")
    with warnings.catch_warnings():  # SWC convention warnings of real files: not our topic here
        warnings.simplefilter("ignore", UserWarning)
        cells = sorted(((p, _n_nodes(hb, p)) for p in paths), key=lambda item: item[1])
        middle = cells[len(cells) // 2][0]
        single, batch = [], []
        if not args.command_only:
            single = [_single_row(hb, path, tables, settings, use_neuron=use_neuron)
                      for path, _ in cells for tables in (True, False)]
            batch = [_batch_row(hb, middle, settings)]
    command = []
    if not args.no_command:
        try:
            command.append(_command_row(middle, settings, use_neuron=use_neuron))
        except RuntimeError as exc:  # a command failed: keep the other results
            notes.append(f"whole command not timed: {exc}")
            print(notes[-1], file=sys.stderr)
    notes += _goals(single, batch, command)
    for note in notes:
        print(note)
    tables = {}
    if not args.command_only:
        tables["One cell, one core: hinesbatch serial vs NEURON"] = single
        tables["A batch of copies of the middle cell: multicore vs serial"] = batch
    if command:
        tables["Whole command, start-up included: hinesbatch simulate vs a NEURON script"] = command
    extra = {"protocol": PROTOCOL.describe() + f", tstop {settings['tstop']:g} ms",
             "batch": f"{settings['batch_cells']} copies of {Path(middle).name}, "
                      f"{settings['batch_tstop']:g} ms",
             "exp": _exp_in_use()}
    json_path, md_path = write_results(tables, args.out, "sim", question=QUESTION, notes=notes,
                                       machine=machine_info(extra))
    print(f"wrote {json_path} and {md_path}")
    return 0


def _neuron_missing() -> str | None:
    """Why NEURON cannot be used here, or None."""
    try:
        import neuron  # noqa: F401
    except Exception as exc:  # ImportError, or a broken install
        return str(exc) or type(exc).__name__
    return None


@functools.lru_cache(maxsize=8)
def _morphology(hb, path):
    """The file read once: copies share one Morphology (and so one geometry)."""
    return hb.read_swc(path)


def _cell(hb, path):
    p = PROTOCOL
    cell = hb.Cell(_morphology(hb, str(path)), d_lambda=p.d_lambda, ra=p.ra, cm=p.cm)
    cell.insert("hh")
    amp, delay, dur = p.iclamp
    cell.place("IClamp", "soma[0](0.5)", delay=delay, dur=dur, amp=amp)
    return cell


def _n_nodes(hb, path) -> int:
    return int(_cell(hb, path).geometry.n_nodes)


def _exp_in_use() -> str:
    """Which exp the CPU kernels call on this machine (:mod:`hinesbatch.mechanisms.libm_exp`)."""
    from ..engine.kernels import cache_dir
    from ..mechanisms.libm_exp import vector_exp_enabled

    if vector_exp_enabled(cache_dir()):
        return "the vectorized copy of the C library's exp (same bits, checked on this machine)"
    return ("the C library's exp, one call per value (the vectorized copy is turned off by "
            "HINESBATCH_VECTOR_EXP=0 or does not give this C library's bits)")


def _simulation(hb, path, *, n_cells: int, backend: str, tables: bool):
    """A simulation of ``n_cells`` copies recording v and spikes at the soma of cell 0:
    (simulation, v key, spikes key)."""
    sim = hb.Simulation([_cell(hb, path) for _ in range(n_cells)], dt=PROTOCOL.dt,
                        v_init=PROTOCOL.v_init, backend=backend, tables=tables)
    v = sim.record("v", cell=0, location="soma[0](0.5)")
    spikes = sim.record_spikes(sim.spike_source(0, "soma[0](0.5)", threshold=PROTOCOL.threshold))
    return sim, v, spikes


def _timed_run(hb, path, tstop, **options):
    """Seconds of ``Simulation.run(tstop)`` on a fresh simulation, and its results."""
    sim, v, spikes = _simulation(hb, path, **options)
    start = time.perf_counter()
    res = sim.run(tstop)
    return time.perf_counter() - start, res, v, spikes


def _single_row(hb, path, tables: bool, settings: dict, *, use_neuron: bool) -> dict:
    """hinesbatch serial and NEURON on one cell, timed in turn."""
    tstop, repeats = settings["tstop"], settings["repeats"]
    nodes = _n_nodes(hb, path)
    neuron = HHModel(path, PROTOCOL, usetable=tables) if use_neuron else None
    ours, theirs = [], []
    try:
        for k in range(repeats + 1):  # round 0 compiles and warms up: not counted
            seconds, res, v_key, spike_key = _timed_run(hb, path, tstop, n_cells=1,
                                                        backend="serial", tables=tables)
            nrn = neuron.run(tstop) if neuron is not None else None
            if k:
                ours.append(seconds)
                if nrn is not None:
                    theirs.append(nrn)
        steps = len(res.time(v_key)) - 1
        row = {"morphology": Path(path).name, "nodes": nodes, "steps": steps,
               "hh_tables": tables,
               "hinesbatch_us_per_step": 1e6 * float(np.median(ours)) / max(steps, 1),
               "neuron_us_per_step": None,
               "hinesbatch_Mcomp_steps_per_s": nodes * steps / float(np.median(ours)) / 1e6,
               "neuron_Mcomp_steps_per_s": None, "speedup_vs_neuron": None,
               "neuron_segments": None, "max_abs_dv_mV": None,
               "spikes": int(len(res.spikes[spike_key])), "same_spike_times": None}
        if neuron is not None:
            nrn_s = float(np.median(theirs))
            v_nrn, v_ours = neuron.trace(), np.asarray(res[v_key])
            spikes_nrn = neuron.spikes()
            row.update(neuron_us_per_step=1e6 * nrn_s / max(steps, 1),
                       neuron_Mcomp_steps_per_s=nodes * steps / nrn_s / 1e6,
                       speedup_vs_neuron=nrn_s / float(np.median(ours)),
                       neuron_segments=sum(neuron.nseg.values()),
                       max_abs_dv_mV=float(np.max(np.abs(v_nrn - v_ours)))
                       if v_nrn.shape == v_ours.shape else float("nan"),
                       same_spike_times=bool(np.array_equal(spikes_nrn,
                                                            np.asarray(res.spikes[spike_key]))))
    finally:
        if neuron is not None:
            neuron.close()
    print(_row_text(row), flush=True)
    return row


def _batch_row(hb, path, settings: dict) -> dict:
    """``serial`` and ``multicore`` on a batch of copies, timed in turn."""
    import numba

    n, tstop, repeats = settings["batch_cells"], settings["batch_tstop"], settings["repeats"]
    times = {"serial": [], "multicore": []}
    stepping = {"serial": [], "multicore": []}
    results = {}
    for k in range(repeats + 1):  # round 0 compiles and warms up: not counted
        for backend in times:
            seconds, res, v_key, _ = _timed_run(hb, path, tstop, n_cells=n, backend=backend,
                                                tables=True)
            results[backend] = np.asarray(res[v_key])
            if k:
                times[backend].append(seconds)
                stepping[backend].append(res.meta["step_seconds"])
            del res
    serial, multicore = (float(np.median(times[b])) for b in ("serial", "multicore"))
    serial_step, multicore_step = (float(np.median(stepping[b]))
                                   for b in ("serial", "multicore"))
    threads = numba.get_num_threads()
    from ._cpu_ceiling import compute_scaling

    machine = compute_scaling(threads)
    nodes = _n_nodes(hb, path)
    steps = len(results["serial"]) - 1
    speedup = serial / multicore
    row = {"morphology": Path(path).name, "nodes": nodes, "cells": n, "steps": steps,
           "serial_s": serial, "multicore_s": multicore, "threads": threads,
           "threading_layer": numba.threading_layer(),
           "speedup": speedup, "efficiency": speedup / threads,
           "compute_bound_speedup": machine, "of_compute_bound": speedup / machine,
           "serial_step_s": serial_step, "multicore_step_s": multicore_step,
           "stepping_efficiency": serial_step / multicore_step / threads,
           "multicore_Mcomp_steps_per_s": n * nodes * steps / multicore / 1e6,
           "max_abs_dv_mV": float(np.max(np.abs(results["serial"] - results["multicore"])))}
    print(_row_text(row), flush=True)
    return row


def _command_row(path, settings: dict, *, use_neuron: bool) -> dict:
    """Wall time of the whole ``hinesbatch simulate`` command and of the NEURON script."""
    tstop, repeats = settings["tstop"], settings["command_repeats"]
    p = PROTOCOL
    amp, delay, dur = p.iclamp
    with tempfile.TemporaryDirectory(prefix="hinesbatch-bench-sim-") as tmp:
        ours = [sys.executable, "-m", "hinesbatch.cli", "simulate", str(path), "--mechanism",
                "hh", "--d-lambda", repr(p.d_lambda), "--ra", repr(p.ra), "--cm", repr(p.cm),
                "--iclamp", f"{amp!r},{delay!r},{dur!r}", "--dt", repr(p.dt), "--v-init",
                repr(p.v_init), "--tstop", repr(tstop), "--backend", "serial", "--out",
                os.path.join(tmp, "hinesbatch.npz")]
        script = os.path.join(tmp, "neuron_hh.py")
        Path(script).write_text(neuron_script(path, p, tstop=tstop,
                                              out=os.path.join(tmp, "neuron.npz")))
        theirs = [sys.executable, script]
        runs = {"hinesbatch": ours, **({"neuron": theirs} if use_neuron else {})}
        times = {name: [] for name in runs}
        for _ in range(repeats + 1):  # the first run of each meets cold caches
            for name, argv in runs.items():
                times[name].append(time_command(argv))
    row = {"morphology": Path(path).name, "tstop_ms": tstop, "runs": repeats,
           "hinesbatch_cold_s": times["hinesbatch"][0],
           "hinesbatch_s": float(np.median(times["hinesbatch"][1:])),
           "neuron_cold_s": None, "neuron_s": None, "speedup_vs_neuron": None}
    if use_neuron:
        row.update(neuron_cold_s=times["neuron"][0],
                   neuron_s=float(np.median(times["neuron"][1:])))
        row["speedup_vs_neuron"] = row["neuron_s"] / row["hinesbatch_s"]
    print(_row_text(row), flush=True)
    return row


def time_command(argv: list[str]) -> float:
    """Wall seconds of the command ``argv`` run to completion (``RuntimeError`` with its
    error output when it fails). hinesbatch in the subprocess is this one."""
    env = dict(os.environ)
    # as installed: modules' bytecode cached (both commands import their packages' .pyc)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        tail = " ".join(proc.stderr.strip().splitlines()[-3:])
        raise RuntimeError(f"{' '.join(argv[:4])} ... failed ({proc.returncode}): {tail}")
    return seconds


def _goals(single, batch, command) -> list[str]:
    notes = []
    for r in single:
        if r["speedup_vs_neuron"] is None:
            continue
        same = r["max_abs_dv_mV"] <= AGREEMENT_MV and r["same_spike_times"]
        met = r["speedup_vs_neuron"] >= SPEEDUP_GOAL
        verdict = ("met" if met else "NOT met") if same else (
            f"not judged: the results differ from NEURON's (by more than {AGREEMENT_MV:g} mV "
            "or in spike times)")
        notes.append(
            f"{r['morphology']} ({r['nodes']} nodes, usetable_hh {int(r['hh_tables'])}): serial "
            f"{r['hinesbatch_us_per_step']:.2f} us/step vs NEURON {r['neuron_us_per_step']:.2f} "
            f"= {r['speedup_vs_neuron']:.2f}x; goal >= {SPEEDUP_GOAL:g}x -> {verdict}; max |dV| "
            f"{r['max_abs_dv_mV']:.1e} mV, spike times "
            f"{'identical' if r['same_spike_times'] else 'DIFFERENT'}")
    for r in batch:
        met = r["efficiency"] >= EFFICIENCY_GOAL
        notes.append(
            f"multicore on {r['cells']} x {r['morphology']}: {r['speedup']:.2f}x serial on "
            f"{r['threads']} threads = {r['efficiency']:.2f} x threads x serial; goal >= "
            f"{EFFICIENCY_GOAL} -> {'met' if met else 'NOT met'}. A vectorized compute-bound "
            f"loop on the same threads: {r['compute_bound_speedup']:.2f}x one thread, so the engine "
            f"reaches {r['of_compute_bound']:.2f} of what these cores give such a loop; "
            f"the stepping alone (set-up left out): {r['stepping_efficiency']:.2f} x threads")
    for r in command:
        if r["neuron_s"] is None:
            continue
        met = r["hinesbatch_s"] < r["neuron_s"]
        notes.append(
            f"whole command, {r['tstop_ms']:g} ms of {r['morphology']}: hinesbatch simulate "
            f"{r['hinesbatch_s']:.2f} s (cold {r['hinesbatch_cold_s']:.2f} s) vs the NEURON "
            f"script {r['neuron_s']:.2f} s (cold {r['neuron_cold_s']:.2f} s); goal below "
            f"NEURON's -> {'met' if met else 'NOT met'}")
    return notes


def _row_text(row: dict) -> str:
    return "  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items())
