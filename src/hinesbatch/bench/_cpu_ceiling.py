"""What a machine's cores give a compute-bound loop: the reference for multicore scaling.

A chain of ``exp`` calls touches no memory, so k threads running k such chains in a
``prange`` take as long as one chain only where k cores keep the clock of one and share
nothing. Virtual machines' cores often do neither (a lower clock with more cores busy,
logical CPUs of shared physical cores), which no program running on them can win back.
"""
from __future__ import annotations

import time

import numpy as np
from numba import get_num_threads, njit, prange, set_num_threads

__all__ = ["compute_scaling"]

#: exp() calls per thread: about 0.1 s on a current core
WORK = 5_000_000


@njit(cache=True)
def _chain(n):
    x = 0.5
    for _ in range(n):
        x = np.exp(-x) + 0.1
    return x


@njit(cache=True, parallel=True)
def _chains(n, k):
    out = np.empty(k)
    for i in prange(k):
        out[i] = _chain(n)
    return out


def compute_scaling(threads: int, *, repeats: int = 3, work: int = WORK) -> float:
    """Speedup of ``threads`` threads over one on ``threads`` equal compute-bound chains
    (``threads`` for perfect cores): the one-thread time of one chain times ``threads``
    over the time of all chains at once, best of ``repeats`` each."""
    before = get_num_threads()
    try:
        _chains(1000, 1)
        times = {}
        for k in (1, threads):
            set_num_threads(k)
            best = float("inf")
            for _ in range(repeats):
                start = time.perf_counter()
                _chains(work, k)
                best = min(best, time.perf_counter() - start)
            times[k] = best
    finally:
        set_num_threads(before)
    return threads * times[1] / times[threads]
