"""The CPU side of ``bench sim --part gpu``: hinesbatch's multicore engine and NEURON on the
Fig. 2 cell, per core and for the whole machine.

* hinesbatch: ``backend="multicore"`` (Numba threads over cells) on a batch of Fig. 2 cells;
  the median wall time of ``Simulation.run`` after a warm-up run.
* NEURON: one process per core (``spawn``), each building one Fig. 2 cell with its own
  amplitude (Import3d, nseg 4, hh, the clamp; :class:`~.neuron_models.HHModel`); the
  processes start every timed ``psolve`` together (a barrier), so that they share the
  machine as a batch would. The machine's time of a round is its slowest process's.

Throughput is counted in hinesbatch's nodes for both (NEURON's segments plus the zero-area
section ends), as in the CPU part of ``bench sim``.
"""
from __future__ import annotations

import os
import statistics
import time
from queue import Empty

from . import _sim_gpu_work as work

__all__ = ["engine_rows", "neuron_rows", "usable_cores"]

#: Seconds to wait for each NEURON process's result.
RESULT_TIMEOUT = 300


def usable_cores() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _row(tool, rates, cells, workers, nodes, steps, seconds, per_worker_rate):
    machine = cells * nodes * steps / seconds
    return {"tool": tool, "rates": rates, "cells": cells, "cores": workers, "nodes": nodes,
            "steps": steps, "seconds": seconds, "G_comp_steps_per_s": machine / 1e9,
            "M_comp_steps_per_s_per_core": per_worker_rate / 1e6}


def engine_rows(hb, path, *, cells: int, repeats: int, steps: int = work.STEPS) -> list[dict]:
    """hinesbatch ``multicore`` on ``cells`` Fig. 2 cells, exact rates and the table."""
    import numba

    batch = work.fig2_cells(hb, path, work.amplitudes(cells))
    nodes = work.compartments(batch[:1])[0]
    threads = numba.get_num_threads()
    rows = []
    for tables in (False, True):
        sim = hb.Simulation(batch, dt=work.DT, celsius=work.CELSIUS, v_init=work.V_INIT,
                            backend="multicore", tables=tables)
        for i, cell in enumerate(batch):
            sim.record("v", cell=i, location=work.stimulus_location(cell))
        sim.run(work.tstop(steps))  # compiles (or loads from Numba's cache)
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            sim.run(work.tstop(steps))
            times.append(time.perf_counter() - start)
        seconds = statistics.median(times)
        rate = cells * nodes * steps / seconds
        rows.append(_row("hinesbatch multicore", "table" if tables else "exact", cells,
                         threads, nodes, steps, seconds, rate / threads))
    return rows


def _neuron_worker(path, amp, usetable, steps, repeats, barrier, queue):
    """One NEURON process: build the cell, run once untimed, then ``repeats`` timed runs,
    each started with the others; puts (seconds list, error or None) on ``queue``."""
    os.environ.setdefault("NEURON_MODULE_OPTIONS", "-nogui")  # no notes about a display
    try:
        from .neuron_models import HHModel, HHProtocol

        delay, dur = work.STIMULUS
        protocol = HHProtocol(ra=work.RA, cm=work.CM, iclamp=(amp, delay, dur), dt=work.DT,
                              v_init=work.V_INIT, threshold=work.THRESHOLD)
        model = HHModel(path, protocol, usetable=usetable, nseg=work.NCOMP)
        tstop = work.tstop(steps)
        model.run(tstop)
        times = []
        for _ in range(repeats):
            barrier.wait(timeout=600)
            times.append(model.run(tstop))
        model.close()
        queue.put((times, None))
    except Exception as exc:  # reported by the parent, which must not hang on the barrier
        barrier.abort()
        queue.put(([], f"{type(exc).__name__}: {exc}"))


def neuron_rows(path, *, processes: int, repeats: int, nodes: int,
                steps: int = work.STEPS) -> list[dict]:
    """NEURON in ``processes`` processes (one cell each), ``usetable_hh`` 0 and 1.

    Parameters
    ----------
    nodes : int
        hinesbatch's node count of the cell, the unit of the throughput.

    Raises
    ------
    RuntimeError
        A process failed (its error is in the message).
    """
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")  # a fresh NEURON per process
    amps = work.amplitudes(processes)
    rows = []
    for usetable in (False, True):
        barrier, queue = ctx.Barrier(processes), ctx.Queue()
        procs = [ctx.Process(target=_neuron_worker,
                             args=(os.fspath(path), float(a), usetable, steps, repeats,
                                   barrier, queue), daemon=True) for a in amps]
        for p in procs:
            p.start()
        try:
            results = [queue.get(timeout=RESULT_TIMEOUT) for _ in procs]
        except Empty:
            raise RuntimeError(f"a NEURON process gave no result within {RESULT_TIMEOUT} s "
                               "(it crashed or hangs)") from None
        finally:
            for p in procs:
                p.join(timeout=30)
                if p.is_alive():
                    p.terminate()
        errors = [e for _, e in results if e]
        if errors:
            raise RuntimeError(f"NEURON process failed: {errors[0]}")
        rounds = [max(t[r] for t, _ in results) for r in range(repeats)]
        seconds = statistics.median(rounds)
        per_core = statistics.median(nodes * steps / statistics.median(t) for t, _ in results)
        rows.append(_row("NEURON", "table" if usetable else "exact", processes, processes,
                         nodes, steps, seconds, per_core))
    return rows
