#!/usr/bin/env python3
"""A/B of hines_tiled_mono register bounds (one-group blocks): 200-node random mono cells,
ca1, a 59-node cell, Fig. 14 depth-4 cells. argv: OUT.json LABEL."""
import json, sys
import cupy
from hinesbatch.bench._gpu_timing import free_memory
from hinesbatch.bench._multi_cases import FOCUS, gpu_ms, random_batch, binary_cells, real_cells, values
from hinesbatch.tree.structure import MonoBatch

l2 = int(cupy.cuda.runtime.getDeviceProperties(0)["l2CacheSize"])
cells = real_cells(1)
small = min(cells.values(), key=lambda c: c.n_nodes)
cases = {"p0.5 mono 25600": random_batch(25600, 200, 0.5, seed=6, mono=True),
         "p0.1 mono 25600": random_batch(25600, 200, 0.1, seed=6, mono=True),
         "ca1 256000": MonoBatch(cells[FOCUS], 256000),
         f"{small.n_nodes}-node x 15000": MonoBatch(small, 15000),
         "binary depth 4 x 25600": binary_cells(4, 25600)}
out = {}
for name, s in cases.items():
    d, r = values(s)
    d0, r0 = cupy.asarray(d), cupy.asarray(r)
    ms, desc, _ = gpu_ms(cupy, s, d0, r0, "tiled", {}, repeats=9, l2=l2)
    out[name] = {"ms": ms, "describe": desc}
    print(sys.argv[2], name, round(ms, 4), desc[30:120], flush=True)
    del d0, r0
    free_memory(cupy)
json.dump(out, open(sys.argv[1], "w"), indent=1)
