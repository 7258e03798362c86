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
import sys
from pathlib import Path

from ._hines_setup import CELLS, FOCUS, STAND_INS
from .common import machine_info, write_results

__all__ = ["configure", "run", "QUESTION", "STAND_INS"]

QUESTION = ("How fast do the papers' GPU layouts (Flat, Full-Interleaved, Block-Interleaved, "
            "Block-Shared) and hinesbatch's tiled kernel solve batches of real cells against the "
            "serial and multicore CPU (Figs. 3-5 of Valero-Lara et al. 2017), and how close does "
            "the fastest come to the device's copy bandwidth?")

def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``bench hines``'s arguments to ``parser``."""
    parser.add_argument("--out", default=".", metavar="DIR",
                        help="directory for hines.json, hines.md and the figures "
                             "(default: the current folder)")
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
