"""``hinesbatch bench tridiagonal``: the cuThomasBatch figures (Valero-Lara et al. 2018, Figs. 9-13).

Question: how fast and how accurate are hinesbatch's GPU tridiagonal solvers (``chunked``:
several threads per system, system in registers; ``thomas``: cuThomasBatch, one thread per
system) against cuSPARSE (gtsv2StridedBatch, gtsvInterleavedBatch algorithms 0, 1, 2) and the
serial and multicore CPU, on the paper's grids, and do they meet the speed goals?

* Grids: sizes 64-512 x 256-256000 systems and 1024-8192 x 20-20000 systems, fp32 and fp64,
  random diagonally dominant systems (|d| > |dl| + |du|, as in the paper).
* GPU times: CUDA events, median of ``--repeats`` after warm-up, input sets rotated when one set
  fits in a few L2 caches (:mod:`._tridiagonal_cases`). cuSPARSE routines are timed alone on
  arrays already in their layout; ours both on canonical ``(batch, n)`` values (what
  ``solve_tridiagonal`` runs: ``chunked``, ``thomas`` with its transposes) and on interleaved
  values (``*-native``).
* CPU (fp64, Figs. 10-11): the serial and multicore (all cores) backends, wall clock, median of
  ``--cpu-repeats`` (one repeat above 5e7 unknowns); never extrapolated.
* Accuracy (Fig. 12a): forward error against the serial fp64 CPU solve, 200 systems per size.
* Memory (Fig. 12b): device memory beyond inputs and solution, 20000 fp64 systems.
* Variable sizes (Fig. 13): 256000 systems of U[256, 512] rows against fixed 256 and 512.
* Bandwidth: 40 bytes per unknown in fp64 (read dl, d, du, rhs, write x; 20 in fp32) over the
  time, against a device-to-device copy (4 GiB, read + write counted) measured in the same run.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from .common import machine_info, write_results

__all__ = ["configure", "run", "QUESTION", "SMALL", "LARGE", "GOALS"]

QUESTION = ("How fast and how accurate are hinesbatch's GPU tridiagonal solvers (chunked: several "
            "threads per system held in registers; thomas: cuThomasBatch) against cuSPARSE "
            "(gtsv2StridedBatch, gtsvInterleavedBatch 0/1/2) and the CPU on the grids of "
            "Valero-Lara et al. 2018 (Figs. 9-13), and are the speed goals met?")
#: (sizes, system counts) of the paper's two test cases.
SMALL = ((64, 128, 256, 512), (256, 2560, 25600, 256000))
LARGE = ((1024, 2048, 4096, 8192), (20, 200, 2000, 20000))
QUICK_SMALL = ((64, 512), (256, 2560))
QUICK_LARGE = ((1024,), (20, 200))
CUSPARSE_NAMES = ("gtsv2StridedBatch", "gtsvInterleavedBatch-0", "gtsvInterleavedBatch-1",
                  "gtsvInterleavedBatch-2")
#: (label, n, systems, reference contender or "best cusparse", speedup needed, bandwidth share).
GOALS = (("256000 x 512 vs gtsvInterleavedBatch algo 0", 512, 256000, "gtsvInterleavedBatch-0", 1.25, 0.60),
         ("2560 x 512 not slower than gtsv2StridedBatch", 512, 2560, "gtsv2StridedBatch", 1.0, None),
         ("20000 x 8192 vs the best cuSPARSE routine", 8192, 20000, "best cusparse", 1.5, None))


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``bench tridiagonal``'s arguments to ``parser``."""
    parser.add_argument("--out", default=".", metavar="DIR",
                        help="directory for tridiagonal.json, tridiagonal.md and the figures "
                             "(default: the current folder)")
    parser.add_argument("--repeats", type=int, default=10, help="GPU timings per case (median)")
    parser.add_argument("--cpu-repeats", type=int, default=3, help="CPU timings per case (median)")
    parser.add_argument("--dtypes", nargs="+", default=["float64", "float32"],
                        choices=["float64", "float32"], help="precisions of the grids")
    parser.add_argument("--no-cpu", action="store_true", help="skip the CPU solvers")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: small grids, fp64, few repeats")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG figures")


def run(args: argparse.Namespace) -> int:
    """Run the benchmark, print rows as they finish, write JSON, Markdown and PNGs."""
    from ..solvers import registry

    ok, why = registry.get("gpu", "tridiagonal").available()
    if not ok:
        print(f"hinesbatch bench tridiagonal: error: the GPU backend cannot run here: {why}",
              file=sys.stderr)
        return 1
    if args.repeats < 1 or args.cpu_repeats < 1:
        print("hinesbatch bench tridiagonal: error: repeats must be >= 1", file=sys.stderr)
        return 1
    import cupy

    from ._gpu_timing import copy_bandwidth, gpu_info
    from ._tridiagonal_cases import accuracy_rows, memory_rows, vbatch_rows

    quick = args.quick
    repeats = 3 if quick else args.repeats
    dtypes = ["float64"] if quick else args.dtypes
    info = gpu_info(cupy)
    l2 = int(cupy.cuda.runtime.getDeviceProperties(0)["l2CacheSize"])
    print("GPU:", "; ".join(info["gpus"]), flush=True)
    ceiling = copy_bandwidth(cupy)
    print(f"copy bandwidth: {ceiling['TB_per_s']:.3f} TB/s", flush=True)
    grids = (QUICK_SMALL, QUICK_LARGE) if quick else (SMALL, LARGE)
    cases, cpu = _grid_cases(cupy, dtypes, grids, repeats=repeats, l2=l2,
                             cpu_repeats=1 if quick else args.cpu_repeats, no_cpu=args.no_cpu)
    machine = machine_info({**info, "command": " ".join(sys.argv)})
    partial, _ = _tables(cases, cpu, ceiling, [], [], [])  # a checkpoint, should a later part fail
    write_results(partial, args.out, "tridiagonal", question=QUESTION, machine=machine,
                  notes=["partial: grids only"])
    print("accuracy, memory, variable sizes ...", flush=True)
    acc_sizes = (64, 1024) if quick else (64, 128, 256, 512, 1024, 2048, 4096, 8192)
    accuracy = [r for dt in dtypes for r in accuracy_rows(cupy, acc_sizes, dt, batch=200, seed=7)]
    memory = memory_rows(cupy, (1024,) if quick else LARGE[0], batch=200 if quick else 20000, seed=8)
    vbatch = vbatch_rows(cupy, batch=2560 if quick else 256000, repeats=repeats, seed=9)
    tables, notes = _tables(cases, cpu, ceiling, accuracy, memory, vbatch)
    json_path, md_path = write_results(tables, args.out, "tridiagonal", question=QUESTION,
                                       notes=notes, machine=machine)
    print(f"wrote {json_path} and {md_path}")
    if not args.no_plots:
        from ._tridiagonal_plots import write_figures

        for path in write_figures(tables, args.out):
            print(f"wrote {path}")
    print("\n".join(["summary:", *(f"  {n}" for n in notes)]))
    return 0


def _grid_cases(cupy, dtypes, grids, *, repeats, l2, cpu_repeats, no_cpu):
    from ._tridiagonal_cases import cpu_times, gpu_case, random_systems

    cases, cpu = [], {}
    for dt in dtypes:
        for sizes, counts in grids:
            for n in sizes:
                for batch in counts:
                    case = gpu_case(cupy, dt, n, batch, repeats=repeats, l2_bytes=l2,
                                    seed=1000 * n + batch)
                    cases.append(case)
                    best = min(case.ms, key=case.ms.get) if case.ms else None
                    print(f"{dt} n={n:5d} systems={batch:6d}: " + ", ".join(
                        f"{k} {v:.4g}" for k, v in case.ms.items()) + f"  (fastest {best})"
                        + (f"  FAILED {case.errors}" if case.errors else ""), flush=True)
                    if dt == "float64" and not no_cpu:
                        host = [a.get() for a in random_systems(cupy, batch, n, np.float64, 1)]
                        reps = cpu_repeats if n * batch <= 5e7 else 1
                        cpu[n, batch] = cpu_times(*host, repeats=reps)
                        print(f"    cpu: serial {cpu[n, batch]['serial']:.4g} ms, multicore "
                              f"{cpu[n, batch]['multicore']:.4g} ms", flush=True)
                        del host
    return cases, cpu


def _tables(cases, cpu, ceiling, accuracy, memory, vbatch):
    tbs = ceiling["TB_per_s"]
    times, speed, agree, cpu_rows = [], [], [], []
    for c in cases:
        floor_b = (40 if c.dtype == "float64" else 20) * c.n * c.batch
        row = {"dtype": c.dtype, "n": c.n, "systems": c.batch, "sets": c.sets}
        row.update({k: c.ms.get(k) for k in ("chunked", "chunked-native", "thomas",
                                             "thomas-native", *CUSPARSE_NAMES)})
        row["chunked solve+check (host ms)"] = c.check_ms
        for k in ("chunked", "chunked-native"):
            ms = c.ms.get(k)
            row[f"{k} share of copy BW"] = None if ms is None else floor_b / (ms * 1e-3) / 1e12 / tbs
        times.append(row)
        strided = c.ms.get("gtsv2StridedBatch")
        best = min((c.ms[k] for k in CUSPARSE_NAMES if k in c.ms), default=None)
        srow = {"dtype": c.dtype, "n": c.n, "systems": c.batch}
        for k in ("chunked", "chunked-native", "thomas", "thomas-native"):
            srow[f"{k} / strided"] = _ratio(strided, c.ms.get(k))
            srow[f"{k} / best cuSPARSE"] = _ratio(best, c.ms.get(k))
        speed.append(srow)
        agree.append({"dtype": c.dtype, "n": c.n, "systems": c.batch,
                      **{k: v for k, v in c.diff.items()},
                      "failures": "; ".join(f"{k}: {v}" for k, v in c.errors.items()) or None})
        if c.dtype == "float64" and (c.n, c.batch) in cpu:
            t = cpu[c.n, c.batch]
            cpu_rows.append({"n": c.n, "systems": c.batch, "serial ms": t["serial"],
                             "multicore ms": t["multicore"],
                             "multicore x": t["serial"] / t["multicore"],
                             "chunked x": _ratio(t["serial"], c.ms.get("chunked")),
                             "cuThomasBatch (thomas-native) x": _ratio(t["serial"], c.ms.get("thomas-native")),
                             "gtsv2StridedBatch x": _ratio(t["serial"], c.ms.get("gtsv2StridedBatch"))})
    goals, notes = _goals(cases, tbs)
    tables = {
        "Copy-bandwidth ceiling": [ceiling],
        "Figs. 9-11: GPU times (ms, median)": times,
        "Fig. 9: speedup over cuSPARSE": speed,
        "Figs. 10-11: speedup over the serial CPU (fp64)": cpu_rows,
        "Agreement: max rel. difference from gtsvInterleavedBatch algo 1 (LU, pivoting)": agree,
        "Fig. 12a: forward error against the serial fp64 CPU solve": accuracy,
        "Fig. 12b: device memory beyond inputs and solution (MB, fp64)": memory,
        "Fig. 13: variable sizes, fp64 (ms)": vbatch,
        "Speed goals": goals,
    }
    return tables, notes


def _ratio(num, den):
    return None if num is None or den is None or den <= 0 else num / den


def _goals(cases, tbs):
    rows, notes = [], []
    for dt in ("float64", "float32"):
        for label, n, batch, ref, need, share in GOALS:
            c = next((c for c in cases if (c.dtype, c.n, c.batch) == (dt, n, batch)), None)
            for entry in ("chunked", "chunked-native"):
                row = {"goal": label, "dtype": dt, "ours": entry}
                if c is None or entry not in c.ms:
                    rows.append({**row, "met": None, "note": "not run"})
                    continue
                if ref == "best cusparse":
                    name = min((k for k in CUSPARSE_NAMES if k in c.ms), key=c.ms.get, default=None)
                else:
                    name = ref if ref in c.ms else None
                ours = c.ms[entry]
                ratio = _ratio(c.ms.get(name), ours) if name else None
                frac = None
                if share is not None:
                    frac = (40 if dt == "float64" else 20) * n * batch / (ours * 1e-3) / 1e12 / tbs
                met = ratio is not None and ratio >= need and (share is None or frac >= share)
                rows.append({**row, "ours ms": ours, "reference": name,
                             "reference ms": c.ms.get(name) if name else None, "speedup": ratio,
                             "needed": need, "share of copy BW": frac, "share needed": share,
                             "met": met})
                bw = "" if frac is None else f", {frac:.0%} of the copy-bandwidth floor (need {share:.0%})"
                notes.append(f"{dt} {label}: {entry} {ours:.4g} ms vs {name} "
                             f"{c.ms.get(name, float('nan')):.4g} ms = {ratio or float('nan'):.2f}x "
                             f"(need {need}x){bw}: {'MET' if met else 'NOT met'}")
    failures = [f"{c.dtype} {c.n}x{c.batch}: {c.errors}" for c in cases if c.errors]
    notes += [f"contender failed: {f}" for f in failures]
    return rows, notes


def main(argv=None) -> int:
    """``python -m hinesbatch.bench.tridiagonal`` (the same as ``hinesbatch bench tridiagonal``)."""
    parser = argparse.ArgumentParser(prog="hinesbatch bench tridiagonal", description=__doc__.splitlines()[0])
    configure(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
