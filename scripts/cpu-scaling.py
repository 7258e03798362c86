#!/usr/bin/env python3
"""How a CPU's cores scale, beside the multicore engine's scaling on the same machine.

    python3 scripts/cpu-scaling.py [--cells 320] [--tstop 10] [--threads 1 2 4 8 16]
        [--out rows.json]

A virtual machine's ``lscpu`` may show every logical CPU as a core of its own. Three
measurements, in one process tree, tell what the cores give:

* **Siblings**: two compute-bound Numba loops without memory traffic, a latency-bound
  chain of ``exp`` and throughput-bound multiply-add sweeps over 4 KiB, each pinned to
  CPU 0 alone, then at the same time as the same loop pinned to CPU j, for every j. Two
  logical CPUs of one physical core slow each other's sweeps down (SMT shares the core's
  units) but hardly the chains, which leave those units idle; two cores slow neither.
  The kernel's ``thread_siblings_list`` is printed beside them.
* **Compute ceiling**: each loop in a ``prange`` over threads, each thread doing the
  work of the one-thread run: the time on 1 thread over the time on k threads, per k, is
  what k threads can give at best (clock boost, SMT, the host's other work included).
* **Engine**: ``--cells`` copies of c91662.swc with hh (``bench sim``'s protocol) for
  ``--tstop`` ms, ``serial`` and ``multicore`` at each thread count, the stepping
  (``advance_epoch``) timed apart from the whole ``run``; then the same cells split over
  k processes running ``serial`` at once (no threads), the slowest against one process.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from numba import set_num_threads

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from hinesbatch.bench._cpu_ceiling import (
    LATENCY,
    THROUGHPUT,
    _chain,
    _sweeps,
    copies,
)

ROOT = Path(__file__).resolve().parents[1]
SWC = ROOT / "tests" / "data" / "morphologies" / "real" / "c91662.swc"
WORK = 20_000_000
#: sweeps of the multiply-add loop: about as long as WORK exp calls
SWEEPS = 12_000_000
LOOPS = {"latency": (_chain, WORK), "throughput": (_sweeps, SWEEPS)}


def _pinned(cpu, kind, barrier, queue):
    os.sched_setaffinity(0, {cpu})
    loop, work = LOOPS[kind]
    loop(10)
    barrier.wait()
    t = time.perf_counter()
    loop(work)
    queue.put((cpu, time.perf_counter() - t))


def _together(cpus, kind="latency"):
    ctx = mp.get_context("fork")
    barrier, queue = ctx.Barrier(len(cpus)), ctx.Queue()
    procs = [ctx.Process(target=_pinned, args=(c, kind, barrier, queue)) for c in cpus]
    for p in procs:
        p.start()
    times = dict(queue.get() for _ in procs)
    for p in procs:
        p.join()
    return times


def siblings(kind):
    """Pairs (cpu 0, cpu j) running ``kind``'s loop at once, against cpu 0 alone. A
    latency-bound chain leaves a core's units mostly idle, so two logical CPUs of one core
    barely slow it; the throughput-bound sweeps share those units and show them."""
    cpus = sorted(os.sched_getaffinity(0))
    alone = min(_together([cpus[0]], kind)[cpus[0]] for _ in range(3))
    rows = []
    for j in cpus[1:]:
        both = _together([cpus[0], j], kind)
        rows.append({"cpu": j, "slowdown_cpu0": both[cpus[0]] / alone,
                     "slowdown_cpuj": both[j] / alone})
        print(f"{kind}: cpu0 with cpu{j}: {both[cpus[0]] / alone:.2f}x, "
              f"{both[j] / alone:.2f}x", flush=True)
    return {"alone_s": alone, "pairs": rows}


def topology():
    """What the kernel says of the logical CPUs' cores (a VM may not say the truth)."""
    out = {}
    for cpu in sorted(os.sched_getaffinity(0)):
        path = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list")
        out[cpu] = path.read_text().strip() if path.exists() else None
    return out


def ceiling(threads, kind):
    loop, work = {"latency": (LATENCY, WORK // 4), "throughput": (THROUGHPUT, SWEEPS // 4)}[kind]
    copies(loop, 10, 1)
    rows = []
    base = None
    for k in threads:
        set_num_threads(k)
        best = min(_timed(lambda: copies(loop, work, k)) for _ in range(3))
        base = base or best * 1
        rows.append({"threads": k, "seconds": best, "speedup": k * base / best,
                     "efficiency": base / best})
        print(f"{kind} ceiling, {k} threads: {k * base / best:.2f}x ({base / best:.2f} a thread)",
              flush=True)
    return rows


def _timed(f):
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def engine(cells, tstop, threads):
    import numba

    import hinesbatch as hb
    from hinesbatch.bench import sim as bs
    from hinesbatch.engine.simulation import Simulation

    stepping = []
    original = Simulation._epoch

    def timed_epoch(self, *a, **k):
        t = time.perf_counter()
        r = original(self, *a, **k)
        stepping.append(time.perf_counter() - t)
        return r

    Simulation._epoch = timed_epoch
    rows = []
    for backend, k in [("serial", 1)] + [("multicore", k) for k in threads]:
        numba.set_num_threads(max(threads))
        best = None
        for r in range(3):   # round 0 warms up
            sim, _, _ = bs._simulation(hb, SWC, n_cells=cells, backend=backend, tables=True)
            if backend == "multicore":
                sim.threads = k
            stepping.clear()
            whole = _timed(lambda: sim.run(tstop))
            if r and (best is None or whole < best[0]):
                best = (whole, sum(stepping))
        rows.append({"backend": backend, "threads": k, "run_s": best[0], "stepping_s": best[1]})
        print(f"engine {backend} {k} threads: run {best[0]:.3f} s, stepping {best[1]:.3f} s",
              flush=True)
    serial = rows[0]
    for row in rows[1:]:
        row["run_efficiency"] = serial["run_s"] / row["run_s"] / row["threads"]
        row["stepping_efficiency"] = serial["stepping_s"] / row["stepping_s"] / row["threads"]
    return rows


def _serial_part(cells, tstop, barrier, queue):
    import hinesbatch as hb
    from hinesbatch.bench import sim as bs

    sim, _, _ = bs._simulation(hb, SWC, n_cells=cells, backend="serial", tables=True)
    sim.run(0.1)      # kernels loaded
    sim, _, _ = bs._simulation(hb, SWC, n_cells=cells, backend="serial", tables=True)
    barrier.wait()
    queue.put(_timed(lambda: sim.run(tstop)))


def processes(cells, tstop, counts):
    """The same work split over k processes, each a ``serial`` simulation of its share of
    the cells, all started together: what the cores give the engine's own loops without
    threads. The slowest process's run against one process running all cells."""
    ctx = mp.get_context("spawn")
    rows, one = [], None
    for k in [1] + [c for c in counts if c > 1]:
        barrier, queue = ctx.Barrier(k), ctx.Queue()
        procs = [ctx.Process(target=_serial_part, args=(cells // k, tstop, barrier, queue))
                 for _ in range(k)]
        for p in procs:
            p.start()
        slowest = max(queue.get() for _ in procs)
        for p in procs:
            p.join()
        one = one or slowest
        rows.append({"processes": k, "run_s": slowest,
                     "efficiency": one * (cells // k) / cells / slowest})
        print(f"engine in {k} processes: slowest run {slowest:.3f} s, "
              f"efficiency {rows[-1]['efficiency']:.2f}", flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=320)
    parser.add_argument("--tstop", type=float, default=10.0)
    parser.add_argument("--threads", type=int, nargs="+", default=None)
    parser.add_argument("--no-siblings", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    n = len(os.sched_getaffinity(0))
    threads = args.threads or sorted({1, 2, 4, n // 2, n} - {0})
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    print(lscpu, flush=True)
    print("thread siblings:", topology(), flush=True)
    result = {"machine": {"cpu": platform.processor(), "logical_cpus": n, "lscpu": lscpu,
                          "thread_siblings": topology()},
              "siblings": None if args.no_siblings else {k: siblings(k) for k in LOOPS},
              "ceiling": {k: ceiling(threads, k) for k in LOOPS},
              "engine": engine(args.cells, args.tstop, threads),
              "processes": processes(args.cells, args.tstop, threads)}
    for row in result["engine"][1:]:
        c = {k: next(r for r in rows if r["threads"] == row["threads"])["efficiency"]
             for k, rows in result["ceiling"].items()}
        print(f"{row['threads']:3d} threads: stepping efficiency {row['stepping_efficiency']:.2f}, "
              f"run {row['run_efficiency']:.2f}, ceiling latency {c['latency']:.2f} "
              f"throughput {c['throughput']:.2f}")
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
