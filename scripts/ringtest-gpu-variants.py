#!/usr/bin/env python3
"""Time variants of the GPU engine's epoch kernel on NEURON's ringtest, in one process.

    python3 scripts/ringtest-gpu-variants.py NRING VARIANT[,VARIANT...] [BMIN-BMAX]

Builds the ringtest (NRING rings of 128 cells, branch BMIN-BMAX (32-64), one compartment a
dendrite, 10 ms) once on the first CUDA device, then runs it once per variant, the list twice
(so that drift hits every variant alike), as one rank would (``run_network``'s epoch
loop, without MPI). A variant is ``base`` followed by ``+``-joined options:

``minb=N``
    ``__launch_bounds__(threads, N)`` instead of the engine's own bound;
``threads=N``
    N threads a cell (``Simulation(block_threads=N)``; below 32, groups of a warp's lanes);
``gblock=N``
    N threads a block of such groups (``runner.GROUP_BLOCK_THREADS`` otherwise);
``nosolve`` / ``nomem``
    the Hines solve (only the diagonal divided out) or the mechanisms' currents and
    states left out: where a step's time goes (the voltages are then wrong);
``sync``
    waits for the device after each launch and reports the seconds of the launches, of
    the host's event collection and of the spike collection apart.

Prints one ``ROW {json}`` per run: compute and exchange seconds as ``bench network``
splits them, the kernel's registers, local (spilled) bytes, threads a block, blocks a
multiprocessor holds, and whether the raster equals the first run's.
"""
import json
import re
import sys
import time

import numpy as np

from hinesbatch.engine.epochs import EpochSimulation
from hinesbatch.engine.gpu import runner as R
from hinesbatch.engine.network_run import _build
from hinesbatch.network.parallel import SerialCommunicator, epoch_steps, exchange_spikes
from hinesbatch.network.ringtest import RingtestParameters, ringtest
from hinesbatch.solvers.gpu.device import blocks_per_sm

TSTOP, DT = 10.0, 0.025


def _source(whole, kw):
    def source(*args, **kwargs):
        text = whole(*args, **kwargs)
        if "nosolve" in kw:
            a, b = text.index("/* 4. elimination"), text.index("/* 6. v, then")
            text = (text[:a] + "for (int i = tid; i < n; i += nt) B[i] = B[i]/Dg[i];\n"
                    "        __syncthreads();\n        " + text[b:])
        if "nomem" in kw:
            text = re.sub(r"\b\w+_cur\(D_[^;]*;", "g = R(0.0); c = R(0.0);", text)
            text = re.sub(r"\b\w+_state\(D_[^;]*;", ";", text)
        if "minb" in kw:
            text = re.sub(r"__launch_bounds__\((\d+)(, \d+)?\)",
                          rf"__launch_bounds__(\1, {kw['minb']})", text)
        return text
    return source


def _timed(name, f, totals, cp):
    def g(self, *args, **kwargs):
        if name == "launch":
            cp.cuda.get_current_stream().synchronize()
        start = time.perf_counter()
        out = f(self, *args, **kwargs)
        if name == "launch":
            cp.cuda.get_current_stream().synchronize()
        totals[name] = totals.get(name, 0.0) + time.perf_counter() - start
        return out
    return g


def main(argv) -> None:
    import cupy as cp

    nring = int(argv[1])
    variants = argv[2].split(",")
    branch = tuple(int(x) for x in argv[3].split("-")) if len(argv) > 3 else (32, 64)
    net = ringtest(RingtestParameters(nring, 128, 8, branch, (1, 1), TSTOP))
    sim = _build(net, list(range(net.cell_gids.size)), [int(g) for g in net.generator_gids],
                 {"dt": DT, "celsius": 6.3, "v_init": -65.0, "tables": True,
                  "backend": "gpu", "threads": None, "devices": [0],
                  "precision": "float64"}, EpochSimulation)
    comm = SerialCommunicator()
    whole = R.kernel_source
    group_block = R.GROUP_BLOCK_THREADS
    plain = {n: getattr(R.GpuRunner, n) for n in ("_launch", "_events", "_collect_spikes")}
    first = None
    for variant in variants + variants:
        kw = dict((x.split("=") + ["1"])[:2] for x in variant.split("+")[1:])
        R.kernel_source = _source(whole, kw)
        sim.block_threads = int(kw["threads"]) if "threads" in kw else None
        R.GROUP_BLOCK_THREADS = int(kw.get("gblock", group_block))
        totals = {}
        for name, f in plain.items():
            setattr(R.GpuRunner, name,
                    _timed(name.strip("_"), f, totals, cp) if "sync" in kw else f)
        got = []

        def trade(gids, times, got=got):
            gids, times = exchange_spikes(comm, gids, times)
            sim.receive(gids, times)
            got.append((gids, times))

        trade(*sim.begin(TSTOP))
        t, compute, exchange, epochs = 0.0, 0.0, 0.0, 0
        while (steps := epoch_steps(t, net.min_delay(), DT, tstop=TSTOP)) > 0:
            start = time.perf_counter()
            out = sim.advance(steps)
            t = sim.t
            compute += time.perf_counter() - start
            start = time.perf_counter()
            trade(*out)
            exchange += time.perf_counter() - start
            epochs += 1
        sim.finish()
        gpu = sim._gpu
        part = gpu.parts[0]
        kernel = gpu.kernels[id(part.device)]
        raster = (np.concatenate([g for g, _ in got]), np.concatenate([x for _, x in got]))
        first = first or raster
        same = all(np.array_equal(a, b) for a, b in zip(raster, first))
        row = {"variant": variant, "compute_s": compute, "exchange_s": exchange,
               "epochs": epochs, "spikes": int(raster[0].size), "same_raster": same,
               "regs": int(kernel.num_regs), "local_bytes": int(kernel.local_size_bytes),
               "block": gpu.block,
               "blocks_per_sm": blocks_per_sm(kernel, gpu.block, part.shared,
                                              part.device.props),
               **{f"{n}_s": v for n, v in totals.items()}}
        print("ROW", json.dumps(row), flush=True)


if __name__ == "__main__":
    main(sys.argv)
