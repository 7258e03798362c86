"""Which thread of `bench multi`'s process is busy while it sleeps (seventeenth session).

After the Fig. 14 cases up to 25,600 cells run as the bench runs them, the main thread
sleeps 1 s and every thread's CPU time (/proc/self/task/*/stat) is read before and after:
a thread busy while the process waits would take a core from the multicore solver's 16.
Then the multicore solver is timed with all threads and all but one.
Run: cd benchmarks/experiments/multicore_noise && PYTHONPATH=../../../src python3 probe_threads.py
"""
import os
import time
from pathlib import Path

import cupy
import numba
import numpy as np

from hinesbatch.bench._multi_cases import binary_cells, cases
from hinesbatch.bench.multi import _run_case
from probe import per_call


def cpu_ticks() -> dict:
    out = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            name = (task / "comm").read_text().strip()
        except OSError:
            continue
        out[task.name] = (name, int(fields[11]) + int(fields[12]))  # utime + stime
    return out


def busy_threads(tag: str) -> None:
    hz = os.sysconf("SC_CLK_TCK")
    before = cpu_ticks()
    time.sleep(1.0)
    after = cpu_ticks()
    busy = sorted(((after[t][1] - before[t][1]) / hz, t, after[t][0])
                  for t in after if t in before)
    print(f"== {tag}: {len(after)} threads; CPU seconds in 1 s of sleep, busiest first:",
          ", ".join(f"{name}[{tid}] {s:.2f}" for s, tid, name in busy[::-1][:6]), flush=True)


busy_threads("before any GPU work")
props = cupy.cuda.runtime.getDeviceProperties(0)
resident = int(props["multiProcessorCount"]) * 2048
for case in cases(False):
    if case.figure == "fig14" and case.n_cells <= 25600:
        _run_case(cupy, case, 20, int(props["l2CacheSize"]), resident)
busy_threads("after the bench's Fig. 14 cases")
top = numba.config.NUMBA_NUM_THREADS
for depth, n in ((4, 256), (2, 2560), (2, 25600)):
    s = binary_cells(depth, n)
    for threads in (top, top - 1):
        t = np.array(per_call(s, threads, calls=15))
        print(f"{n:6d} cells depth {depth} threads {threads:2d}: min {t.min():7.3f} median "
              f"{np.median(t):7.3f} max {t.max():7.3f} ms", flush=True)
busy_threads("at the end")
