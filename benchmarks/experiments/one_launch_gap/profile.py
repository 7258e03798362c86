#!/usr/bin/env python3
"""Two solves (the first a warm-up) of COUNT copies of one repository morphology with
STRATEGY (``tiled``, ``grouped`` or ``one_launch``: ``grouped`` with ``one_launch=True``), for
Nsight Compute: ``profile.py FILE.swc COUNT STRATEGY`` (dev1.sh has the ncu command)."""
from __future__ import annotations

import sys

import cupy
import numpy as np

import hinesbatch
from hinesbatch.bench._multi_cases import real_cells, values
from hinesbatch.solvers.gpu import layout_solver
from hinesbatch.tree.structure import MonoBatch

cell = real_cells(1)[sys.argv[1]]
batch = MonoBatch(cell, int(sys.argv[2]))
strategy, options = sys.argv[3], {}
if strategy == "one_launch":
    strategy, options = "grouped", {"one_launch": True}
impl = layout_solver(hinesbatch.plan(batch, backend="gpu", strategy=strategy,
                                     check_pivots=False, **options), np.float64)
print(impl.describe(), flush=True)
d, rhs = values(batch)
for _ in range(2):
    dd, rr = cupy.asarray(d), cupy.asarray(rhs)
    impl.solve(dd, rr)
cupy.cuda.Device().synchronize()
