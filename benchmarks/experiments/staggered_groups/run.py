#!/usr/bin/env python3
"""Persistent grid and staggered start for several-group blocks of ``hines_tiled_mono``.

Times (fp64, canonical values, median of 7 with L2 rotated; ``grouped_classes/sweep.timed``)
the cases where the default takes several groups per block (the large classes of bench
multi's 256000 real cells, Fig. 14's binary trees) and a few where it does not, plus the
whole mix, with the code on ``PYTHONPATH``. argv: OUT.json LABEL. ``run.sh`` runs it on the
code before (one tile per group per block, all groups in phase), with the persistent grid
only, and with the persistent grid and the staggered start."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import cupy

from hinesbatch.bench._multi_cases import FOCUS, binary_cells, real_cells, real_mix
from hinesbatch.tree.schedules import cell_shapes
from hinesbatch.tree.structure import MonoBatch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "grouped_classes"))
from sweep import timed  # noqa: E402


def main(path: str, label: str):
    l2 = int(cupy.cuda.runtime.getDeviceProperties(0)["l2CacheSize"])
    cells = real_cells(1)
    mix = real_mix(cells, 256000, seed=256000)
    classes = cell_shapes(mix, couplings=True)
    cases = {"mix 256000 (grouped)": (mix, "grouped"),
             "ca1 x 435920": (MonoBatch(cells[FOCUS], 435920), "tiled")}
    for k in range(classes.n_shapes):  # the classes of 600 nodes or more
        cell = classes.representatives.cell(k)
        if cell.n_nodes >= 600:
            cases[f"{cell.n_nodes} nodes x {int(classes.counts[k])}"] = (
                MonoBatch(cell, int(classes.counts[k])), "tiled")
    for depth in (2, 4):
        for n in (25600, 256000):
            cases[f"binary depth {depth} x {n}"] = (binary_cells(depth, n), "tiled")
    out = {"label": label, "rows": []}
    for name, (structure, strategy) in cases.items():
        ms, desc = timed(structure, strategy, {}, l2)
        out["rows"].append({"case": name, "strategy": strategy, "ms": ms, "describe": desc})
        print(label, name, ms and round(ms, 4), desc[30:170], flush=True)
    with open(path, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
