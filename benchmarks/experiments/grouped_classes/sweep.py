#!/usr/bin/env python3
"""How should ``grouped`` solve each class? Times on the device, fp64, canonical values.

1. 256000 real cells (bench multi's real mix, 17 classes): ``grouped`` with its defaults and
   with one (batch, lanes) for every class; the mono-morphology reference (tiled on 435920
   copies of morph_ca1_n120, the same total nodes).
2. Every class alone, as a MonoBatch of its cell with as many cells as in the mix: ``tiled``
   with each (batch, lanes) variant and cells per block, to see which suits which cell size.

    PYTHONPATH=src python3 benchmarks/experiments/grouped_classes/sweep.py OUT.json
"""
from __future__ import annotations

import json
import sys
import time

import cupy
import numpy as np

from hinesbatch.bench._gpu_timing import free_memory
from hinesbatch.bench._multi_cases import FOCUS, gpu_ms, real_cells, real_mix, values
from hinesbatch.tree.schedules import cell_shapes
from hinesbatch.tree.structure import MonoBatch

VARIANTS = ((8, 8), (16, 16), (4, 4), (16, 8), (32, 32), (32, 16))


def timed(structure, strategy, options, l2):
    d, rhs = values(structure)
    d0, r0 = cupy.asarray(d), cupy.asarray(rhs)
    try:
        ms, desc, _ = gpu_ms(cupy, structure, d0, r0, strategy, options, repeats=7, l2=l2)
    except ValueError as exc:
        ms, desc = None, str(exc)[:160]
    del d0, r0
    free_memory(cupy)
    return ms, desc


def main(path):
    l2 = int(cupy.cuda.runtime.getDeviceProperties(0)["l2CacheSize"])
    out = {"mix": [], "classes": []}
    t0 = time.time()
    cells = real_cells(1)
    mix = real_mix(cells, 256000, seed=256000)
    mono = MonoBatch(cells[FOCUS], round(mix.n_nodes / cells[FOCUS].n_nodes))
    ms, desc = timed(mono, "tiled", {}, l2)
    out["mono"] = {"cells": mono.n_cells, "ms": ms, "describe": desc}
    print("mono", ms, desc, flush=True)
    for options in [{}] + [{"batch": b, "lanes": l} for b, l in VARIANTS]:
        ms, desc = timed(mix, "grouped", options, l2)
        out["mix"].append({"options": options, "ms": ms, "describe": desc})
        print("mix", options, ms, desc[:200], flush=True)
    classes = cell_shapes(mix, couplings=True)
    for k in range(classes.n_shapes):
        cell = classes.representatives.cell(k)
        batch = MonoBatch(cell, int(classes.counts[k]))
        for b, lanes in VARIANTS:
            for tc in (None, 32 // lanes, 2 * (32 // lanes), 4 * (32 // lanes)):
                opts = {"batch": b, "lanes": lanes, **({"tile_cells": tc} if tc else {})}
                ms, desc = timed(batch, "tiled", opts, l2)
                out["classes"].append({"class": k, "nodes": cell.n_nodes,
                                       "cells": int(classes.counts[k]), "options": opts,
                                       "ms": ms, "describe": desc})
        best = min((r for r in out["classes"] if r["class"] == k and r["ms"]),
                   key=lambda r: r["ms"])
        print("class", k, cell.n_nodes, best["options"], best["ms"], flush=True)
    out["wall_s"] = time.time() - t0
    with open(path, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
