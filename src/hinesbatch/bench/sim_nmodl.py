"""``hinesbatch bench sim --part nmodl``: a ModelDB pyramidal-cell model run from its own NMODL
files, on the CPU against NEURON on one core and on the GPU against NEURON's throughput.

Question: :data:`QUESTION`. The model and its NEURON twin are in :mod:`._nmodl_model`: the
twelve mod files of ModelDB 20756 (Traub et al. 2003: eleven channel types and a calcium
pool), read from ``--mod-dir`` (hinesbatch does not ship them; without it the part is
skipped with a message), on ``pyramidal.swc`` (the first ``--swc`` file replaces it).

* CPU: hinesbatch ``serial`` on one cell against NEURON on one core, the same files compiled
  by ``nrnivmodl`` (cached, :func:`._nmodl_model.compile_mods`), in a child process that keeps
  the model between runs. Timed in turn (hinesbatch, NEURON, ...), each after an untimed
  warm-up run: hinesbatch's ``Simulation.run`` on a fresh simulation (its initialization
  included, which NEURON's timing leaves out), NEURON's ``ParallelContext.psolve`` after
  ``finitialize``; the median of ``--repeats``, 100 ms. Both with the files' TABLEs (NEURON's
  default) and without (``usetable_<suffix> = 0``, ``Simulation(tables=False)``). The speed
  counts only where the two agree: max |ΔV| at the soma within :data:`AGREEMENT_MV` (every
  file is ``cnexp``) and identical spike times.
* NEURON on all cores (with the GPU part): one process, ``ParallelContext.nthread(cores)``,
  ``cores x 4`` copies (``--nmodl-neuron-cells``), ``--nmodl-gpu-tstop`` ms; its last copy's
  trace is compared with hinesbatch's.
* GPU (where CuPy and a device are present; ``--engine-backend multicore`` or
  ``HINESBATCH_GPU_EMULATION`` make it a dry run, not judged): ``--nmodl-cells`` copies
  (10,000) with ``backend="gpu"`` on one device in float64, timed after an untimed first call
  (compilation), by ``Results.meta["step_seconds"]`` (the stepping on the device) where the
  engine reports it; ``--nmodl-gpu-tstop`` ms (20, fewer steps than the CPU part: every run
  also initializes the batch on the host), at most :data:`GPU_REPEATS` timed calls within
  ``--nmodl-budget``. Cell 0's trace and spikes are compared with the serial engine's.
  Throughput against NEURON's one-core rate of the CPU part: goal :data:`GPU_GOAL` x.

A compartment is a node of the Hines system (NEURON's segments plus the zero-area section
ends), for both simulators: compartment-steps/s = nodes x steps / seconds.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from ._nmodl_model import (CELSIUS, D_LAMBDA, DT, E_PAS, EK, ENA, ICLAMP, MORPHOLOGY, PASSIVE,
                           THRESHOLD, V_INIT, NeuronProcess, build_cell, compile_mods,
                           load_files)
from .common import machine_info, write_results

__all__ = ["AGREEMENT_MV", "GPU_GOAL", "QUESTION", "SPEEDUP_GOAL", "add_arguments", "run"]

QUESTION = ("Does hinesbatch run a ModelDB pyramidal-cell model from its own NMODL files "
            "(Traub et al. 2003, ModelDB 20756: eleven channel types and calcium dynamics) at "
            "least 2x as fast per step as NEURON on one core with the serial engine, with "
            "NEURON's voltage and spike times, and does the GPU engine simulate 10,000 copies "
            "at least 1,000x as fast as one NEURON core?")
TSTOP = 100.0
GPU_CELLS = 10000
GPU_TSTOP = 20.0
#: Timed calls of the GPU batch after the untimed first one (each run initializes the batch
#: on the host, which at 10,000 cells takes longer than the stepping).
GPU_REPEATS = 2
QUICK = {"tstop": 2.0, "repeats": 1, "cells": 4, "gpu_tstop": 1.0, "neuron_cells": 2}
#: Goals: serial against NEURON per step; the GPU batch against one NEURON core.
SPEEDUP_GOAL = 2.0
GPU_GOAL = 1000.0
#: Largest |ΔV| [mV] for a comparison to count: every file is cnexp, so NEURON's steps are
#: reproduced up to rounding (the validation tests' bound for explicit methods and TABLEs).
AGREEMENT_MV = 1e-9
#: NEURON's batch for the all-cores figure: this many copies per core.
CELLS_PER_CORE = 4
TITLES = {"cpu": "One cell, one core: hinesbatch serial vs NEURON",
          "gpu": "A batch of copies: hinesbatch GPU vs NEURON (one core, and all cores)"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the NMODL part's arguments to ``bench sim``'s parser."""
    g = parser.add_argument_group(
        "NMODL part (--part nmodl): a ModelDB model's own mod files",
        "The mod files are not part of hinesbatch: --mod-dir names the folder of ModelDB "
        "20756 (Traub et al. 2003; ar, cad, cal, cat, k2, ka, kahp, kc, kdr, km, naf, nap "
        ".mod). Without it the part is skipped with a message.")
    g.add_argument("--mod-dir", metavar="DIR",
                   help="folder of ModelDB 20756's mod files (required by --part nmodl)")
    g.add_argument("--nmodl-cells", type=int, metavar="N",
                   help=f"copies of the GPU batch (default {GPU_CELLS})")
    g.add_argument("--nmodl-gpu-tstop", type=float, metavar="MS",
                   help=f"simulated time of the GPU batch [ms] (default {GPU_TSTOP:g})")
    g.add_argument("--nmodl-neuron-cells", type=int, metavar="N",
                   help=f"copies of NEURON's all-cores batch (default {CELLS_PER_CORE} x "
                        "usable cores)")
    g.add_argument("--nmodl-budget", type=float, default=150.0, metavar="S",
                   help="wall-clock seconds of the whole part after which the GPU batch "
                        f"makes no further timed call (at most {GPU_REPEATS}; default 150)")
    g.add_argument("--nmodl-no-gpu", action="store_true",
                   help="the CPU comparison only (the default without a GPU)")


# ---- the run ----------------------------------------------------------------------------
def _settings(args) -> dict:
    quick = bool(getattr(args, "quick", False))
    s = {"tstop": QUICK["tstop"] if quick else TSTOP,
         "repeats": QUICK["repeats"] if quick else args.repeats,
         "cells": args.nmodl_cells or (QUICK["cells"] if quick else GPU_CELLS),
         "gpu_tstop": args.nmodl_gpu_tstop or (QUICK["gpu_tstop"] if quick else GPU_TSTOP),
         "neuron_cells": args.nmodl_neuron_cells or (QUICK["neuron_cells"] if quick else None),
         "budget": float(args.nmodl_budget),
         "backend": getattr(args, "engine_backend", "gpu") or "gpu",
         "neuron": not args.no_neuron}
    for name in ("repeats", "cells", "neuron_cells"):
        if s[name] is not None and s[name] < 1:
            raise ValueError(f"--{'nmodl-' if name != 'repeats' else ''}"
                             f"{name.replace('_', '-')} must be >= 1, got {s[name]}")
    if not s["gpu_tstop"] > 0 or not s["budget"] > 0:
        raise ValueError("--nmodl-gpu-tstop and --nmodl-budget must be positive")
    return s


def run(args: argparse.Namespace) -> int:
    """Run the NMODL part; print rows as they finish; write ``sim_nmodl.json`` and ``.md``
    under ``args.out``. Returns the exit status (0 when skipped for want of ``--mod-dir``)."""
    if not args.mod_dir:
        print("hinesbatch bench sim --part nmodl: skipped: no --mod-dir (the folder of ModelDB "
              "20756's mod files, which hinesbatch does not ship)", file=sys.stderr)
        return 0
    try:
        s = _settings(args)
        import hinesbatch as hb

        files = load_files(hb, args.mod_dir)
        path = Path(args.swc[0]) if args.swc else _default_morphology()
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such file")
        bench = _Bench(hb, s, path, files, Path(args.out), gpu_skipped=_gpu_skipped(args, s))
    except (OSError, ValueError, ImportError) as exc:
        print(f"hinesbatch bench sim: error: {exc}", file=sys.stderr)
        return 1
    bench.run()
    return 0


def _default_morphology() -> Path:
    roots = [Path.cwd(), Path(__file__).resolve().parents[3]]
    for root in roots:
        p = root / "tests/data/morphologies/real" / MORPHOLOGY
        if p.is_file():
            return p
    raise FileNotFoundError(f"{MORPHOLOGY} (the default morphology) is not in "
                            "tests/data/morphologies/real of this directory or the source "
                            "tree; pass --swc FILE")


def _emulated() -> bool:
    """Whether ``backend="gpu"`` runs the GPU engine's host build (no timing to judge)."""
    from ..engine.gpu.devices import EMULATION_ENV

    return bool(os.environ.get(EMULATION_ENV, "").strip())


def _gpu_skipped(args, s) -> str | None:
    """Why the GPU part does not run, or None."""
    if args.nmodl_no_gpu:
        return "--nmodl-no-gpu"
    if s["backend"] != "gpu" or _emulated():
        return None  # a dry run of the GPU part: a CPU backend or the host build
    from ..solvers import registry

    ok, why = registry.get("gpu").available()
    return None if ok else f"no usable GPU ({why})"


def _row_text(row: dict) -> str:
    return "  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                     for k, v in row.items())


class _Bench:
    """The part's state: settings, the model's files, rows, notes, the clock."""

    def __init__(self, hb, settings, path, files, out, *, gpu_skipped: str | None):
        self.hb, self.s, self.path, self.files, self.out = hb, settings, path, files, out
        self.gpu_skipped = gpu_skipped
        self.rows = {"cpu": [], "gpu": []}
        self.notes: list[str] = []
        self.start = time.perf_counter()
        self.lib = None
        with warnings.catch_warnings():  # SWC conventions of a real file: not our topic
            warnings.simplefilter("ignore", UserWarning)
            self.morphology = hb.read_swc(str(path))
            self.nodes = int(build_cell(hb, self.morphology).geometry.n_nodes)
        self._serial_reference = None

    def note(self, text: str) -> None:
        self.notes.append(text)
        print(text, flush=True)

    def run(self) -> None:
        if self.s["neuron"]:
            try:
                self.lib = compile_mods(self.files)
            except (ImportError, RuntimeError) as exc:
                self.note(f"NEURON is not available ({exc}): no NEURON columns")
        else:
            self.note("NEURON skipped (--no-neuron): no NEURON columns")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # SWC conventions of a real file
            for tables in (True, False):
                self._guarded(f"CPU, tables {tables}", lambda t=tables: self._cpu_row(t))
            if self.gpu_skipped is None:
                if self.lib is not None:
                    self._guarded("NEURON on all cores", self._neuron_cores_row)
                self._guarded("GPU batch", self._gpu_row)
            else:
                self.note(f"GPU batch and NEURON on all cores not run: {self.gpu_skipped}")
        self._goals()
        json_path, md_path = self.write()
        print(f"wrote {json_path} and {md_path}")

    def _guarded(self, name, case) -> None:
        try:
            case()
        except Exception as exc:  # one failing case leaves the others' results
            self.note(f"{name}: failed: {type(exc).__name__}: {exc}")
        self.write()

    def write(self):
        tables = {TITLES[k]: rows for k, rows in self.rows.items() if rows}
        passive = ", ".join(f"{r} {p['ra']:g}/{p['cm']:g}/{p['g_pas']:g}"
                            for r, p in PASSIVE.items())
        extra = {"model": "ModelDB 20756's mod files (Traub et al. 2003), the densities of "
                          "hinesbatch.bench._nmodl_model.MODEL",
                 "morphology": self.path.name, "nodes": self.nodes,
                 "protocol": f"d_lambda {D_LAMBDA} at 100 Hz, Ra [ohm*cm]/cm [uF/cm2]/g_pas "
                             f"[S/cm2] by region: {passive}; e_pas {E_PAS:g}, ena {ENA:g}, ek "
                             f"{EK:g} mV; IClamp {ICLAMP[0]:g} nA {ICLAMP[1]:g}-"
                             f"{ICLAMP[1] + ICLAMP[2]:g} ms at soma[0](0.5); dt {DT} ms, v_init "
                             f"{V_INIT:g} mV, celsius {CELSIUS}; CPU part {self.s['tstop']:g} "
                             f"ms, GPU batch {self.s['gpu_tstop']:g} ms"}
        return write_results(tables, self.out, "sim_nmodl", question=QUESTION,
                             notes=self.notes, machine=machine_info(extra))

    # ---- hinesbatch ---------------------------------------------------------------------
    def _simulation(self, n_cells, backend, tables, **options):
        hb = self.hb
        cells = [build_cell(hb, self.morphology)] * n_cells  # a description: copies share it
        sim = hb.Simulation(cells, dt=DT, v_init=V_INIT, celsius=CELSIUS, backend=backend,
                            tables=tables, **options)
        v = sim.record("v", cell=0, location="soma[0](0.5)")
        spikes = sim.record_spikes(sim.spike_source(0, "soma[0](0.5)", threshold=THRESHOLD))
        return sim, v, spikes

    def _timed(self, tstop, n_cells, backend, tables, **options):
        sim, v, spikes = self._simulation(n_cells, backend, tables, **options)
        start = time.perf_counter()
        res = sim.run(tstop)
        return time.perf_counter() - start, res, v, spikes

    # ---- CPU ----------------------------------------------------------------------------
    def _cpu_row(self, tables: bool) -> None:
        tstop, repeats = self.s["tstop"], self.s["repeats"]
        neuron = (NeuronProcess(self.path, self.lib, tables=tables)
                  if self.lib is not None else None)
        ours, theirs = [], []
        try:
            for k in range(repeats + 1):  # round 0 compiles and warms up: not counted
                seconds, res, v_key, spike_key = self._timed(tstop, 1, "serial", tables)
                nrn = neuron.run(tstop) if neuron is not None else None
                if k:
                    ours.append(seconds)
                    if nrn is not None:
                        theirs.append(nrn)
            trace = np.asarray(res[v_key])
            steps = len(trace) - 1
            spikes = np.asarray(res.spikes[spike_key])
            mine = statistics.median(ours)
            row = {"morphology": self.path.name, "nodes": self.nodes, "steps": steps,
                   "tables": tables, "hinesbatch_us_per_step": 1e6 * mine / max(steps, 1),
                   "neuron_us_per_step": None,
                   "hinesbatch_Mcomp_steps_per_s": self.nodes * steps / mine / 1e6,
                   "neuron_Mcomp_steps_per_s": None, "speedup_vs_neuron": None,
                   "neuron_segments": None, "max_abs_dv_mV": None, "spikes": len(spikes),
                   "same_spike_times": None}
            if neuron is not None:
                nrn_s = statistics.median(theirs)
                v_nrn, spikes_nrn, _ = neuron.result()
                row.update(neuron_us_per_step=1e6 * nrn_s / max(steps, 1),
                           neuron_Mcomp_steps_per_s=self.nodes * steps / nrn_s / 1e6,
                           speedup_vs_neuron=nrn_s / mine, neuron_segments=neuron.nseg,
                           max_abs_dv_mV=float(np.max(np.abs(v_nrn - trace)))
                           if v_nrn.shape == trace.shape else float("nan"),
                           same_spike_times=bool(np.array_equal(spikes_nrn, spikes)))
        finally:
            if neuron is not None:
                neuron.close()
        self.rows["cpu"].append(row)
        print(_row_text(row), flush=True)

    # ---- GPU ----------------------------------------------------------------------------
    def _gpu_row(self) -> None:
        from .sim_gpu import engine_options

        n, tstop, backend = self.s["cells"], self.s["gpu_tstop"], self.s["backend"]
        options = engine_options(backend, "float64", 1 if backend == "gpu" else None)
        sim, v_key, spike_key = self._simulation(n, backend, True, **options)
        sim.run(tstop)  # compiles (or loads the cache) and warms the device up: not timed
        walls, steps_s = [], []
        for _ in range(max(1, min(self.s["repeats"], GPU_REPEATS))):
            start = time.perf_counter()
            res = sim.run(tstop)
            walls.append(time.perf_counter() - start)
            steps_s.append(res.meta.get("step_seconds"))
            if time.perf_counter() - self.start > self.s["budget"] \
                    and len(walls) < min(self.s["repeats"], GPU_REPEATS):
                self.note(f"GPU batch: {len(walls)} timed call(s), the budget of "
                          f"{self.s['budget']:.0f} s spent")
                break
        timed = "step_seconds" if all(x is not None for x in steps_s) else "wall"
        seconds = statistics.median(steps_s if timed == "step_seconds" else walls)
        trace = np.asarray(res[v_key])
        steps = len(trace) - 1
        ref_trace, ref_spikes = self._reference()
        rate = n * self.nodes * steps / seconds
        cpu = [r for r in self.rows["cpu"] if r["tables"] and r["neuron_Mcomp_steps_per_s"]]
        one_core = cpu[0]["neuron_Mcomp_steps_per_s"] * 1e6 if cpu else None
        row = {"tool": f"hinesbatch {backend} float64", "cells": n, "nodes": self.nodes,
               "steps": steps, "seconds": seconds, "timed": timed,
               "wall_s": statistics.median(walls), "G_comp_steps_per_s": rate / 1e9,
               "vs_one_neuron_core": rate / one_core if one_core else None,
               "max_abs_dv_vs_serial_mV": float(np.max(np.abs(trace - ref_trace)))
               if trace.shape == ref_trace.shape else float("nan"),
               "same_spike_times_vs_serial": bool(np.array_equal(
                   np.asarray(res.spikes[spike_key]), ref_spikes))}
        self.rows["gpu"].append(row)
        print(_row_text(row), flush=True)
        if one_core is None:
            self.note("GPU batch: no NEURON one-core rate from the CPU part to compare with")

    def _reference(self):
        """The serial engine's v at cell 0's soma [mV] and spike times [ms] over the batch's
        time (computed once)."""
        if self._serial_reference is None:
            _, res, v_key, spike_key = self._timed(self.s["gpu_tstop"], 1, "serial", True)
            self._serial_reference = (np.asarray(res[v_key]), np.asarray(res.spikes[spike_key]))
        return self._serial_reference

    def _neuron_cores_row(self) -> None:
        from ._sim_gpu_cpu import usable_cores

        cores = usable_cores()
        n = self.s["neuron_cells"] or CELLS_PER_CORE * cores
        tstop = self.s["gpu_tstop"]
        neuron = NeuronProcess(self.path, self.lib, copies=n, threads=cores, tables=True)
        try:
            neuron.run(tstop)  # warm-up
            seconds = statistics.median(neuron.run(tstop)
                                        for _ in range(max(1, min(self.s["repeats"], 3))))
            _, _, last = neuron.result()
        finally:
            neuron.close()
        steps = len(last) - 1
        ref = self._reference()[0]
        rate = n * self.nodes * steps / seconds
        cpu = [r for r in self.rows["cpu"] if r["tables"] and r["neuron_Mcomp_steps_per_s"]]
        row = {"tool": f"NEURON pc.nthread({cores})", "cells": n, "nodes": self.nodes,
               "steps": steps, "seconds": seconds, "timed": "psolve", "wall_s": seconds,
               "G_comp_steps_per_s": rate / 1e9,
               "vs_one_neuron_core": rate / (cpu[0]["neuron_Mcomp_steps_per_s"] * 1e6)
               if cpu else None,
               "max_abs_dv_vs_serial_mV": float(np.max(np.abs(last - ref)))
               if ref.shape == last.shape else float("nan"),
               "same_spike_times_vs_serial": None}
        self.rows["gpu"].append(row)
        print(_row_text(row), flush=True)

    # ---- goals --------------------------------------------------------------------------
    def _goals(self) -> None:
        agreed = False
        for r in self.rows["cpu"]:
            if r["speedup_vs_neuron"] is None:
                continue
            same = r["max_abs_dv_mV"] <= AGREEMENT_MV and r["same_spike_times"]
            agreed = agreed or (same and r["tables"])
            met = r["speedup_vs_neuron"] >= SPEEDUP_GOAL
            verdict = ("met" if met else "NOT met") if same else (
                f"not judged: the results differ from NEURON's (by more than {AGREEMENT_MV:g} "
                "mV or in spike times)")
            self.note(
                f"{r['morphology']} ({r['nodes']} nodes, tables {'on' if r['tables'] else 'off'})"
                f": serial {r['hinesbatch_us_per_step']:.1f} us/step vs NEURON "
                f"{r['neuron_us_per_step']:.1f} = {r['speedup_vs_neuron']:.2f}x; goal >= "
                f"{SPEEDUP_GOAL:g}x -> {verdict}; max |dV| {r['max_abs_dv_mV']:.1e} mV, "
                f"{r['spikes']} spikes, spike times "
                f"{'identical' if r['same_spike_times'] else 'DIFFERENT'}")
        for r in self.rows["gpu"]:
            if not r["tool"].startswith("hinesbatch") or r["vs_one_neuron_core"] is None:
                continue
            if self.s["backend"] != "gpu" or _emulated():
                self.note(f"{r['tool']} on {r['cells']} cells: {r['vs_one_neuron_core']:.2g}x "
                          "one NEURON core (a dry run on the CPU: goal not judged)")
                continue
            same = (r["max_abs_dv_vs_serial_mV"] <= AGREEMENT_MV
                    and r["same_spike_times_vs_serial"] and agreed)
            met = r["vs_one_neuron_core"] >= GPU_GOAL
            verdict = ("met" if met else "NOT met") if same else (
                "not judged: the GPU's cell 0 differs from the serial engine's, or the serial "
                "engine from NEURON")
            machine = [x for x in self.rows["gpu"] if x["tool"].startswith("NEURON")]
            versus = (f" and {r['G_comp_steps_per_s'] / machine[0]['G_comp_steps_per_s']:.0f}x "
                      f"{machine[0]['tool']} on {machine[0]['cells']} copies" if machine else "")
            self.note(f"GPU, {r['cells']} cells x {r['nodes']} nodes, {r['steps']} steps: "
                      f"{r['G_comp_steps_per_s']:.3g} G compartment-steps/s = "
                      f"{r['vs_one_neuron_core']:.0f}x one NEURON core{versus}; goal >= "
                      f"{GPU_GOAL:g}x one core -> {verdict}")
