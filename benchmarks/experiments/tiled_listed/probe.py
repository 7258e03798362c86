"""Why `grouped` beats `tiled` on 256 binary cells (seventeenth session).

In four `bench multi` runs (H100), 256 copies of Fig. 14's 2-level binary tree (510 nodes)
took 0.0349-0.0352 ms with `tiled` and 0.0317-0.0320 with `grouped` (one class), 1.09-1.10x,
at the edge of `auto`'s 10 %. On the host both plan the same arrangement (8 lanes, tiles of 8
cells, 1 group, 32 blocks, no prefetch); `grouped` runs the kernel's listed variant (cells
through a member list) on a forked stream. This times, per batch, the two plans as the bench
does, then the same arrangement's kernel launched directly, plain and listed (identity member
list), on the current stream, to tell the kernel variant from the stream fork.
Run: PYTHONPATH=src python3 benchmarks/experiments/tiled_listed/probe.py
"""
import statistics

import cupy
import numpy as np

import hinesbatch
from hinesbatch.bench._gpu_timing import event_times, rotation_sets
from hinesbatch.bench._multi_cases import (FOCUS, binary_cells, gpu_ms, goal_c_cell, real_cells,
                                          values)
from hinesbatch.solvers.gpu import layout_solver
from hinesbatch.solvers.gpu.compile import kernel
from hinesbatch.solvers.gpu.device import device_properties
from hinesbatch.solvers.gpu.strategies import NULL, SharedTiles
from hinesbatch.tree.structure import MonoBatch

L2 = int(cupy.cuda.runtime.getDeviceProperties(0)["l2CacheSize"])
REPEATS = 60


def direct_ms(structure, listed: bool) -> float:
    """The tiled plan's arrangement launched directly, plain or listed."""
    plan = hinesbatch.plan(structure, backend="gpu", strategy="tiled", check_pivots=False)
    strategy = layout_solver(plan)._parts[0].strategy
    t, dev = strategy.tiles, strategy._arrays()
    n, m = structure.n_cells, structure.cell.n_nodes
    if listed:
        t = SharedTiles.plan(structure.cell, [(t.batch, t.lanes)], 1, t.tile_cells, 8,
                             device_properties(0), n, "tiled", t.groups, prefetch=t.prefetch,
                             listed=True)
        members = cupy.arange(n, dtype=cupy.int32)
        starts = cupy.arange(n, dtype=cupy.int64) * m
    else:
        members = starts = NULL
    fn = kernel(0, "hines_tiled.cu", t.template, np.float64)
    grid = t.grid(fn, device_properties(0), n)
    d0, r0 = (cupy.asarray(a) for a in values(structure))
    sets = rotation_sets(2 * d0.nbytes, L2, cap=8)
    work = [(cupy.empty_like(d0), cupy.empty_like(r0)) for _ in range(sets)]
    pivots = (cupy.empty(1, dtype=cupy.uint64), cupy.empty(n, dtype=cupy.float64))

    def restore(i):
        cupy.copyto(work[i][0], d0)
        cupy.copyto(work[i][1], r0)

    def solve(i):
        t.launch(fn, grid, work[i][0], work[i][1], dev, members, starts, n, 0, pivots,
                 cupy.cuda.get_current_stream())

    ms = statistics.median(event_times(cupy, solve, restore, sets=sets, repeats=REPEATS))
    return ms, t.template, grid


batches = {"256 binary depth 2": binary_cells(2, 256),
           "2560 binary depth 2": binary_cells(2, 2560),
           "100 x ca1 (nseg=1)": MonoBatch(real_cells(1)[FOCUS], 100),
           "3000 x ca1 (nseg=8)": MonoBatch(goal_c_cell(), 3000)}
for label, s in batches.items():
    d0, r0 = (cupy.asarray(a) for a in values(s))
    tiled = gpu_ms(cupy, s, d0, r0, "tiled", {}, repeats=REPEATS, l2=L2)[0]
    grouped = gpu_ms(cupy, s, d0, r0, "grouped", {"one_launch": False}, repeats=REPEATS,
                     l2=L2)[0]
    plain, tp, grid = direct_ms(s, False)
    listed, tl, _ = direct_ms(s, True)
    print(f"{label:22s} plans: tiled {tiled:.4f} grouped {grouped:.4f} ms | direct, {grid} "
          f"blocks: plain {plain:.4f} ({tp}) listed {listed:.4f} ({tl})", flush=True)
