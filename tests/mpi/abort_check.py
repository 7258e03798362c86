"""One rank fails; every rank must stop with its message instead of waiting forever.

Usage: ``mpiexec -n N python abort_check.py MODE``

MODE ``raise``: the last rank raises ValueError while the others wait in a barrier.
MODE ``bad-spikes``: the last rank passes a NaN spike time to the exchange while the others
wait in it. MODE ``memory``: the last rank raises MemoryError between two exchanges.
MODE ``uncaught``: the last rank raises ValueError outside :func:`abort_on_error`, as a
script written for one process would; :func:`world`'s exception hook must stop the others.
"""
import sys

import numpy as np

from hinesbatch.network.parallel import abort_on_error, exchange_spikes, world


def main(mode):
    comm = world()
    last = comm.rank == comm.size - 1
    if mode == "uncaught":
        if last:
            raise ValueError("bad input on the last rank, not caught")
        comm.barrier()
        print(f"rank {comm.rank} finished", flush=True)
        return
    with abort_on_error(comm):
        if mode == "raise":
            if last:
                raise ValueError("bad input on the last rank")
            comm.barrier()
        elif mode == "bad-spikes":
            times = [np.nan] if last else [1.0]
            exchange_spikes(comm, [comm.rank], times)
        elif mode == "memory":
            exchange_spikes(comm, [comm.rank], [1.0])
            if last:
                raise MemoryError("cannot allocate the cells of the last rank")
            exchange_spikes(comm, [comm.rank], [2.0])
        else:
            raise ValueError(f"unknown mode {mode!r}")
        comm.barrier()
    print(f"rank {comm.rank} finished", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
