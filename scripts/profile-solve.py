#!/usr/bin/env python3
"""One solve of a GPU strategy on a shared cell, for a profiler (e.g. Nsight Compute):

    ncu --clock-control none -k regex:hines_tiled_mono --launch-skip 1 --launch-count 1 \\
        --section SpeedOfLight --section WarpStateStats --section Occupancy \\
        --section MemoryWorkloadAnalysis python3 scripts/profile-solve.py tiled medium-high 256000

Arguments: the strategy, a ``bench hines`` stand-in category (or ``large-cell`` for ca1
at nseg=8), the number of cells, then ``key=value`` options of the strategy (ints, or strings such
as ``keep=factors``). Solves twice in the strategy's native layout (the first launch is a
warm-up) and checks the first 16 cells against the serial CPU solver.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import cupy  # noqa: E402

import hinesbatch  # noqa: E402
from hinesbatch.bench._hines_cases import hines_values  # noqa: E402
from hinesbatch.bench._multi_cases import large_cell  # noqa: E402
from hinesbatch.bench._hines_setup import stand_in_structure  # noqa: E402
from hinesbatch.tree.structure import MonoBatch  # noqa: E402


def main(argv) -> int:
    strategy, category, n = argv[0], argv[1], int(argv[2])
    options = {k: int(v) if v.lstrip("-").isdigit() else v
               for k, v in (a.split("=") for a in argv[3:])}
    cell = large_cell() if category == "large-cell" else stand_in_structure(category)[0]
    d, rhs = hines_values(cell, n)
    plan = hinesbatch.plan(MonoBatch(cell, n), backend="gpu", strategy=strategy,
                           check_pivots=False, **options)
    print(plan.describe(), flush=True)
    dd, rr = plan.to_layout(cupy.asarray(d)), plan.to_layout(cupy.asarray(rhs))
    for _ in range(2):  # fresh copies: some strategies write over d as well as rhs
        rn = rr.copy()
        plan.solve_layout(dd.copy(), rn)
    x = plan.from_layout(rn)
    cupy.cuda.Device().synchronize()
    ref = hinesbatch.plan(MonoBatch(cell, 16), backend="serial").solve(d[:16], rhs[:16])
    err = float(np.max(np.abs(x[:16].get() - ref)) / np.max(np.abs(ref)))
    print(f"max relative error, first 16 cells: {err:.2e}")
    return 0 if err < 1e-12 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
