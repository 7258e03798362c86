"""``hinesbatch bench hines``: the cuHinesBatch figures (Valero-Lara et al. 2017, Figs. 3-5).

Question: how fast do the papers' GPU layouts (Flat, Full-Interleaved, Block-Interleaved,
Block-Shared) and hinesbatch's ``tiled`` kernel solve batches of real cells, against the
serial and multicore CPU solvers, and how close does the fastest come to the device's copy
bandwidth?

* Cells: six repository morphologies standing in for the paper's Table 1 (small / medium /
  big by node count, few / many branches), discretized with NEURON's rules; ``nseg`` chosen so
  that the node count is near the paper's (:data:`STAND_INS` says which and why).
* Batches: ``MonoBatch`` (one structure shared by all cells, the papers' setting) of 256, 2560,
  25600 and 256000 cells, float64; values of 1024 random diagonally dominant cells repeated.
* CPU: ``serial`` and ``multicore`` (every core: Numba's default) on NumPy arrays, timed in
  turn (wall clock, median; fewer repeats since a serial solve of 256000 big cells takes
  about a second).
* GPU: CUDA events around each solve after warm-up, median of ``--repeats``; input sets
  rotated when one set fits in a few L2 caches (see :mod:`._gpu_timing`); pivot checks off
  (their cost is reported separately). Two times per strategy: *native* (values already in
  the strategy's layout: the papers' measurement) and *canonical* (``(n_cells, n)`` values
  as ``Plan.solve`` takes them: layout transposes included).
* Speedups are over the serial CPU time of the same batch, as in the papers' figures.
* Effective bandwidth: 24 bytes per node (fp64: read d and rhs, write x) for a shared
  structure, 44 for per-cell structures (plus u, l and parent), over the solve time; the
  ratio is to the device-to-device copy bandwidth measured in the same run.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from .common import interleaved_times, machine_info, write_results

__all__ = ["configure", "run", "QUESTION", "STAND_INS"]

QUESTION = ("How fast do the papers' GPU layouts (Flat, Full-Interleaved, Block-Interleaved, "
            "Block-Shared) and hinesbatch's tiled kernel solve batches of real cells against the "
            "serial and multicore CPU (Figs. 3-5 of Valero-Lara et al. 2017), and how close does "
            "the fastest come to the device's copy bandwidth?")

#: (category, file, nseg, paper's nodes, paper's branches). The high-branch stand-ins use
#: nseg=1 (NEURON's default), which gives 2 nodes per section like the paper's high cells;
#: the low-branch ones are the repository cells with the fewest sections, with nseg chosen to
#: bring the node count near the paper's (about 10 nodes per branch). No repository cell has
#: fewer than 29 sections, so small-low has 29 branches where the paper's has 7.
STAND_INS = (
    ("small-low", "mp_ma_40984_gc2.CNG.swc", 2, 76, 7),
    ("small-high", "ko20x-07.CNG.swc", 1, 76, 29),
    ("medium-low", "Gad1-F-600000.CNG.swc", 9, 305, 30),
    ("medium-high", "morph_ca1_n120.swc", 1, 319, 157),
    ("big-low", "C010398B-P2.CNG.swc", 8, 695, 66),
    ("big-high", "eNGC-j140908b_cell1.swc", 1, 691, 341),
)
CELLS = (256, 2560, 25600, 256000)
#: The Figs. 3-5 contenders on the GPU (strategy, options).
GPU_STRATEGIES = (("flat", {}), ("interleaved", {}), ("block-interleaved", {"bs": 128}),
                  ("block-shared", {}), ("tiled", {}))
#: The bandwidth table's contenders: every strategy above and block-shared keeping only the
#: sweep's factors in shared memory.
BANDWIDTH_STRATEGIES = (*GPU_STRATEGIES, ("block-shared", {"keep": "factors"}),
                        ("block-shared", {"keep": "factors", "lanes": 8}))
#: keep="factors" sweep: cells per block (bs) x every (lanes, nodes per step) instantiated.
FACTOR_BS = (8, 12, 16, 20, 24, 32, 40, 44)
BS_SWEEP = (32, 64, 128, 256, 512)
TILE_THREADS = (64, 128, 256)  # block sizes of the tiled sweep, times every (lanes, V) variant
FOCUS = "medium-high"  # the papers' Fig. 3 and Fig. 4 cell
BYTES_PER_NODE = {("mono", 8): 24, ("mono", 4): 12, ("multi", 8): 44, ("multi", 4): 24}


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``bench hines``'s arguments to ``parser``."""
    parser.add_argument("--out", default="benchmarks/results/h200", metavar="DIR",
                        help="directory for hines.json, hines.md and the figures")
    parser.add_argument("--cells", nargs="+", type=int, metavar="N",
                        help=f"batch sizes (default {' '.join(map(str, CELLS))})")
    parser.add_argument("--morphologies", nargs="+", metavar="CATEGORY",
                        choices=[s[0] for s in STAND_INS],
                        help="stand-ins to run (default all six)")
    parser.add_argument("--repeats", type=int, default=15, help="GPU timings per case (median)")
    parser.add_argument("--cpu-repeats", type=int, default=3, help="CPU timings per case (median)")
    parser.add_argument("--no-serial-above", type=int, default=None, metavar="N",
                        help="do not run the serial CPU solver on batches above N cells")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: two cells, 256 and 2560 cells, few repeats, no sweeps")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG figures")
    parser.add_argument("--tiled-only", action="store_true",
                        help="only the bandwidth table (medium-high, largest batch) and the tiled "
                             "sweeps (that cell, and 3000 copies of ca1 at nseg=8), written as "
                             "hines_tiled.json/.md")
    parser.add_argument("--multi-gpu-only", action="store_true",
                        help="only the several-GPUs table (medium-high cells, every visible "
                             "device against one), written as hines_multi_gpu.json/.md")


def run(args: argparse.Namespace) -> int:
    """Run the benchmark, print rows as they finish, write JSON, Markdown and PNGs."""
    from ..solvers import registry

    ok, why = registry.get("gpu").available()
    if not ok:
        print(f"hinesbatch bench hines: error: the GPU backend cannot run here: {why}",
              file=sys.stderr)
        return 1
    import cupy

    from ._gpu_timing import copy_bandwidth, gpu_info
    from ._hines_cases import Runner

    cells = tuple(args.cells or ((256, 2560) if args.quick else CELLS))
    chosen = args.morphologies or (["small-high", FOCUS] if args.quick else [s[0] for s in STAND_INS])
    repeats = 5 if args.quick else args.repeats
    cpu_repeats = 1 if args.quick else args.cpu_repeats
    if min(cells) < 1 or repeats < 1 or cpu_repeats < 1:
        print("hinesbatch bench hines: error: --cells and repeats must be >= 1", file=sys.stderr)
        return 1
    info = gpu_info(cupy)
    print("GPU:", "; ".join(info["gpus"]), flush=True)
    ceiling = copy_bandwidth(cupy)
    print(f"copy bandwidth: {ceiling['TB_per_s']:.3f} TB/s", flush=True)
    runner = Runner(cupy, repeats=repeats, cpu_repeats=cpu_repeats, copy_tbs=ceiling["TB_per_s"],
                    no_serial_above=args.no_serial_above)
    stand_ins = [s for s in STAND_INS if s[0] in chosen]
    if args.multi_gpu_only:
        tables, notes = runner.multi_gpu_tables(cells, focus=FOCUS)
        name = "hines_multi_gpu"
    elif args.tiled_only:
        tables, notes = runner.tiled_tables(cells, focus=FOCUS)
        name = "hines_tiled"
    else:
        tables, notes = runner.all_tables(stand_ins, cells, quick=args.quick, focus=FOCUS)
        name = "hines"
    tables = {"Copy-bandwidth ceiling": [ceiling], **tables}
    machine = machine_info({**info, "multicore_threads": runner.cpu_threads})
    json_path, md_path = write_results(tables, args.out, name, question=QUESTION, notes=notes,
                                       machine=machine)
    print(f"wrote {json_path} and {md_path}")
    if not args.no_plots and not (args.multi_gpu_only or args.tiled_only):
        from ._hines_plots import figures

        for path in figures(tables, Path(args.out)):
            print(f"wrote {path}")
    for note in notes:
        print(note)
    return 0


def stand_in_structure(category: str):
    """(one-cell HinesStructure, sections, file, nseg) of a :data:`STAND_INS` category."""
    from ..discretize import discretize

    entry = next(s for s in STAND_INS if s[0] == category)
    _, name, nseg, _, _ = entry
    path = _find(name)
    with warnings.catch_warnings():  # SWC convention warnings of real files: not our topic
        warnings.simplefilter("ignore", UserWarning)
        geo = discretize(path, nseg=nseg)
    return geo.hines_structure(), geo.n_sections, name, nseg


def _find(name: str) -> Path:
    here = Path(__file__).resolve()
    for root in (Path.cwd(), here.parents[3]):
        p = root / "tests/data/morphologies/real" / name
        if p.is_file():
            return p
    raise FileNotFoundError(f"{name} is not in tests/data/morphologies/real of this directory "
                            "or the source tree; run from the repository")


def cpu_times(batch, d0, rhs0, *, repeats: int, backends=("serial", "multicore"),
              warmup: int | None = None, reduce=statistics.median) -> dict:
    """Wall times [ms] of the CPU backends on NumPy copies of ``d0``, ``rhs0``: ``reduce``
    (the median) of ``repeats`` calls after ``warmup`` untimed ones (default: one up to 2,560
    cells, none above)."""
    from ..solvers.plan import plan

    d, rhs = np.empty_like(d0), np.empty_like(rhs0)

    def restore():
        np.copyto(d, d0)
        np.copyto(rhs, rhs0)

    plans = {b: plan(batch, backend=b) for b in backends}
    runs = {b: (lambda p=p: p.solve(d, rhs, overwrite=True, check_finite=False))
            for b, p in plans.items()}
    if warmup is None:
        warmup = 1 if batch.n_cells <= 2560 else 0
    times = interleaved_times(runs, repeats=repeats, setup=restore, warmup=warmup)
    return {b: 1e3 * reduce(t) for b, t in times.items()}


def wall_ms(fn, *, repeats: int, sync) -> float:
    """Median host wall time [ms] of ``fn(); sync()`` after one warm-up."""
    fn()
    sync()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t)
    return 1e3 * statistics.median(times)
