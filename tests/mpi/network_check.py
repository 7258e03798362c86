"""Run the toy network of ``toy_network.py`` over the ranks of ``mpiexec``; save its spikes.

Usage: ``mpiexec -n N python network_check.py SEED TSTOP OUT.npz [SHORTEST]``

``SHORTEST``: the smallest delay in steps of dt (default 40, 1 ms); see ``toy_network.build``.

Every rank gets every spike from the exchange; the script checks that all ranks hold the
same arrays, bit for bit, and rank 0 writes them to ``OUT.npz`` (``gids``, ``times``,
``ranks``).
"""
import sys

import numpy as np
import toy_network

from hinesbatch.network.parallel import abort_on_error, world


def main(argv):
    seed, tstop, out = int(argv[1]), float(argv[2]), argv[3]
    shortest = int(argv[4]) if len(argv) > 4 else 40
    comm = world()
    with abort_on_error(comm):
        net = toy_network.build(seed, shortest=shortest)
        gids, times = toy_network.run_epochs(net, comm, tstop)
        digests = comm.allgather((gids.tobytes(), times.tobytes()))
        if any(d != digests[0] for d in digests):
            raise AssertionError("the ranks hold different spikes")
        if comm.rank == 0:
            np.savez(out, gids=gids, times=times, ranks=comm.size)


if __name__ == "__main__":
    main(sys.argv)
