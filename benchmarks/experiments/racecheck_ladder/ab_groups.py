#!/usr/bin/env python3
"""A/B of ``tiled``'s groups rule on Fig. 14's 2560 binary cells (run 4): the arrangement
before the rule's round count (8 cells per tile, 2 groups: 160 blocks of one per SM, two
rounds) against the default after it (3 groups: 107 blocks, one round), and ``grouped`` in
one launch, in the same process, twice, median of 15 each (fp64, canonical values)."""
import warnings

import cupy

from hinesbatch.bench._multi_cases import binary_cells, gpu_ms, values

warnings.simplefilter("ignore")
props = cupy.cuda.runtime.getDeviceProperties(0)
for depth in (2, 3, 4):
    s = binary_cells(depth, 2560)
    d, rhs = (cupy.asarray(a) for a in values(s))
    for rep in range(2):
        for label, strategy, opts in (
                ("groups 2 (before)", "tiled", {"tile_cells": 8, "groups": 2}),
                ("default (after)", "tiled", {}),
                ("grouped one launch", "grouped", {"one_launch": True})):
            ms, desc, _ = gpu_ms(cupy, s, d, rhs, strategy, opts, repeats=15,
                                 l2=int(props["l2CacheSize"]))
            print(f"depth {depth} run {rep}: {label:20s} {ms:.4f} ms", flush=True)
            if rep == 0 and label.startswith("default"):
                print("   ", desc[-160:], flush=True)
