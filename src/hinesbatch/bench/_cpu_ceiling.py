"""What a machine's cores give a compute-bound loop: the reference for multicore scaling.

Two loops that touch no memory beyond 4 KiB: a chain of ``exp`` calls (each waits for the
last, so the core's units stay mostly idle) and multiply-add sweeps the compiler
vectorizes (independent operations that keep the floating-point units busy, as the
engine's loops over nodes do). k threads running k copies in a ``prange`` take as long as
one only where k cores keep the clock of one and share nothing. Virtual machines' cores
often do neither (a lower clock with more cores busy, logical CPUs of shared physical
cores), which no program running on them can win back; the sweeps feel both more than
the chain.
"""
from __future__ import annotations

import time

import numpy as np
from numba import get_num_threads, njit, prange, set_num_threads

__all__ = ["compute_scaling"]

#: multiply-add sweeps per thread: about 0.1 s on a current core
WORK = 6_000_000


@njit(cache=True)
def _chain(n):
    x = 0.5
    for _ in range(n):
        x = np.exp(-x) + 0.1
    return x


@njit(cache=True)
def _sweeps(n):
    """``n`` sweeps of a multiply-add over 512 doubles (4 KiB, in L1): independent
    operations the compiler vectorizes, so the core's floating-point units, not one
    chain's latency, set the pace, as in the engine's loops over nodes."""
    x = np.full(512, 0.5)
    for _ in range(n):
        for i in range(x.size):
            x[i] = x[i] * 0.999 + 0.001
    return x[0]


def compute_scaling(threads: int, *, repeats: int = 3, work: int = WORK) -> float:
    """Speedup of ``threads`` threads over one on ``threads`` equal runs of the vectorized
    sweeps (``threads`` for perfect cores): the one-thread time of one run times ``threads``
    over the time of all runs at once, best of ``repeats`` each."""
    before = get_num_threads()
    try:
        copies(THROUGHPUT, 10, 1)
        times = {}
        for k in (1, threads):
            set_num_threads(k)
            best = float("inf")
            for _ in range(repeats):
                start = time.perf_counter()
                copies(THROUGHPUT, work, k)
                best = min(best, time.perf_counter() - start)
            times[k] = best
    finally:
        set_num_threads(before)
    return threads * times[1] / times[threads]


#: :func:`copies`' loops
LATENCY, THROUGHPUT = 0, 1


@njit(cache=True, parallel=True)
def copies(loop, n, k):
    """``k`` copies of a loop at once (a ``prange``): :data:`LATENCY` the chain of ``exp``
    (``n`` calls), :data:`THROUGHPUT` the sweeps (``n`` sweeps)."""
    out = np.empty(k)
    for i in prange(k):
        out[i] = _chain(n) if loop == LATENCY else _sweeps(n)
    return out

