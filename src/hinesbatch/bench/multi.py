"""``hinesbatch bench multi``: multi-morphology batches on the GPU.

Question: how fast do the fine-grained strategies ``levels``, ``fine`` (plain and balanced:
reroot + split "cost") and ``dhs`` solve batches of cells of one or many shapes, against one
thread per cell (``interleaved``, the papers' "old" solver) and ``tiled``; does
``strategy="auto"`` land within 10 % of the best; are the speed targets met?

* Cases (:func:`._multi_cases.cases`; most important first): 3000 copies of
  morph_ca1_n120 at nseg=8 (1405 nodes, the large-cell target); 100 copies at nseg=1 (the
  small-batch target); real mixes (cells drawn from all 17 repository morphologies, nseg=1,
  min_radius 0.01 µm; 100 to 256,000 cells; each with the mono-morphology batch of the same
  total nodes, for the mixed/mono target);
  Valero-Lara 2018 Fig. 6 (25,600 random trees of 200 nodes, branching 10 % and 50 %, one
  tree shared vs every cell different); Fig. 14 (binary trees of about 512 nodes with 2-4
  branch levels, 256-256,000 cells, with the multicore CPU); Arbor's Figs. 7.1/7.2 (random
  trees of 200 nodes, branching 90/50/10 %, 10-10,000 cells, and 100,000 at 50 %); the
  limits of ``auto``'s evidence: 1,280 cells of 128 random shapes, 10 copies each (near
  ``grouped``'s one class per SM), and 2,560 and 25,600 copies of an unbranched cable of
  1,000 nodes.
* Every case: fp64, CUDA events around ``solve`` from canonical values (gathers and
  scatters included), pivots not checked, median of ``--repeats`` after warm-up; planning
  time is not included (it is done once per batch). All ratios come from this one run.
  Every strategy's solution is compared with ``interleaved``'s (max abs difference over max
  abs value). The multicore CPU (Fig. 14): the best of 5 calls after a warm-up, all of
  Numba's threads.
* ``auto``: the GPU backend's pick for the batch,
  and the time of that (default-option) contender in the same case against the best.
* A wall-clock budget (``--budget``) skips the remaining cases when spent (listed as such).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .common import machine_info, write_results

__all__ = ["configure", "run", "analyse", "QUESTION"]

QUESTION = ("How fast do levels, fine (plain and balanced) and dhs solve mono- and "
            "multi-morphology batches against one thread per cell (interleaved) and tiled, does "
            "strategy='auto' land within 10 % of the best, and are the speed targets met?")
#: Speed targets: 256000 real cells at most this many times the same nodes of one shared
#: cell; the best fine-grained strategy at least this many times faster than one thread per
#: cell on 100 cells; 3000 copies of the 1405-node ca1 cell in at most this many ms.
TARGETS = {"mixed/mono": 1.25, "small batch": 3.0, "large cell": 0.15}
AUTO_TOLERANCE = 1.10
#: The contender a strategy's backend falls back to when it cannot take a batch (timed as
#: auto's pick when the pick itself failed).
FALLBACK = {"tiled": "interleaved", "grouped-one": "grouped"}
#: Resident threads per SM the rows' ``resident`` counts (rows keep it, not the SM count
#: ``auto`` reads: the SMs are ``resident // THREADS_PER_SM``).
THREADS_PER_SM = 2048


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``bench multi``'s arguments to ``parser``."""
    parser.add_argument("--out", default=".", metavar="DIR",
                        help="directory for multi.json, multi.md and the figures "
                             "(default: the current folder)")
    parser.add_argument("--repeats", type=int, default=10, help="GPU timings per case (median)")
    parser.add_argument("--budget", type=float, default=280.0, metavar="S",
                        help="wall-clock seconds after which the remaining cases are skipped")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: small batches, 3 repeats")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG figures")
    parser.add_argument("--resume", metavar="PATH",
                        help="keep the rows of an earlier run (its multi.json or multi_rows.json) "
                             "and measure only the cases missing from it")
    parser.add_argument("--from-json", metavar="PATH",
                        help="no GPU: re-analyse the rows of an earlier multi.json (auto's picks "
                             "with the current rule) and rewrite the results")


def run(args: argparse.Namespace) -> int:
    """Run (or re-analyse) the benchmark; write multi.json, multi.md and the PNGs."""
    if args.repeats < 1 or args.budget <= 0:
        print("hinesbatch bench multi: error: --repeats and --budget must be positive",
              file=sys.stderr)
        return 1
    if args.from_json:
        doc = json.loads(Path(args.from_json).read_text(encoding="utf-8"))
        tables = doc["tables"]  # multi.json keeps the rows as "Raw rows", multi_rows.json as "All cases"
        rows, machine = tables.get("Raw rows") or tables["All cases"], doc["machine"]
        extra_notes = [n for n in doc["notes"]  # what the run measured, and what it skipped
                       if n.startswith("skipped") or "kept from an earlier run" in n] + [
            f"re-analysed without a GPU from {Path(args.from_json).name}: auto's picks are those "
            "of the GPU backend's current rule on each batch's shape"]
    else:
        from ..solvers import registry

        ok, why = registry.get("gpu").available()
        if not ok:
            print(f"hinesbatch bench multi: error: the GPU backend cannot run here: {why}",
                  file=sys.stderr)
            return 1
        rows, machine, extra_notes = _measure(args)
    tables, notes = analyse(rows)
    notes = notes + extra_notes
    json_path, md_path = write_results(tables, args.out, "multi", question=QUESTION, notes=notes,
                                       machine=machine)
    print(f"wrote {json_path} and {md_path}")
    if not args.no_plots:
        from ._multi_plots import figures

        for path in figures(rows, Path(args.out)):
            print(f"wrote {path}")
    for note in notes:
        print(note)
    return 0


def _measure(args) -> tuple[list[dict], dict, list[str]]:
    import cupy

    from ._gpu_timing import gpu_info
    from ._multi_cases import cases

    info = gpu_info(cupy)
    print("GPU:", "; ".join(info["gpus"]), flush=True)
    props = cupy.cuda.runtime.getDeviceProperties(0)
    resident = int(props["multiProcessorCount"]) * THREADS_PER_SM
    repeats = 3 if args.quick else args.repeats
    import numba

    machine = machine_info({**info, "multicore_threads": numba.get_num_threads(),
                            "resident_threads": resident})
    partial = Path(args.out) / "multi_rows.json"  # rows so far: --from-json can finish a cut run
    partial.parent.mkdir(parents=True, exist_ok=True)
    start, rows, skipped, notes = time.perf_counter(), [], [], []
    if args.resume:
        rows, earlier = _earlier_rows(Path(args.resume))
        notes.append(f"{len(rows)} case(s) kept from an earlier run ({earlier}); the other cases "
                     f"measured on {machine.get('date', 'this run')}; every row's strategies "
                     "come from one run")
    done = {(r["figure"], r["case"]) for r in rows}
    for case in cases(args.quick):
        if (case.figure, case.label) in done:
            continue
        if time.perf_counter() - start > args.budget:
            skipped.append(f"{case.figure}: {case.label}")
            continue
        rows.append(_run_case(cupy, case, repeats, int(props["l2CacheSize"]), resident))
        partial.write_text(json.dumps({"machine": machine, "tables": {"All cases": rows},
                                       "notes": []}, default=str), encoding="utf-8")
    if skipped:
        notes.append(f"skipped (budget of {args.budget:.0f} s spent): {', '.join(skipped)}")
    return rows, machine, notes


def _earlier_rows(path: Path) -> tuple[list[dict], str]:
    """The measured rows of an earlier run's JSON and that run's date."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    tables = doc["tables"]
    rows = tables.get("Raw rows", tables.get("All cases"))
    if rows is None:
        raise ValueError(f"{path}: no 'Raw rows' or 'All cases' table (not a bench multi JSON)")
    return list(rows), str(doc.get("machine", {}).get("date", "date unknown"))


def _run_case(cupy, case, repeats: int, l2: int, resident: int) -> dict:
    """Time every contender on one case; one row (times in ms, None where a contender failed)."""
    import numpy as np

    from ..solvers.gpu.auto import auto_strategy, depth_fraction
    from ..tree.schedules import cell_shapes
    from ..tree.structure import MonoBatch
    from ._gpu_timing import free_memory
    from ._multi_cases import CONTENDERS, gpu_ms, values

    t0 = time.perf_counter()
    structure = case.build()
    d, rhs = values(structure)
    d0, r0 = cupy.asarray(d), cupy.asarray(rhs)
    del d, rhs
    mono = isinstance(structure, MonoBatch)
    sizes = np.array([structure.cell.n_nodes]) if mono else structure.cell_sizes
    row = {"figure": case.figure, "case": case.label, "cells": structure.n_cells,
           "nodes": int(structure.n_nodes), "mono": mono, "max_cell_nodes": int(sizes.max()),
           "mean_cell_nodes": float(sizes.mean()),
           "depth": depth_fraction(structure.cell.parent) if mono else None, "resident": resident,
           "classes": cell_shapes(structure, couplings=True).n_shapes}
    name, options, row["auto_reason"] = auto_strategy(structure, resident // THREADS_PER_SM)
    row["auto"] = _label(name, options, row["classes"])
    ref, errors = None, {}
    for label, strategy, options in CONTENDERS:
        try:
            ms, desc, x = gpu_ms(cupy, structure, d0, r0, strategy, options, repeats=repeats, l2=l2)
        except Exception as exc:  # a contender that cannot take this batch: recorded, not fatal
            row[label], errors[label] = None, f"{type(exc).__name__}: {exc}"[:200]
            free_memory(cupy)
            continue
        row[label] = ms
        if ref is None:
            ref = x
        else:
            errors[label] = float(cupy.max(cupy.abs(x - ref)) / cupy.max(cupy.abs(ref)))
        del x
        free_memory(cupy)
    del ref, d0, r0
    free_memory(cupy)
    row["multicore"] = _cpu_ms(structure) if case.cpu else None
    row["mono_equivalent"] = (_mono_equivalent(cupy, structure, repeats, l2)
                              if case.mono_equivalent else None)
    row["diff_vs_interleaved"] = errors
    row["wall_s"] = round(time.perf_counter() - t0, 1)
    print(json.dumps({k: v for k, v in row.items() if k != "auto_reason"}, default=str), flush=True)
    return row


def _cpu_ms(structure) -> float:
    from ._hines_setup import cpu_times
    from ._multi_cases import values

    d, rhs = values(structure)
    # The best of 5 calls after a warm-up: on a shared 16-core host single calls drew
    # spikes of 2-12 ms in some runs and none in others; the best of 5 is hit less often
    # than a median of 1 or 3 (docs/decisions/016-multicore-timing.md).
    return cpu_times(structure, d, rhs, repeats=5, backends=("multicore",), warmup=1,
                     reduce=min)["multicore"]


def _mono_equivalent(cupy, structure, repeats: int, l2: int) -> dict:
    """Best time of tiled and interleaved on a MonoBatch of the focus cell with the same total
    nodes (the mixed/mono target's reference)."""
    from ..tree.structure import MonoBatch
    from ._gpu_timing import free_memory
    from ._multi_cases import FOCUS, gpu_ms, real_cells, values

    cell = real_cells(1)[FOCUS]
    n = max(1, round(structure.n_nodes / cell.n_nodes))
    mono = MonoBatch(cell, n)
    d, rhs = values(mono)
    d0, r0 = cupy.asarray(d), cupy.asarray(rhs)
    times = {}
    for strategy in ("tiled", "interleaved"):
        times[strategy] = gpu_ms(cupy, mono, d0, r0, strategy, {}, repeats=repeats, l2=l2)[0]
        free_memory(cupy)
    best = min(times, key=times.get)
    return {"cells": n, "nodes": n * cell.n_nodes, "best": best, "ms": times[best]}


# -- analysis (no GPU) --------------------------------------------------------------------------
def analyse(rows: list[dict]) -> tuple[dict, list[str]]:
    """Result tables and notes from the measured rows: best per case, auto against the best,
    the figures' ratios and the speed targets. Auto's pick is recomputed with the current rule."""
    from ._multi_cases import CONTENDERS, FINE_GRAINED

    labels = [c[0] for c in CONTENDERS]
    summary, notes = [], []
    for r in rows:
        r["auto"], r["auto_reason"] = _auto_pick(r)
        times = {k: r[k] for k in labels if r.get(k) is not None}
        best = min(times, key=times.get) if times else None
        # the backend falls back to interleaved when tiled cannot hold a cell in shared memory,
        # and grouped to one launch per class when the one launch cannot take every class
        auto_ms = times.get(r["auto"], times.get(FALLBACK.get(r["auto"])))
        fine = {k: times[k] for k in FINE_GRAINED if k in times}
        line = {"figure": r["figure"], "case": r["case"], "cells": r["cells"], "nodes": r["nodes"]}
        line.update({k: r.get(k) for k in labels})
        line["multicore"] = r.get("multicore")
        line.update({"best": best, "auto": r["auto"],
                     "auto/best": auto_ms / times[best] if auto_ms and best else None,
                     "best fine/interleaved": (times["interleaved"] / min(fine.values())
                                               if fine and "interleaved" in times else None)})
        summary.append(line)
    within = [s for s in summary if s["auto/best"] is not None and s["auto/best"] <= AUTO_TOLERANCE]
    notes.append(f"auto within 10 % of the best on {len(within)} of {len(summary)} cases"
                 + ("" if len(within) == len(summary) else ": not on " + ", ".join(
                     f"{s['case']} (auto {s['auto']} {s['auto/best']:.2f}x best {s['best']})"
                     if s["auto/best"] else f"{s['case']} (auto's pick failed)"
                     for s in summary if s not in within)))
    notes += _target_notes(rows, summary)
    return {"All cases": summary, "Raw rows": rows}, notes


def _auto_pick(row: dict) -> tuple[str, str]:
    """Auto's pick for a measured row (a contender label) and its reason, by the current rule."""
    from ..solvers.gpu.auto import choose

    sms = row["resident"] // THREADS_PER_SM if row.get("resident") else None
    name, options, why = choose(mono=row["mono"], n_cells=row["cells"],
                              mean_nodes=row.get("mean_cell_nodes") or row["nodes"] / row["cells"],
                              max_nodes=row["max_cell_nodes"], classes=row.get("classes"), sms=sms)
    return _label(name, options, row.get("classes")), why


def _label(name: str, options: dict, classes: int | None) -> str:
    """The contender label of a (strategy, options) pair for a batch of ``classes`` classes
    of cells with one matrix: ``grouped`` with its default options is the contender its
    default launch is (:func:`hinesbatch.solvers.gpu.grouped.one_launch_by_default`)."""
    from ..solvers.gpu.strategies.grouped import one_launch_by_default
    from ._multi_cases import CONTENDERS

    if name == "grouped" and "one_launch" not in options:
        options = {**options, "one_launch": one_launch_by_default(classes or 0)}
    for label, strategy, opts in CONTENDERS:
        if strategy == name and opts == options:
            return label
    raise ValueError(f"auto picked {name} {options}, which the benchmark does not time")


def _target_notes(rows, summary) -> list[str]:
    from ._multi_cases import CONTENDERS, SHARING

    labels = [c[0] for c in CONTENDERS]
    notes = []
    by_case = {s["case"]: s for s in summary}
    big = [r for r in rows if r["figure"] == "real-mix" and r["cells"] == 256000]
    if big and big[0].get("mono_equivalent"):
        r, s = big[0], by_case[big[0]["case"]]
        best = s[s["best"]] if s["best"] else None
        ref = r["mono_equivalent"]["ms"]
        ok = best is not None and best <= TARGETS["mixed/mono"] * ref
        notes.append(f"mixed/mono target {'met' if ok else 'NOT met'}: 256000 real cells {best:.3f} ms "
                     f"({s['best']}) vs mono {ref:.3f} ms ({r['mono_equivalent']['best']}, "
                     f"{r['mono_equivalent']['cells']} x ca1), ratio {best / ref:.2f} "
                     f"(target <= {TARGETS['mixed/mono']})")
        alone = {k: s[k] for k in labels if k not in SHARING and s.get(k) is not None}
        if alone:  # the strategies that read every cell's matrix on its own
            k = min(alone, key=alone.get)
            notes.append(f"mixed/mono without sharing the matrices of alike cells (what a batch "
                         f"whose cells all differ gets; {r.get('classes', '?')} classes here): "
                         f"{alone[k]:.3f} ms ({k}), ratio {alone[k] / ref:.2f}")
    else:
        notes.append("mixed/mono target: not measured (case skipped or failed)")
    for name in ("100 x ca1 (nseg=1)", "100 real cells"):
        s = by_case.get(name)
        if s and s["best fine/interleaved"]:
            ok = s["best fine/interleaved"] >= TARGETS["small batch"]
            notes.append(f"small-batch target {'met' if ok else 'NOT met'} on {name}: best fine-grained "
                         f"{s['best fine/interleaved']:.2f}x faster than one thread per cell "
                         f"(target >= {TARGETS['small batch']})")
    s = by_case.get("3000 x ca1 (nseg=8)")
    if s and s["best"]:
        ms = s[s["best"]]
        ok = ms <= TARGETS["large cell"]
        notes.append(f"large-cell target {'met' if ok else 'NOT met'}: 3000 x ca1 (1405 "
                     f"nodes) {ms:.3f} ms per solve ({s['best']}; target <= "
                     f"{TARGETS['large cell']} ms)")
    else:
        notes.append("large-cell target: not measured")
    return notes

