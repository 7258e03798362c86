#!/usr/bin/env python3
"""The schedule's (l, u) read from global memory instead of shared memory (``hines_tiled_lug``,
``SharedTiles.LU_GLOBAL``), which leaves more shared memory, so more cells per SM, for the
large classes: A/B in one run, fp64, canonical values, median of 7 with L2 rotated.

Cases: the mono reference of goal (a) (ca1 x 435920), the bench's 256000 real cells with
``grouped`` (one launch per class), and each class of at least 341 nodes alone (a MonoBatch of
as many copies as in the mix) with ``tiled``'s default width and with each of WIDTHS; every
case with (l, u) in shared memory and in global memory, alternating. The mix's solutions of
the two must be bitwise equal (same arithmetic).

Needs ``lu_global.patch`` applied (``git apply``): the committed code has no
``hines_tiled_lug`` and no ``SharedTiles.LU_GLOBAL``.

    PYTHONPATH=src python3 benchmarks/experiments/class_rates/lug.py OUT.json
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import cupy
import numpy as np

import hinesbatch
from hinesbatch.bench._multi_cases import FOCUS, real_cells, real_mix, values
from hinesbatch.solvers.gpu.strategies import SharedTiles
from hinesbatch.tree.schedules import cell_shapes
from hinesbatch.tree.structure import MonoBatch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "grouped_classes"))
from sweep import timed  # noqa: E402

WIDTHS = ((16, 16), (32, 32), (64, 32))


def solution(structure, strategy):
    d, rhs = values(structure)
    plan = hinesbatch.plan(structure, backend="gpu", strategy=strategy)
    return plan.solve(cupy.asarray(d), cupy.asarray(rhs)).get()


def main(path: str):
    l2 = int(cupy.cuda.runtime.getDeviceProperties(0)["l2CacheSize"])
    rows = []

    def row(case, structure, strategy, options):
        for lug in (False, True):
            SharedTiles.LU_GLOBAL = lug
            ms, desc = timed(structure, strategy, options, l2)
            rows.append({"case": case, "lu_global": lug, "strategy": strategy,
                         "options": options, "nodes": structure.n_nodes, "ms": ms,
                         "describe": desc})
            shown = (desc[desc.find("sweeps") + 6:][:150] if strategy == "grouped"
                     else desc[desc.find("tiled ("):][:170])
            print(f"{case} {strategy} {options} lu_global={lug}: {ms and round(ms, 4)} ms "
                  f"{ms and round(structure.n_nodes / ms / 1e6, 1)} Gnodes/s {shown}",
                  flush=True)
        SharedTiles.LU_GLOBAL = False

    cells = real_cells(1)
    mix = real_mix(cells, 256000, seed=256000)
    ca1 = cells[FOCUS]
    same = {}
    for lug in (False, True):
        SharedTiles.LU_GLOBAL = lug
        same[lug] = solution(mix, "grouped")
    SharedTiles.LU_GLOBAL = False
    print("mix solutions bitwise equal:", bool(np.array_equal(same[False], same[True])), flush=True)
    row("mono reference", MonoBatch(ca1, round(mix.n_nodes / ca1.n_nodes)), "tiled", {})
    row("256000 real cells", mix, "grouped", {})
    classes = cell_shapes(mix, couplings=True)
    for k in np.argsort(-np.asarray([classes.representatives.cell(j).n_nodes
                                     for j in range(classes.n_shapes)])):
        cell = classes.representatives.cell(int(k))
        if cell.n_nodes < 341:
            continue
        batch = MonoBatch(cell, int(classes.counts[k]))
        for options in [{}] + [{"batch": b, "lanes": lanes} for b, lanes in WIDTHS]:
            row(f"class {cell.n_nodes} nodes", batch, "tiled", options)
    Path(path).write_text(json.dumps({"rows": rows, "same_x": bool(np.array_equal(
        same[False], same[True]))}, indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
