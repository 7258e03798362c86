"""``hinesbatch bench network``: NEURON's ringtest at growing sizes, hinesbatch against NEURON
on the same cores.

Question: is hinesbatch's CPU engine, run as a network (epochs of the minimum delay, spikes
exchanged between them), at least twice as fast as NEURON 9.0.2 on the same number of
cores, and does it give NEURON's raster?

* Model: the ringtest (:mod:`hinesbatch.network.ringtest`, ringtest's defaults) with
  ``--nring`` rings of ``--ncell`` cells (by default 16, 64 and 256 rings of 8: 128 to
  2048 cells), 100 ms.
* hinesbatch: ``mpiexec -n N python -m hinesbatch.bench.network_worker`` (N ranks, one core
  each, the ``serial`` engine per rank; without ``mpiexec`` for N = 1). It runs 1 ms first
  (kernels loaded), then times the run: the slowest rank's stepping time plus its time in
  the spike exchange (waiting for the others included), i.e. what NEURON's ``psolve``
  timing covers; ``finitialize`` with the engine's arrays (``setup_s``) and the whole call,
  building the cells included (``wall_s``), are reported apart.
* NEURON: ``python -m hinesbatch.bench.neuron_ringtest`` builds the same model with
  ``neuron.h`` as ringtest does, with ``pc.nthread(N)`` (N threads on the same N cores),
  and times ``pc.psolve(tstop)``.
* ``--backend gpu``: one rank per GPU (``--ranks`` GPUs), the GPU engine within a rank;
  ``--branch 32 64 --nring 128 --ncell 128 --tstop 10`` is the case of CoreNEURON's
  published one-GPU time (16 384 cells, 0.431 s), which the goal for one GPU is measured
  against: at least 10x faster.
* Every row is also compared with the row of the fewest ranks of the same size:
  ``speedup_vs_fewest_ranks`` and ``same_raster_as_fewest_ranks`` (gids and times, float
  equality). On GPUs, 4 ranks against 1 at >= 100 000 cells is the strong-scaling goal
  (>= 3.5x); each row splits the slowest rank's time into compute and exchange.
* Each pair is timed in turn (hinesbatch, NEURON, hinesbatch, ...), ``--repeats`` times;
  medians. The rasters are compared (gids and times, float equality): a speed-up of a run
  that differs from NEURON meets no goal.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from .common import machine_info, write_results

__all__ = ["QUESTION", "configure", "run"]

QUESTION = ("Is hinesbatch's engine, run as a network split over ranks, at least 2x as fast "
            "as NEURON 9.0.2 (threads) on the same cores on NEURON's ringtest, with NEURON's "
            "raster; and with one GPU per rank, at least 10x faster than CoreNEURON's "
            "published one-GPU time?")
NRINGS = (16, 64, 256)
NCELL = 8
TSTOP = 100.0
RANKS = (1, 2)
QUICK = {"nring": (4,), "tstop": 10.0, "ranks": (1,), "repeats": 1}
SPEEDUP_GOAL = 2.0
#: CoreNEURON's published one-GPU ringtest: (nring, ncell, branch, tstop) -> seconds.
CORENEURON_GPU = {(128, 128, (32, 64), 10.0): 0.431}
CORENEURON_GOAL = 10.0
TIMEOUT = 1800  # [s] per subprocess
#: Strong scaling on one machine's GPUs: 4 ranks at least this much faster than 1 ...
SCALING_GOAL = 3.5
#: ... on networks of at least this many cells.
SCALING_CELLS = 100_000


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``bench network``'s arguments to ``parser``."""
    parser.description = QUESTION
    parser.add_argument("--out", default=".", metavar="DIR",
                        help="directory for network.json and network.md (default: here)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: 4 rings, 10 ms, one rank, one repeat")
    parser.add_argument("--nring", type=int, nargs="+", metavar="N",
                        help=f"ring counts (default {' '.join(map(str, NRINGS))})")
    parser.add_argument("--ncell", type=int, default=NCELL, metavar="N",
                        help=f"cells per ring (default {NCELL})")
    parser.add_argument("--tstop", type=float, metavar="MS", help=f"default {TSTOP:g} ms")
    parser.add_argument("--ranks", type=int, nargs="+", metavar="N",
                        help="ranks for hinesbatch = threads for NEURON (default "
                             f"{' '.join(map(str, RANKS))})")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs (median; default 3)")
    parser.add_argument("--no-neuron", action="store_true", help="skip NEURON")
    parser.add_argument("--backend", choices=("serial", "gpu"), default="serial",
                        help="engine within a rank: serial (one core per rank, default) or "
                             "gpu (one GPU per rank)")
    parser.add_argument("--branch", type=int, nargs=2, default=(10, 20), metavar=("LO", "HI"),
                        help="ringtest's -branch: dendrite compartments (default 10 20)")


def run(args: argparse.Namespace) -> int:
    """Run the benchmark; print rows as they finish; write the results. Returns the exit status."""
    nrings = tuple(args.nring or (QUICK["nring"] if args.quick else NRINGS))
    ranks = tuple(args.ranks or (QUICK["ranks"] if args.quick else RANKS))
    tstop = args.tstop or (QUICK["tstop"] if args.quick else TSTOP)
    repeats = QUICK["repeats"] if args.quick else args.repeats
    try:
        if min(nrings) < 1 or args.ncell < 1 or min(ranks) < 1 or repeats < 1 or tstop <= 0:
            raise ValueError("--nring, --ncell, --ranks and --repeats must be >= 1, --tstop > 0")
        mpiexec = _mpiexec() if max(ranks) > 1 else None
        if max(ranks) > 1 and mpiexec is None:
            raise ValueError("more than one rank needs mpiexec beside Python or on PATH "
                             "(pip install 'hinesbatch[mpi]')")
    except ValueError as exc:
        print(f"hinesbatch bench network: error: {exc}", file=sys.stderr)
        return 1
    notes = []
    use_neuron = not args.no_neuron and _neuron_missing() is None
    if not args.no_neuron and not use_neuron:
        notes.append(f"NEURON is not available ({_neuron_missing()}): no NEURON columns")
        print(notes[-1], file=sys.stderr)
    rows = []
    with tempfile.TemporaryDirectory(prefix="hinesbatch-bench-network-") as tmp:
        for nring in nrings:
            first = None        # (ranks, seconds, (gids, times)) of the fewest ranks
            for n in sorted(ranks):
                row, raster = _row(nring, args.ncell, tstop, n, repeats, Path(tmp), mpiexec,
                                   use_neuron=use_neuron, backend=args.backend,
                                   branch=tuple(args.branch))
                first = first or (n, row["hinesbatch_s"], raster)
                row["speedup_vs_fewest_ranks"] = first[1] / row["hinesbatch_s"]
                row["same_raster_as_fewest_ranks"] = bool(
                    all(np.array_equal(a, b) for a, b in zip(first[2], raster)))
                rows.append(row)
    notes += _goals(rows)
    notes += _scaling_goals(rows)
    for note in notes:
        print(note)
    notes += _coreneuron_goals(rows, args.ncell, tuple(args.branch), tstop)
    per_rank = ("one rank per GPU (mpiexec), the GPU engine per rank" if args.backend == "gpu"
                else "one rank per core (mpiexec), serial engine per rank")
    extra = {"model": f"ringtest, {args.ncell} cells per ring, branch {args.branch[0]}-"
                      f"{args.branch[1]}, compart 1-1, {tstop:g} ms, dt 0.025 ms",
             "hinesbatch_setup": per_rank,
             "neuron_setup": "pc.nthread(N) threads, pc.psolve timed"}
    name = "network" if args.backend == "serial" else "network_gpu"
    json_path, md_path = write_results({"ringtest: hinesbatch ranks vs NEURON threads": rows},
                                       args.out, name, question=QUESTION, notes=notes,
                                       machine=machine_info(extra))
    print(f"wrote {json_path} and {md_path}")
    return 0


def _row(nring, ncell, tstop, n, repeats, tmp: Path, mpiexec, *, use_neuron: bool,
         backend: str = "serial", branch=(10, 20)) -> dict:
    shape = [nring, ncell, 8, branch[0], branch[1], 1, 1, tstop]
    ours_cmd = [sys.executable, "-m", "hinesbatch.bench.network_worker", None, *shape,
                backend]
    if n > 1:
        ours_cmd = [mpiexec, "-n", str(n), *ours_cmd]
    theirs_cmd = [sys.executable, "-m", "hinesbatch.bench.neuron_ringtest", None, *shape, n]
    ours, theirs = [], []
    for k in range(repeats):
        out = tmp / f"hb-{nring}-{n}-{k}.npz"
        ours.append(_load(_call(ours_cmd, out)))
        if use_neuron:
            out = tmp / f"nrn-{nring}-{n}-{k}.npz"
            theirs.append(_load(_call(theirs_cmd, out)))
    run_s = float(np.median([r["run_s"] for r in ours]))
    last = ours[-1]
    row = {"cells": nring * ncell, "nring": nring, "backend": backend,
           "ranks_or_threads": n, "spikes": int(last["gids"].size),
           "hinesbatch_s": run_s,
           "setup_s": float(np.median([max(r["setup_s"]) for r in ours])),
           "compute_s": float(np.median([max(r["compute_s"]) for r in ours])),
           "exchange_s": float(np.median([max(r["exchange_s"]) for r in ours])),
           "wall_s": float(np.median([r["wall_s"] for r in ours])),
           "epochs": int(last["epochs"]), "neuron_s": None, "speedup_vs_neuron": None,
           "same_raster": None}
    if use_neuron:
        nrn = theirs[-1]
        order = np.lexsort((nrn["gids"], nrn["times"]))
        row["neuron_s"] = float(np.median([r["psolve_s"] for r in theirs]))
        row["speedup_vs_neuron"] = row["neuron_s"] / run_s
        row["same_raster"] = bool(
            np.array_equal(nrn["gids"][order], last["gids"])
            and np.array_equal(nrn["times"][order], last["times"]))
    print("  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                    for k, v in row.items()), flush=True)
    return row, (last["gids"], last["times"])


def _call(argv, out: Path) -> Path:
    argv = [str(out) if a is None else str(a) for a in argv]
    env = dict(os.environ, MPLBACKEND="Agg", NUMBA_NUM_THREADS="1")
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=TIMEOUT,
                          check=False)
    if proc.returncode != 0 or not out.exists():
        tail = " ".join(proc.stderr.strip().splitlines()[-4:])
        raise RuntimeError(f"{' '.join(argv[:5])} ... failed ({proc.returncode}): {tail}")
    return out


def _load(path: Path) -> dict:
    with np.load(path) as data:
        return {k: data[k] for k in data.files}


def _mpiexec() -> str | None:
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def _neuron_missing() -> str | None:
    try:
        import neuron  # noqa: F401
    except Exception as exc:  # ImportError, or a broken install
        return str(exc) or type(exc).__name__
    return None


def _coreneuron_goals(rows, ncell: int, branch: tuple, tstop: float) -> list[str]:
    notes = []
    for r in rows:
        ref = CORENEURON_GPU.get((r["nring"], ncell, branch, tstop))
        if ref is None or r["backend"] != "gpu" or r["ranks_or_threads"] != 1:
            continue
        ratio = ref / r["hinesbatch_s"]
        notes.append(f"CoreNEURON's published one-GPU ringtest ({r['cells']} cells, "
                     f"{tstop:g} ms): {ref} s; hinesbatch on one GPU {r['hinesbatch_s']:.3f} s "
                     f"= {ratio:.1f}x; goal >= {CORENEURON_GOAL:g}x -> "
                     f"{'met' if ratio >= CORENEURON_GOAL else 'NOT met'}")
    return notes


def _scaling_goals(rows) -> list[str]:
    """Strong scaling on GPUs: 4 ranks (one GPU each) against 1 at >= SCALING_CELLS cells."""
    notes = []
    for r in rows:
        if r["backend"] != "gpu" or r["ranks_or_threads"] != 4:
            continue
        one = next((x for x in rows if x["nring"] == r["nring"] and x["backend"] == "gpu"
                    and x["ranks_or_threads"] == 1), None)
        if one is None:
            continue
        ratio = one["hinesbatch_s"] / r["hinesbatch_s"]
        judged = r["cells"] >= SCALING_CELLS and r["same_raster_as_fewest_ranks"]
        verdict = ("met" if ratio >= SCALING_GOAL else "NOT met") if judged else (
            f"not judged: fewer than {SCALING_CELLS} cells" if r["cells"] < SCALING_CELLS
            else "not judged: the raster differs from one rank's")
        notes.append(f"{r['cells']} cells, 4 GPUs (one rank each) vs 1: {ratio:.2f}x "
                     f"(compute {r['compute_s']:.3f} s, exchange {r['exchange_s']:.3f} s on "
                     f"the slowest rank); goal >= {SCALING_GOAL:g}x -> {verdict}")
    return notes


def _goals(rows) -> list[str]:
    notes = []
    for r in rows:
        if r["speedup_vs_neuron"] is None:
            continue
        met = r["speedup_vs_neuron"] >= SPEEDUP_GOAL
        verdict = ("met" if met else "NOT met") if r["same_raster"] else \
            "not judged: the raster differs from NEURON's"
        notes.append(
            f"{r['cells']} cells on {r['ranks_or_threads']} core(s): hinesbatch "
            f"{r['hinesbatch_s']:.3f} s (exchange {r['exchange_s']:.3f} s) vs NEURON "
            f"{r['neuron_s']:.3f} s = {r['speedup_vs_neuron']:.2f}x; goal >= "
            f"{SPEEDUP_GOAL:g}x -> {verdict}; raster "
            f"{'identical' if r['same_raster'] else 'DIFFERENT'} ({r['spikes']} spikes)")
    return notes
