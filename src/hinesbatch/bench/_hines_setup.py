"""What ``bench hines`` measures: its stand-in cells, batch sizes and contenders, and the
timing helpers its cases share (CPU wall times, host wall times)."""
from __future__ import annotations

import statistics
import time
import warnings
from pathlib import Path

import numpy as np

from .common import interleaved_times

__all__ = ["STAND_INS", "CELLS", "GPU_STRATEGIES", "BANDWIDTH_STRATEGIES", "FACTOR_BS",
           "BS_SWEEP", "TILE_THREADS", "FOCUS", "BYTES_PER_NODE", "stand_in_structure",
           "cpu_times", "wall_ms"]

#: (category, file, nseg, paper's nodes, paper's branches). The high-branch stand-ins use
#: nseg=1 (NEURON's default), which gives 2 nodes per section like the paper's high cells;
#: the low-branch ones are the repository cells with the fewest sections, with nseg chosen to
#: bring the node count near the paper's (about 10 nodes per branch). No repository cell has
#: fewer than 29 sections, so small-low has 29 branches where the paper's has 7.
STAND_INS = (
    ("small-low", "mp_ma_40984_gc2.CNG.swc", 2, 76, 7),
    ("small-high", "ko20x-07.CNG.swc", 1, 76, 29),
    ("medium-low", "Gad1-F-600000.CNG.swc", 9, 305, 30),
    ("medium-high", "morph_ca1_n120.swc", 1, 319, 157),
    ("big-low", "C010398B-P2.CNG.swc", 8, 695, 66),
    ("big-high", "eNGC-j140908b_cell1.swc", 1, 691, 341),
)
CELLS = (256, 2560, 25600, 256000)
#: The Figs. 3-5 contenders on the GPU (strategy, options).
GPU_STRATEGIES = (("flat", {}), ("interleaved", {}), ("block-interleaved", {"bs": 128}),
                  ("block-shared", {}), ("tiled", {}))
#: The bandwidth table's contenders: every strategy above and block-shared keeping only the
#: sweep's factors in shared memory.
BANDWIDTH_STRATEGIES = (*GPU_STRATEGIES, ("block-shared", {"keep": "factors"}),
                        ("block-shared", {"keep": "factors", "lanes": 8}))
#: keep="factors" sweep: cells per block (bs) x every (lanes, nodes per step) instantiated.
FACTOR_BS = (8, 12, 16, 20, 24, 32, 40, 44)
BS_SWEEP = (32, 64, 128, 256, 512)
TILE_THREADS = (64, 128, 256)  # block sizes of the tiled sweep, times every (lanes, V) variant
FOCUS = "medium-high"  # the papers' Fig. 3 and Fig. 4 cell
BYTES_PER_NODE = {("mono", 8): 24, ("mono", 4): 12, ("multi", 8): 44, ("multi", 4): 24}


def stand_in_structure(category: str):
    """(one-cell HinesStructure, sections, file, nseg) of a :data:`STAND_INS` category."""
    from ..discretize import discretize

    entry = next(s for s in STAND_INS if s[0] == category)
    _, name, nseg, _, _ = entry
    path = _find(name)
    with warnings.catch_warnings():  # SWC convention warnings of real files: not our topic
        warnings.simplefilter("ignore", UserWarning)
        geo = discretize(path, nseg=nseg)
    return geo.hines_structure(), geo.n_sections, name, nseg


def _find(name: str) -> Path:
    here = Path(__file__).resolve()
    for root in (Path.cwd(), here.parents[3]):
        p = root / "tests/data/morphologies/real" / name
        if p.is_file():
            return p
    raise FileNotFoundError(f"{name} is not in tests/data/morphologies/real of this directory "
                            "or the source tree; run from the repository")


def cpu_times(batch, d0, rhs0, *, repeats: int, backends=("serial", "multicore"),
              warmup: int | None = None, reduce=statistics.median) -> dict:
    """Wall times [ms] of the CPU backends on NumPy copies of ``d0``, ``rhs0``: ``reduce``
    (the median) of ``repeats`` calls after ``warmup`` untimed ones (default: one up to 2,560
    cells, none above)."""
    from ..solvers.plan import plan

    d, rhs = np.empty_like(d0), np.empty_like(rhs0)

    def restore():
        np.copyto(d, d0)
        np.copyto(rhs, rhs0)

    plans = {b: plan(batch, backend=b) for b in backends}
    runs = {b: (lambda p=p: p.solve(d, rhs, overwrite=True, check_finite=False))
            for b, p in plans.items()}
    if warmup is None:
        warmup = 1 if batch.n_cells <= 2560 else 0
    times = interleaved_times(runs, repeats=repeats, setup=restore, warmup=warmup)
    return {b: 1e3 * reduce(t) for b, t in times.items()}


def wall_ms(fn, *, repeats: int, sync) -> float:
    """Median host wall time [ms] of ``fn(); sync()`` after one warm-up."""
    fn()
    sync()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t)
    return 1e3 * statistics.median(times)
