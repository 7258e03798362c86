"""The random network of ``random_network.py`` on the ranks of ``mpiexec``; rank 0 saves it.

Usage: ``mpiexec -n N python random_network_check.py SEED GRID TSTOP OUT.npz``

GRID 1 puts every delay on the dt grid (many events at one time), 0 draws them from a
continuum. ``NetworkResults.save`` writes every spike and the traces gathered on rank 0
(``hinesbatch.load_results`` reads them); the other ranks write nothing.
"""
import sys

import random_network

from hinesbatch import run_network


def main(argv):
    seed, grid, tstop, out = int(argv[1]), argv[2] == "1", float(argv[3]), argv[4]
    res = run_network(random_network.build(seed, grid=grid), tstop)
    res.save(out)


if __name__ == "__main__":
    main(sys.argv)
