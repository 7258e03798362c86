#!/usr/bin/env python3
"""Several tiles per block (``groups``) for ``hines_tiled_mono``: times on the device, fp64,
canonical values.

A block of G groups stages the schedule once and each group solves its own tiles with its
own barrier. This times, with the code on ``PYTHONPATH``:

1. ``tiled`` on 256000 and 435920 copies of morph_ca1_n120 (313 nodes: ``bench hines``'s
   bandwidth case and goal (a)'s mono reference), and ``grouped`` on bench multi's 256000
   real cells (17 classes);
2. every class of that mix alone, as a MonoBatch of its cell with as many copies, at the
   width rule's (batch, lanes), with several (tile_cells, groups).

``base`` runs only the defaults (for the code before groups existed, on its own
``PYTHONPATH``), so that the two runs compare on one machine:

    PYTHONPATH=src python3 benchmarks/experiments/tile_groups/sweep.py OUT.json
    PYTHONPATH=OLD/src python3 benchmarks/experiments/tile_groups/sweep.py BASE.json base
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import cupy

from hinesbatch.bench._multi_cases import FOCUS, real_cells, real_mix
from hinesbatch.tree.schedules import cell_shapes
from hinesbatch.tree.structure import MonoBatch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "grouped_classes"))
from sweep import timed  # noqa: E402  (grouped_classes' timing: median of 7, L2 rotated)


def configs(granule: int, base: bool) -> list[dict]:
    if base:
        return [{}]
    out = [{}] + [{"groups": g} for g in (1, 2, 3, 4, 6, 8)]
    out += [{"tile_cells": granule, "groups": g} for g in (1, 2, 4, 6, 8, 12)]
    return out


def main(path: str, base: bool):
    from hinesbatch.solvers.gpu.strategies import SharedTiles

    l2 = int(cupy.cuda.runtime.getDeviceProperties(0)["l2CacheSize"])
    out = {"base": base, "rows": []}
    t0 = time.time()

    def record(case, structure, strategy, options, **extra):
        ms, desc = timed(structure, strategy, options, l2)
        out["rows"].append({"case": case, "strategy": strategy, "options": options, "ms": ms,
                            "describe": desc, **extra})
        print(case, options, ms, desc[:160], flush=True)

    cells = real_cells(1)
    mix = real_mix(cells, 256000, seed=256000)
    ca1 = cells[FOCUS]
    for n in (256000, round(mix.n_nodes / ca1.n_nodes)):
        for options in configs(4, base):
            record(f"ca1 x {n}", MonoBatch(ca1, n), "tiled", options)
    for options in [{}] + ([] if base else [{"groups": 1}]):
        record("mix 256000", mix, "grouped", options)
    classes = cell_shapes(mix, couplings=True)
    for k in range(classes.n_shapes):
        cell = classes.representatives.cell(k)
        lanes = SharedTiles.preferred(cell)[0][1]
        batch = MonoBatch(cell, int(classes.counts[k]))
        for options in configs(32 // lanes, base):
            record(f"class {k}", batch, "tiled", options, nodes=cell.n_nodes,
                   cells=int(classes.counts[k]), lanes=lanes)
    out["wall_s"] = time.time() - t0
    with open(path, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], len(sys.argv) > 2 and sys.argv[2] == "base")
