#!/usr/bin/env python3
"""With the persistent grid and staggered start: do several groups now pay off for cells
whose default is one group? ``tiled`` on ca1 (313 nodes) x 256000 and x 435920, and on the
mid-size classes of bench multi's 256000-cell mix (300-450 nodes), groups 1-6 (fp64,
canonical values, median of 7, L2 rotated). argv: OUT.json"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import cupy

from hinesbatch.bench._multi_cases import FOCUS, real_cells, real_mix
from hinesbatch.tree.schedules import cell_shapes
from hinesbatch.tree.structure import MonoBatch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "grouped_classes"))
from sweep import timed  # noqa: E402

l2 = int(cupy.cuda.runtime.getDeviceProperties(0)["l2CacheSize"])
cells = real_cells(1)
mix = real_mix(cells, 256000, seed=256000)
classes = cell_shapes(mix, couplings=True)
cases = {f"ca1 x {n}": MonoBatch(cells[FOCUS], n) for n in (256000, 435920)}
for k in range(classes.n_shapes):
    cell = classes.representatives.cell(k)
    if 300 <= cell.n_nodes <= 450:
        cases[f"{cell.n_nodes} nodes x {int(classes.counts[k])}"] = MonoBatch(
            cell, int(classes.counts[k]))
rows = []
for name, s in cases.items():
    for g in (None, 1, 2, 3, 4, 5, 6):
        ms, desc = timed(s, "tiled", {} if g is None else {"groups": g}, l2)
        rows.append({"case": name, "groups": g, "ms": ms, "describe": desc})
        print(name, g, ms and round(ms, 4), desc[30:120], flush=True)
json.dump(rows, open(sys.argv[1], "w"), indent=1)
