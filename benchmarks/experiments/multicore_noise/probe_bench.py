"""The multicore times inside `bench multi`'s process (seventeenth session).

probe.py found the multicore solver steady on its own (256 binary cells of 4 levels: 0.19 ms,
25 calls). This runs `bench multi`'s Fig. 14 cases up to 25,600 cells as the bench does
(`_run_case`: the GPU contenders, then the multicore time), then times the multicore solver
again at once and after a 2 s pause, to see whether the bench's own state slows it.
Run: cd benchmarks/experiments/multicore_noise && PYTHONPATH=../../../src python3 probe_bench.py
"""
import time

import cupy
import numba
import numpy as np

from hinesbatch.bench._multi_cases import cases
from hinesbatch.bench.multi import _run_case
from probe import per_call

props = cupy.cuda.runtime.getDeviceProperties(0)
resident = int(props["multiProcessorCount"]) * 2048
for case in cases(False):
    if case.figure != "fig14" or case.n_cells > 25600:
        continue
    row = _run_case(cupy, case, 20, int(props["l2CacheSize"]), resident)
    structure = case.build()
    now = np.array(per_call(structure, numba.get_num_threads(), calls=15))
    time.sleep(2)
    later = np.array(per_call(structure, numba.get_num_threads(), calls=15))
    print(f"{case.label:24s} bench's multicore {row['multicore']:8.3f} ms | at once: min "
          f"{now.min():.3f} median {np.median(now):.3f} max {now.max():.3f} | after 2 s: min "
          f"{later.min():.3f} median {np.median(later):.3f} max {later.max():.3f}", flush=True)
