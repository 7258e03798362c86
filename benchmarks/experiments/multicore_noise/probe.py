"""Per-call times of the multicore CPU solver on Fig. 14's binary cells (seventeenth session).

`bench multi` measured 256 binary cells of 4 levels at 11.7 ms in three runs (median of 3 or 5)
while 256 cells of 2 and 3 levels took 0.18-0.27 ms, and 2,560 cells of 2 levels 1.1, 3.9 and
9.5 ms in three runs. This prints each call's time with all threads, all but one
and half, before and after a CUDA context exists, with the host's load, to tell the solver
from the host.
Run: PYTHONPATH=src python3 benchmarks/experiments/multicore_noise/probe.py
"""
import os
import subprocess
import time

import numba
import numpy as np

from hinesbatch.bench._multi_cases import binary_cells, values
from hinesbatch.solvers.plan import plan


def per_call(structure, threads, calls=25):
    d0, r0 = values(structure)
    d, r = d0.copy(), r0.copy()
    p = plan(structure, backend="multicore", threads=threads)
    out = []
    for _ in range(calls + 2):
        np.copyto(d, d0)
        np.copyto(r, r0)
        t = time.perf_counter()
        p.solve(d, r, overwrite=True, check_finite=False)
        out.append(1e3 * (time.perf_counter() - t))
    return out[2:]


def report(tag):
    print(f"== {tag}; loadavg {open('/proc/loadavg').read().split()[:3]}", flush=True)
    for depth, n in ((4, 256), (2, 2560), (3, 256), (2, 25600)):
        s = binary_cells(depth, n)
        top = numba.config.NUMBA_NUM_THREADS
        for threads in sorted({top, max(top - 1, 1), max(top // 2, 1)}, reverse=True):
            t = np.array(per_call(s, threads))
            print(f"{n:6d} cells depth {depth} threads {threads:2d}: min {t.min():7.3f} "
                  f"median {np.median(t):7.3f} max {t.max():7.3f} ms; over twice the min: "
                  f"{int((t > 2 * t.min()).sum())}/{t.size}", flush=True)
            if n == 256 and depth == 4:
                print("    every call:", " ".join(f"{x:.2f}" for x in t), flush=True)


def main():
    print("cpus", os.cpu_count(), "affinity", len(os.sched_getaffinity(0)),
          "numba threads", numba.get_num_threads(), flush=True)
    report("no CUDA context")
    print("threading layer", numba.threading_layer())
    subprocess.run("ps -eo pcpu,nlwp,comm --sort=-pcpu | head -8", shell=True)
    try:
        import cupy
        a = cupy.ones(10**8)
        for _ in range(50):
            a *= 1.0000001
        cupy.cuda.Device().synchronize()
        report("after CuPy work (context alive)")
        subprocess.run("ps -eo pcpu,nlwp,comm --sort=-pcpu | head -5", shell=True)
    except ImportError:
        print("no CuPy")


if __name__ == "__main__":
    main()
