"""``hinesbatch bench sim --part gpu``: the GPU engine against Jaxley, the floors of the card,
the CPU engine and NEURON, in one process.

Question: :data:`QUESTION`. Workloads (:mod:`._sim_gpu_work`):

* **Jaxley's Fig. 2**: one cell of ~217 branches x 4 compartments with HH, dt 0.025 ms,
  800 steps, ``jax.jit(jax.vmap(...))`` over N clamp amplitudes
  (:mod:`.jaxley_workload`), N = 100, 1,000, 10,000, fp64 and fp32; hinesbatch simulates
  the same N cells (same file, nseg 4, the same amplitudes) with ``backend="gpu"``, exact
  rates (as Jaxley) and NEURON's rate table beside them. Every timing follows an untimed
  first call (compilation); the median of ``--gpu-repeats`` calls counts. Jaxley's time is
  the whole call (``block_until_ready``); hinesbatch's is ``Results.meta["step_seconds"]``
  (the stepping on the device, synchronised), its whole ``Simulation.run`` beside it.
  ``speedup_vs_jaxley`` is Jaxley's time over hinesbatch's for the same N simulations.
* **Batches of real morphologies** (hh, d_lambda 0.1): ``--morph-cells`` copies of
  c91662.swc and a mix of the 17 repository cells of the same count, exact rates.
* **GPUs of one machine**: ``--morph-cells`` x the machine's GPUs (at most 4) copies of
  c91662.swc on 1, 2 and 4 devices (``devices=k``), fp64.
* **CPU**: hinesbatch's multicore engine on ``--cpu-cells`` Fig. 2 cells, NEURON in one
  process per core (:mod:`._sim_gpu_cpu`), exact rates and the table.

Throughput is compartment-steps per second, a compartment being a node of the Hines system
(NEURON's segments plus the zero-area section ends) for hinesbatch and NEURON, a cylinder
for Jaxley; the floors are in :mod:`._sim_gpu_analysis`. ``--budget`` seconds skip the
remaining cases (listed); results are rewritten after every case, so a run cut short keeps
what it measured. A missing Jaxley, NEURON or matplotlib is reported and skipped.
"""
from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from . import _sim_gpu_analysis as analysis
from . import _sim_gpu_work as work
from .common import machine_info, write_results

__all__ = ["QUESTION", "add_arguments", "gpu_present", "run", "engine_options",
           "device_facts", "free_device_memory"]

QUESTION = ("Does hinesbatch's GPU engine run Jaxley's Fig. 2 workload (one 217-branch cell "
            "x 4 compartments, HH, 800 steps, N simulations at once) at least 20x faster than "
            "Jaxley at N = 10,000, 10x at 1,000 and faster at 100, in fp64 and fp32; does a "
            "mix of 17 real morphologies run within 1.5x of one morphology; do 2 and 4 GPUs "
            "reach 1.9x and 3.6x one; and how far is each from the card's floors?")
CELLS = (100, 1000, 10000)
PRECISIONS = ("float64", "float32")
MORPH_CELLS = 10000
WORKLOADS = ("fig2", "batch", "scaling", "cpu")
ENGINE_BACKENDS = ("gpu", "multicore", "serial")
QUICK = {"cells": (2, 4), "morph_cells": 17, "cpu_cells": 2, "repeats": 1, "processes": 2}
#: Largest number of GPUs the scaling workload uses.
MAX_DEVICES = 4
TITLES = {"fig2": "Jaxley's Fig. 2 workload: one cell, N simulations at once",
          "batch": "Batches of real morphologies (hh, d_lambda 0.1)",
          "scaling": "GPUs of one machine: the same batch on 1, 2 and 4 devices",
          "cpu": "CPU: hinesbatch multicore and NEURON (one process per core), Fig. 2 cells",
          "layouts": "Engine layouts (Simulation.describe)",
          "floors": "Floors assumed per precision"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the GPU part's arguments to ``bench sim``'s parser."""
    g = parser.add_argument_group("GPU part (--part gpu)")
    g.add_argument("--budget", type=float, default=420.0, metavar="S",
                   help="wall-clock seconds after which the GPU part skips its remaining "
                        "cases, listed as such (default 420)")
    g.add_argument("--cells", type=int, nargs="+", metavar="N",
                   help=f"simulations of the Fig. 2 workload (default {' '.join(map(str, CELLS))})")
    g.add_argument("--precisions", nargs="+", choices=PRECISIONS, metavar="P",
                   help="float64 and/or float32 (default both)")
    g.add_argument("--morph-cells", type=int, metavar="N",
                   help=f"cells of the real-morphology batches (default {MORPH_CELLS}); the "
                        "scaling batch has N per GPU")
    g.add_argument("--cpu-cells", type=int, metavar="N",
                   help="Fig. 2 cells of the multicore engine (default 2 x usable cores)")
    g.add_argument("--gpu-repeats", type=int, default=3, metavar="N",
                   help="timed calls per case after the first (median; default 3)")
    g.add_argument("--workloads", nargs="+", choices=WORKLOADS, metavar="W",
                   help=f"what to run, of {', '.join(WORKLOADS)} (default all)")
    g.add_argument("--no-jaxley", action="store_true", help="skip Jaxley")
    g.add_argument("--engine-backend", choices=ENGINE_BACKENDS, default="gpu",
                   help="hinesbatch's backend for its rows (default gpu; multicore or serial "
                        "dry-run the harness without a GPU: float64 only, goals not judged)")


def gpu_present() -> bool:
    """Whether CuPy and a CUDA device are usable here."""
    from ..solvers import registry

    ok, _ = registry.get("gpu").available()
    return bool(ok)


def engine_options(backend: str, precision: str, devices: int | None) -> dict:
    """Keyword arguments of ``hb.Simulation`` beyond the model's for ``backend``: the GPU's
    ``precision`` and ``devices``; a CPU backend takes neither and computes in float64.

    Raises
    ------
    ValueError
        A CPU backend with ``precision`` other than float64.
    """
    if backend == "gpu":
        return {"precision": precision, "devices": devices}
    if precision != "float64":
        raise ValueError(f"the {backend} backend computes in float64 only, not {precision}")
    return {}


def _settings(args) -> dict:
    quick = bool(args.quick)
    s = {"cells": tuple(args.cells or (QUICK["cells"] if quick else CELLS)),
         "precisions": tuple(dict.fromkeys(args.precisions or PRECISIONS)),
         "morph_cells": args.morph_cells or (QUICK["morph_cells"] if quick else MORPH_CELLS),
         "cpu_cells": args.cpu_cells or (QUICK["cpu_cells"] if quick else None),
         "repeats": QUICK["repeats"] if quick else args.gpu_repeats,
         "processes": QUICK["processes"] if quick else None,
         "workloads": tuple(args.workloads or WORKLOADS), "budget": float(args.budget),
         "backend": args.engine_backend, "jaxley": not args.no_jaxley,
         "neuron": not args.no_neuron}
    if any(n < 1 for n in s["cells"]):
        raise ValueError(f"--cells must be positive, got {' '.join(map(str, s['cells']))}")
    for name in ("morph_cells", "cpu_cells", "repeats"):
        if s[name] is not None and s[name] < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {s[name]}")
    if not s["budget"] > 0:
        raise ValueError(f"--budget must be positive, got {args.budget}")
    return s


def run(args: argparse.Namespace) -> int:
    """Run the GPU part; print rows as they finish; write ``sim_gpu.json``, ``.md`` and
    ``.png`` under ``args.out``. Returns the exit status."""
    try:
        settings = _settings(args)
        import hinesbatch as hb

        if settings["backend"] == "gpu" and not gpu_present():
            from ..solvers import registry

            raise RuntimeError(f"no usable GPU: {registry.get('gpu').available()[1]} (a "
                               "dry run without one: --engine-backend multicore)")
    except (ValueError, RuntimeError, ImportError) as exc:
        print(f"hinesbatch bench sim: error: {exc}", file=sys.stderr)
        return 1
    bench = _Bench(hb, settings, Path(args.out))
    bench.run()
    return 0


def _now() -> float:
    """The clock of the budget [s]."""
    return time.perf_counter()


def _row_text(row: dict) -> str:
    return "  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                     for k, v in row.items() if k != "describe")


def _median(values):
    return statistics.median(values) if values else None


class _Bench:
    """The GPU part's state: settings, device facts, rows by table, notes, the clock."""

    def __init__(self, hb, settings: dict, out: Path):
        self.hb, self.s, self.out = hb, settings, out
        self.tables = {key: [] for key in TITLES}
        self.notes: list[str] = []
        self.device = None
        self.start = _now()
        self.skipped: list[str] = []
        self._jaxley: dict = {}
        self._reference: dict = {}
        self._fig2_batch: list = []
        self._fig2_path = work.real_morphologies([work.FIG2_MORPHOLOGY])[0]

    # ---- the run ----------------------------------------------------------------------
    def run(self) -> None:
        self.device = self._probe_device()
        self.machine = machine_info(self._machine_extra())
        for name, case in self._cases():
            if _now() - self.start > self.s["budget"]:
                self.skipped.append(name)
                continue
            try:
                case()
            except Exception as exc:  # one failing case leaves the others' results
                self.note(f"{name}: failed: {type(exc).__name__}: {exc}")
            finally:
                self._free()
            self.write()
        if self.skipped:
            self.note(f"skipped (budget of {self.s['budget']:.0f} s spent): "
                      f"{', '.join(self.skipped)}")
        self._goals()
        json_path, md_path = self.write()
        print(f"wrote {json_path} and {md_path}")
        self._plot()

    def note(self, text: str) -> None:
        self.notes.append(text)
        print(text, flush=True)

    def _cases(self):
        wl, s = self.s["workloads"], self.s
        if "fig2" in wl:
            for precision in s["precisions"]:
                for n in s["cells"]:
                    yield f"fig2 {n} cells {precision}", \
                        lambda n=n, p=precision: self._fig2(n, p)
        if "batch" in wl:
            for precision in s["precisions"]:
                for kind in ("single", "mixed"):
                    yield f"{kind} batch {precision}", \
                        lambda k=kind, p=precision: self._batch(k, p)
        if "scaling" in wl:
            yield "scaling", self._scaling
        if "cpu" in wl:
            yield "cpu", self._cpu

    def write(self):
        tables = {TITLES[k]: rows for k, rows in self.tables.items() if rows}
        return write_results(tables, self.out, "sim_gpu", question=QUESTION,
                             notes=self.notes, machine=self.machine)

    def _free(self) -> None:
        gc.collect()
        if self.device is not None:
            free_device_memory()

    def _probe_device(self):
        if not gpu_present():
            self.note("no GPU here: no floors, no scaling" + (
                f"; hinesbatch's rows run on its {self.s['backend']} backend (a dry run)"
                if self.s["backend"] != "gpu" else ""))
            return None
        try:
            facts = device_facts()
        except Exception as exc:  # the benchmark can run without its floors
            self.note(f"no device facts ({type(exc).__name__}: {exc}): no floors")
            return {"count": _device_count(), "name": "unknown", "info": {}, "bandwidth": None,
                    "bandwidth_Bps": None, "peaks": dict.fromkeys(PRECISIONS), "cc": None,
                    "sms": None, "clock_khz": None}
        print(f"GPU: {facts['name']}, {facts['count']} device(s), copy "
              f"{facts['bandwidth']['TB_per_s']:.2f} TB/s", flush=True)
        return facts

    def _machine_extra(self) -> dict:
        import numba

        extra = {"engine_backend": self.s["backend"], "numba_threads": numba.get_num_threads(),
                 "settings": dict(self.s)}
        if self.device is not None and self.device["bandwidth"] is not None:
            d = self.device
            extra.update(d["info"])
            extra["copy_bandwidth"] = d["bandwidth"]
            extra["peak_assumed"] = (
                f"compute capability {d['cc'][0]}.{d['cc'][1]}, {d['sms']} SMs at "
                f"{(d['clock_khz'] or 0) / 1e6:.3f} GHz: " + ", ".join(
                    f"{p} {v / 1e12:.1f} TFLOP/s" if v else f"{p} unknown"
                    for p, v in d["peaks"].items()))
            self.tables["floors"] = self._floor_rows()
        if self.s["jaxley"]:
            from .jaxley_workload import jaxley_missing, jaxley_versions

            why = jaxley_missing()
            extra["jaxley"] = jaxley_versions() if why is None else f"unavailable: {why}"
            if why is None and self.s["backend"] == "gpu" \
                    and extra["jaxley"]["jax_platform"] != "gpu":
                why = (f"JAX computes on {extra['jaxley']['jax_device']}, not a GPU (is jaxlib's "
                       "CUDA plugin installed?)")
            if why is not None:
                self.note(f"Jaxley is not available ({why}): no Jaxley rows, no ratios")
                self.s["jaxley"] = False
        return extra

    def _floor_rows(self) -> list[dict]:
        rows = []
        for p in PRECISIONS:
            calls = analysis.CALL_FLOPS[p]
            rows.append({
                "precision": p, "peak_TFLOP_per_s": (self.device["peaks"][p] or 0) / 1e12 or None,
                "copy_TB_per_s": self.device["bandwidth"]["TB_per_s"],
                "state_bytes_per_node_step_all_membrane": analysis.bytes_per_node_step(p, 1.0),
                "flops_per_node_step_exact": analysis.flops_per_node_step(p, 1.0, tables=False),
                "flops_per_node_step_table": analysis.flops_per_node_step(p, 1.0, tables=True),
                "flops_per_exp": calls["exp"], "flops_per_division": calls["division"]})
        return rows

    def _floors(self, rate, precision, membrane_fraction, tables) -> dict:
        d = self.device
        return analysis.floor_ratios(
            rate, precision=precision, membrane_fraction=membrane_fraction, tables=tables,
            bandwidth=d["bandwidth_Bps"] if d else None, peak=d["peaks"][precision] if d else None)

    # ---- timing -----------------------------------------------------------------------
    def _engine(self, cells, *, precision, tables, devices=1, label) -> dict:
        """Time ``Simulation.run`` of ``cells`` (v recorded where each is clamped)."""
        hb, backend = self.hb, self.s["backend"]
        sim = hb.Simulation(cells, dt=work.DT, celsius=work.CELSIUS, v_init=work.V_INIT,
                            backend=backend, tables=tables,
                            **engine_options(backend, precision, devices))
        keys = [sim.record("v", cell=i, location=work.stimulus_location(c))
                for i, c in enumerate(cells)]
        tstop = work.tstop()
        start = time.perf_counter()
        res = sim.run(tstop)
        first = time.perf_counter() - start
        walls, steps = [], []
        for _ in range(self.s["repeats"]):
            del res
            start = time.perf_counter()
            res = sim.run(tstop)
            walls.append(time.perf_counter() - start)
            steps.append(res.meta.get("step_seconds"))
        timed = "step_seconds" if all(x is not None for x in steps) else "wall"
        v = np.stack([np.asarray(res[k]) for k in keys])
        describe = sim.describe() if hasattr(sim, "describe") else None
        if describe:
            self.tables["layouts"].append({"case": label, "describe": " / ".join(
                str(describe).splitlines())})
        return {"seconds": _median(steps) if timed == "step_seconds" else _median(walls),
                "timed": timed, "wall_s": _median(walls), "first_call_s": first,
                "steps": int(res.meta.get("steps", v.shape[1] - 1)), "v": v}

    def _measured(self, tool, rates, precision, cells, comps, membrane_fraction, t) -> dict:
        rate = cells * comps * t["steps"] / t["seconds"]
        v = t["v"]
        finite = np.isfinite(v).all(axis=1)
        spikes = np.count_nonzero((v[:, :-1] < work.THRESHOLD) & (v[:, 1:] >= work.THRESHOLD),
                                  axis=1)
        row = {"tool": tool, "rates": rates, "precision": precision, "cells": cells,
               "compartments": comps, "steps": t["steps"], "seconds": t["seconds"],
               "timed": t["timed"], "wall_s": t["wall_s"], "first_call_s": t["first_call_s"],
               "G_comp_steps_per_s": rate / 1e9, "speedup_vs_jaxley": None,
               "speedup_vs_jaxley_wall": None,
               **self._floors(rate, precision, membrane_fraction, rates == "table"),
               "mean_spikes_per_cell": float(spikes.mean()),
               "nonfinite_cells": int(np.count_nonzero(~finite)),
               "max_abs_dv_cell0_vs_cpu_mV": None}
        if row["nonfinite_cells"]:
            self.note(f"{tool} {rates} {precision}, {cells} cells: {row['nonfinite_cells']} "
                      "simulation(s) reached a non-finite v; the throughput counts work "
                      "that went wrong")
        return row

    # ---- the workloads ----------------------------------------------------------------
    def _fig2_cells(self, n):
        """The first ``n`` Fig. 2 cells (built once for the largest N)."""
        if len(self._fig2_batch) < n:
            self._fig2_batch = work.fig2_cells(self.hb, self._fig2_path,
                                               work.amplitudes(max(n, *self.s["cells"])))
        return self._fig2_batch[:n]

    def _jaxley_model(self, precision):
        from .jaxley_workload import JaxleyFig2

        if precision not in self._jaxley:
            self._jaxley.clear()  # one precision at a time: JAX's x64 flag is global
            self._jaxley[precision] = JaxleyFig2(self._fig2_path, precision=precision)
        return self._jaxley[precision]

    def _cpu_reference(self, cell, tables):
        """v of ``cell`` alone on the serial CPU engine, float64: the check of cell 0."""
        if tables not in self._reference:
            sim = self.hb.Simulation([cell], dt=work.DT, celsius=work.CELSIUS,
                                     v_init=work.V_INIT, backend="serial", tables=tables)
            key = sim.record("v", cell=0, location=work.stimulus_location(cell))
            self._reference[tables] = np.asarray(sim.run(work.tstop())[key])
        return self._reference[tables]

    def _fig2_jaxley(self, n: int, precision: str) -> dict | None:
        """Jaxley's row, or None (not available, or failed: a note says why)."""
        if not self.s["jaxley"]:
            return None
        try:
            model = self._jaxley_model(precision)
            amps = work.amplitudes(n)
            first, _ = model.run(amps)
            times, v = [], None
            for _ in range(self.s["repeats"]):
                seconds, v = model.run(amps)
                times.append(seconds)
        except Exception as exc:  # hinesbatch's rows are still worth having
            self.note(f"fig2 {n} cells {precision}: Jaxley failed: {type(exc).__name__}: {exc}")
            return None
        t = {"seconds": _median(times), "timed": "wall", "wall_s": _median(times),
             "first_call_s": first, "steps": v.shape[1] - 1, "v": v}
        return self._measured("Jaxley", "exact", precision, n, model.compartments, 1.0, t)

    def _fig2(self, n: int, precision: str) -> None:
        cells = self._fig2_cells(n)
        nodes, membrane = work.compartments(cells[:1])
        jax_row = self._fig2_jaxley(n, precision)
        if jax_row is not None:
            print(_row_text(jax_row), flush=True)
            self.tables["fig2"].append(jax_row)
        if self.s["backend"] != "gpu" and precision != "float64":
            self.note(f"fig2 {n} cells {precision}: no hinesbatch rows on the "
                      f"{self.s['backend']} backend (float64 only)")
            return
        for tables in (False, True):
            label = f"fig2 {n} cells {precision} {'table' if tables else 'exact'}"
            t = self._engine(cells, precision=precision, tables=tables, label=label)
            row = self._measured("hinesbatch", "table" if tables else "exact", precision,
                                 n, nodes, membrane / nodes, t)
            ref = self._cpu_reference(cells[0], tables)
            if ref.shape == t["v"][0].shape:
                row["max_abs_dv_cell0_vs_cpu_mV"] = float(np.max(np.abs(t["v"][0] - ref)))
            if jax_row is not None:
                row["speedup_vs_jaxley"] = jax_row["seconds"] / row["seconds"]
                row["speedup_vs_jaxley_wall"] = jax_row["wall_s"] / row["wall_s"]
            print(_row_text(row), flush=True)
            self.tables["fig2"].append(row)

    def _batch(self, kind: str, precision: str) -> None:
        if self.s["backend"] != "gpu" and precision != "float64":
            self.note(f"{kind} batch {precision}: not run on the {self.s['backend']} backend "
                      "(float64 only)")
            return
        paths = (work.real_morphologies([work.BATCH_MORPHOLOGY]) if kind == "single"
                 else work.real_morphologies())
        cells = work.batch_cells(self.hb, paths, self.s["morph_cells"])
        nodes, membrane = work.compartments(cells)
        t = self._engine(cells, precision=precision, tables=False,
                         label=f"{kind} batch {precision}")
        rate = nodes * t["steps"] / t["seconds"]
        row = {"batch": kind, "morphologies": len(paths), "precision": precision,
               "cells": len(cells), "nodes": nodes, "steps": t["steps"],
               "seconds": t["seconds"], "timed": t["timed"], "wall_s": t["wall_s"],
               "first_call_s": t["first_call_s"], "G_comp_steps_per_s": rate / 1e9,
               **self._floors(rate, precision, membrane / nodes, False),
               "nonfinite_cells": int(np.count_nonzero(~np.isfinite(t["v"]).all(axis=1))),
               "throughput_vs_single": None}
        single = next((r for r in self.tables["batch"] if r["batch"] == "single"
                       and r["precision"] == precision), None)
        if kind == "mixed" and single is not None:
            row["throughput_vs_single"] = row["G_comp_steps_per_s"] / single["G_comp_steps_per_s"]
        print(_row_text(row), flush=True)
        if row["nonfinite_cells"]:
            self.note(f"{kind} batch {precision}: {row['nonfinite_cells']} cell(s) reached a "
                      "non-finite v; the throughput counts work that went wrong")
        self.tables["batch"].append(row)

    def _scaling(self) -> None:
        count = self.device["count"] if self.device else 0
        if self.s["backend"] != "gpu" or count < 2:
            self.note(f"scaling: not run ({count} GPU{'s' if count != 1 else ''} here"
                      + (f", engine backend {self.s['backend']}" if self.s["backend"] != "gpu"
                         else "") + ")")
            return
        top = min(count, MAX_DEVICES)
        paths = work.real_morphologies([work.BATCH_MORPHOLOGY])
        cells = work.batch_cells(self.hb, paths, self.s["morph_cells"] * top)
        nodes, _ = work.compartments(cells)
        base = None
        for k in (1, 2, 4):
            if k > top:
                break
            t = self._engine(cells, precision="float64", tables=False, devices=k,
                             label=f"scaling {k} GPUs")
            base = base or t["seconds"]
            row = {"devices": k, "cells": len(cells), "nodes": nodes, "precision": "float64",
                   "steps": t["steps"], "seconds": t["seconds"], "timed": t["timed"],
                   "G_comp_steps_per_s": nodes * t["steps"] / t["seconds"] / 1e9,
                   "speedup_vs_one": base / t["seconds"]}
            print(_row_text(row), flush=True)
            self.tables["scaling"].append(row)
            self._free()

    def _cpu(self) -> None:
        from . import _sim_gpu_cpu as cpu

        path = work.real_morphologies([work.FIG2_MORPHOLOGY])[0]
        cores = cpu.usable_cores()
        n = self.s["cpu_cells"] or 2 * cores
        rows = cpu.engine_rows(self.hb, path, cells=n, repeats=self.s["repeats"])
        if self.s["neuron"]:
            os.environ.setdefault("NEURON_MODULE_OPTIONS", "-nogui")  # no note on a display
            try:
                import neuron  # noqa: F401
            except Exception as exc:  # not installed, or broken
                self.note(f"NEURON is not available ({type(exc).__name__}: {exc}): no NEURON rows")
            else:
                try:
                    rows += cpu.neuron_rows(path, processes=self.s["processes"] or cores,
                                            repeats=self.s["repeats"], nodes=rows[0]["nodes"])
                except RuntimeError as exc:  # a process failed: keep the engine's rows
                    self.note(f"cpu: NEURON failed: {exc}")
        for row in rows:
            print(_row_text(row), flush=True)
        self.tables["cpu"] += rows

    # ---- verdicts and figures ---------------------------------------------------------
    def _goals(self) -> None:
        judged = None if self.s["backend"] == "gpu" else (
            f"hinesbatch ran on its {self.s['backend']} backend, a dry run")
        for line in analysis.evaluate_goals(
                self.tables["fig2"], self.tables["batch"], self.tables["scaling"],
                precisions=self.s["precisions"], judged=judged,
                devices=self.device["count"] if self.device else 0):
            self.note("goal: " + line)
        for line in _against_cpu(self.tables["fig2"], self.tables["cpu"]):
            self.note(line)

    def _plot(self) -> None:
        try:
            from ._sim_gpu_plots import figure

            path = figure(self.tables, self.out / "sim_gpu.png")
        except ImportError as exc:
            print(f"no figure: {exc}", file=sys.stderr)
            return
        if path is not None:
            print(f"wrote {path}")


def _against_cpu(fig2: list[dict], cpu: list[dict]) -> list[str]:
    """hinesbatch's largest fp64 Fig. 2 batch on the GPU against the CPU rows of the same
    rates, for the whole machine (a line per rate setting)."""
    lines = []
    for rates in ("exact", "table"):
        gpu = [r for r in fig2 if r["tool"] == "hinesbatch" and r["rates"] == rates
               and r["precision"] == "float64"]
        here = [r for r in cpu if r["rates"] == rates]
        if not gpu or not here:
            continue
        top = max(gpu, key=lambda r: r["cells"])
        parts = [f"{top['G_comp_steps_per_s'] / r['G_comp_steps_per_s']:.1f}x {r['tool']} on "
                 f"{r['cores']} cores" for r in here]
        lines.append(f"hinesbatch on the GPU, {top['cells']} cells, fp64, {rates} rates: "
                     f"{top['G_comp_steps_per_s']:.3g} G compartment-steps/s = "
                     + ", ".join(parts))
    return lines


def device_facts() -> dict:
    """Device 0's facts for the floors, measured and read with CuPy.

    Returns
    -------
    dict
        ``count`` (devices), ``name``, ``info`` (:func:`._gpu_timing.gpu_info`),
        ``bandwidth`` (:func:`._gpu_timing.copy_bandwidth` of 2 GiB), ``bandwidth_Bps``
        [bytes read + written per s], ``peaks`` (precision -> flops/s or None), ``cc``
        (compute capability), ``sms``, ``clock_khz``.
    """
    import cupy

    from ._gpu_timing import copy_bandwidth, gpu_info

    rt = cupy.cuda.runtime
    props = rt.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    clock = props.get("clockRate") or _attribute(rt, 13)  # cudaDevAttrClockRate [kHz]
    cc = (int(props["major"]), int(props["minor"]))
    sms = int(props["multiProcessorCount"])
    bandwidth = copy_bandwidth(cupy, nbytes=2 * 2**30)
    peaks = {p: analysis.peak_flops(cc, sms, clock or 0, p) for p in PRECISIONS}
    return {"count": int(rt.getDeviceCount()), "name": name, "info": gpu_info(cupy),
            "bandwidth": bandwidth, "bandwidth_Bps": bandwidth["TB_per_s"] * 1e12,
            "peaks": peaks, "cc": cc, "sms": sms, "clock_khz": clock}


def _device_count() -> int:
    """CUDA devices CuPy sees (0 when it cannot tell)."""
    try:
        import cupy

        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # no CuPy, or no driver
        return 0


def free_device_memory() -> None:
    """Return CuPy's cached device memory (nothing without CuPy)."""
    try:
        import cupy
    except ImportError:
        return
    from ._gpu_timing import free_memory

    free_memory(cupy)


def _attribute(runtime, attribute: int):
    """A CUDA device attribute of device 0, or None where CuPy cannot read it."""
    try:
        return runtime.deviceGetAttribute(attribute, 0)
    except Exception:  # an older or newer CuPy without it
        return None
