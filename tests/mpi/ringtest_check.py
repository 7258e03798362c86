"""NEURON's ringtest (``hinesbatch.network.ringtest``) on the ranks of ``mpiexec``.

Usage: ``mpiexec -n N python ringtest_check.py MODE OUT [NRING NCELL TSTOP]``

MODE ``run`` (``run-gpu``: with the GPU engine, one device per rank): run the ringtest (ringtest's defaults unless NRING NCELL TSTOP are given) and
write its spikes as one SONATA report to OUT (rank 0 writes), and the loads and ranks to
OUT + ``.json``. MODE ``bad-synapse``: one connection names a synapse the target cell lacks;
only the rank that owns the target finds out, and must stop every rank. MODE
``unknown-gid`` and ``short-delay``: a connection from gid 10**6, or with a delay of
0.01 ms (below dt), refused on every rank before the run.
"""
import json
import sys

from hinesbatch import run_network
from hinesbatch.network.parallel import world
from hinesbatch.network.ringtest import RingtestParameters, ringtest


def main(argv):
    mode, out = argv[1], argv[2]
    sizes = [int(argv[3]), int(argv[4]), float(argv[5])] if len(argv) > 5 else [16, 8, 100.0]
    params = RingtestParameters(nring=sizes[0], ncell=sizes[1], tstop=sizes[2])
    net = ringtest(params)
    if mode == "bad-synapse":
        net.connect(0, params.n_cells - 1, "Exp2Syn[0]", weight=0.01, delay=1.0)
    elif mode == "unknown-gid":
        net.connect(10**6, 0, "ExpSyn[0]", weight=0.01, delay=1.0)
    elif mode == "short-delay":
        net.connect(0, 1, "ExpSyn[0]", weight=0.01, delay=0.01)
    elif mode not in ("run", "run-gpu"):
        raise ValueError(f"unknown mode {mode!r}")
    comm = world()
    res = run_network(net, params.tstop, comm=comm,
                      backend="gpu" if mode == "run-gpu" else "serial")
    res.save_spikes(out)
    if comm.rank == 0:
        with open(out + ".json", "w") as f:
            json.dump({"n_ranks": res.meta["n_ranks"], "loads": res.meta["loads"],
                       "epochs": res.meta["epochs"]}, f)
    print(f"rank {comm.rank} finished", flush=True)


if __name__ == "__main__":
    main(sys.argv)
