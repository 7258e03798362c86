#!/usr/bin/env python3
"""Two ``tiled`` solves (the first a warm-up) of COUNT copies of one repository morphology,
for Nsight Compute: ``profile.py FILE.swc COUNT``; see README.md for the ncu command."""
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
impl = layout_solver(hinesbatch.plan(batch, backend="gpu", strategy="tiled", check_pivots=False),
                     np.float64)
print(impl.describe(), flush=True)
d, rhs = values(batch)
for _ in range(2):
    dd, rr = cupy.asarray(d), cupy.asarray(rhs)
    impl.solve(dd, rr)
cupy.cuda.Device().synchronize()
