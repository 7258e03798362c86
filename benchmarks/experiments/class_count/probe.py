"""Up to how many classes of cells with one matrix does `grouped` beat `tiled`? (eighteenth
session)

`bench multi`'s "limits" case, 1,280 random cells of 200 nodes drawn from 128 trees (10 copies
of each), took 0.0198 ms with `grouped` in one launch and 0.0368 with `tiled`, `auto`'s pick
past its 64 classes (H100); 1,000 classes of one cell took 9.3 ms against 0.035. This times,
per (classes, copies), `grouped` (its default: one launch), `tiled` and balanced `fine` on
`repeated_shapes` batches (random trees of 200 nodes, p=0.5), fp64, canonical values, as the
bench does. Rows go to OUT (JSON lines) as they come.
Run: PYTHONPATH=src python3 benchmarks/experiments/class_count/probe.py OUT.jsonl
"""
import json
import sys
import time

import cupy

from hinesbatch.bench._multi_cases import gpu_ms, repeated_shapes, values

L2 = int(cupy.cuda.runtime.getDeviceProperties(0)["l2CacheSize"])
STRATEGIES = (("grouped", {}), ("tiled", {}), ("fine", {"reroot": True, "split": "cost"}))
GRID = [(classes, copies) for classes in (64, 128, 192, 256, 384, 512)
        for copies in (1, 4, 16)]


def main(out):
    with open(out, "w") as f:
        for classes, copies in GRID:
            structure = repeated_shapes(classes, copies, 200, 0.5, seed=classes)
            d0, r0 = (cupy.asarray(a) for a in values(structure))
            row = {"classes": classes, "copies": copies, "cells": classes * copies}
            for name, options in STRATEGIES:
                t0 = time.perf_counter()
                try:
                    ms, _, _ = gpu_ms(cupy, structure, d0, r0, name, options, repeats=30, l2=L2)
                except ValueError as e:
                    ms = str(e)[:80]
                row[name] = ms
                row[name + "_wall_s"] = round(time.perf_counter() - t0, 2)
            print(json.dumps(row), flush=True)
            f.write(json.dumps(row) + "\n")
            f.flush()


if __name__ == "__main__":
    main(sys.argv[1])
