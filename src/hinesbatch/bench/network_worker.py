"""One timed ringtest run of hinesbatch, on every rank of ``mpiexec`` (``bench network``).

Usage: ``[mpiexec -n N] python -m hinesbatch.bench.network_worker OUT.npz NRING NCELL NPT
BRANCH_LO BRANCH_HI COMPART_LO COMPART_HI TSTOP [BACKEND]`` (BACKEND ``serial``, the
default, or ``gpu``: one GPU per rank)

Runs a ringtest of as many rings as ranks (at most NRING) for 1 ms first, so that the
kernels load from Numba's cache, or compile, without building the whole network twice;
then builds the ringtest (:mod:`hinesbatch.network.ringtest`), runs it to TSTOP and rank 0 writes
OUT.npz: ``gids``, ``times`` (the cells' spikes, sorted by (time, gid)), ``run_s`` (the
slowest rank's stepping plus exchange time after ``finitialize``, the part NEURON's
``psolve`` timing covers), ``setup_s``, ``compute_s`` and ``exchange_s`` (per rank),
``wall_s`` (the whole ``run_network`` call on rank 0, building the cells included),
``epochs`` and ``n_ranks``.
"""
import sys
import time

import numpy as np

from ..engine.network_run import run_network
from ..network.parallel import world
from ..network.ringtest import RingtestParameters, ringtest


def main(argv) -> None:
    out = argv[1]
    nring, ncell, npt, b0, b1, c0, c1 = (int(a) for a in argv[2:9])
    tstop = float(argv[9])
    backend = argv[10] if len(argv) > 10 else "serial"
    params = RingtestParameters(nring, ncell, npt, (b0, b1), (c0, c1), tstop)
    comm = world()
    warm = RingtestParameters(min(nring, comm.size), ncell, npt, (b0, b1), (c0, c1), 1.0)
    run_network(ringtest(warm), 1.0, comm=comm, backend=backend)   # kernels loaded
    start = time.perf_counter()
    res = run_network(ringtest(params), tstop, comm=comm, backend=backend)
    wall = time.perf_counter() - start
    if comm.rank == 0:
        gids, times = res.spike_report()
        keep = gids < params.n_cells
        compute, exchange = res.meta["compute_s"], res.meta["exchange_s"]
        np.savez(out, gids=gids[keep], times=times[keep], setup_s=res.meta["setup_s"],
                 compute_s=compute,
                 exchange_s=exchange, run_s=max(c + e for c, e in zip(compute, exchange)),
                 wall_s=wall, epochs=res.meta["epochs"], n_ranks=res.meta["n_ranks"])


if __name__ == "__main__":
    main(sys.argv)
