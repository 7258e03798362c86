#!/usr/bin/env python3
"""Data for the default number of groups, with the persistent grid and staggered start:
``tiled`` with groups 1..15 on cells from 59 to 1681 nodes and batches from 3000 to 256000
(fp64, canonical values, median of 7, L2 rotated; ``describe`` gives each block's shared
memory and threads, from which the tiles an SM holds follow). argv: OUT.json"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import cupy

from hinesbatch.bench._multi_cases import (FOCUS, binary_cells, goal_c_cell, random_batch,
                                           real_cells, real_mix)
from hinesbatch.tree.schedules import cell_shapes
from hinesbatch.tree.structure import MonoBatch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "grouped_classes"))
from sweep import timed  # noqa: E402

l2 = int(cupy.cuda.runtime.getDeviceProperties(0)["l2CacheSize"])
cells = real_cells(1)
mix = real_mix(cells, 256000, seed=256000)
classes = cell_shapes(mix, couplings=True)
by_nodes = {classes.representatives.cell(k).n_nodes: k for k in range(classes.n_shapes)}
cases = {"200 p0.1 mono x 25600": random_batch(25600, 200, 0.1, seed=6, mono=True),
         "200 p0.5 mono x 25600": random_batch(25600, 200, 0.5, seed=6, mono=True),
         "ca1 x 256000": MonoBatch(cells[FOCUS], 256000),
         "ca1 nseg=8 x 3000": MonoBatch(goal_c_cell(), 3000),
         "binary depth 2 x 25600": binary_cells(2, 25600),
         "binary depth 4 x 256000": binary_cells(4, 256000)}
for n in (59, 157, 881, 1681):
    k = by_nodes[n]
    cases[f"{n} nodes x {int(classes.counts[k])}"] = MonoBatch(classes.representatives.cell(k),
                                                              int(classes.counts[k]))


rows = []
for name, s in cases.items():
    for g in (None, 1, 2, 3, 4, 5, 6, 8, 10, 12, 15):
        opts = {} if g is None else {"groups": g}
        ms, desc = timed(s, "tiled", opts, l2)
        rows.append({"case": name, "groups": g, "ms": ms, "describe": desc})
        print(name, g, ms and round(ms, 4), desc[30:110], flush=True)
json.dump(rows, open(sys.argv[1], "w"), indent=1)
