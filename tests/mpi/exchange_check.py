"""Exchange random spikes over the ranks of ``mpiexec`` and compare with one process.

Usage: ``mpiexec -n N python exchange_check.py SEED``

Every rank draws the same random spikes (many at equal times, some ranks with none), keeps
a random share of them, exchanges its share, and checks that the result equals, bit for
bit, the one-process exchange of all of them. It also checks ``bcast``, ``allgather`` and ``gather``.
Rank 0 prints ``exchange ok on N ranks``.
"""
import sys

import numpy as np

from hinesbatch.network.parallel import (
    MPICommunicator,
    SerialCommunicator,
    abort_on_error,
    exchange_spikes,
    world,
)


def main(argv):
    seed = int(argv[1])
    comm = world()
    with abort_on_error(comm):
        if not isinstance(comm, MPICommunicator) or comm.size < 2:
            raise AssertionError(f"world() gave {comm!r} under mpiexec")
        root = comm.size - 1
        if comm.bcast({"seed": seed} if comm.rank == root else None, root=root) != {"seed": seed}:
            raise AssertionError(f"bcast from rank {root} failed on rank {comm.rank}")
        if comm.allgather(comm.rank * 10) != [10 * r for r in range(comm.size)]:
            raise AssertionError(f"allgather failed on rank {comm.rank}")
        got = comm.gather(comm.rank * 10, root=root)
        if got != ([10 * r for r in range(comm.size)] if comm.rank == root else None):
            raise AssertionError(f"gather to rank {root} failed on rank {comm.rank}")
        rng = np.random.default_rng(seed)
        for epoch in range(20):
            k = int(rng.integers(0, 400)) if epoch else 0  # the first epoch is empty
            gids = rng.integers(0, 1000, size=k)
            times = epoch + rng.integers(0, 40, size=k) * 0.025 + 1e-10  # equal times
            owner = rng.integers(0, comm.size + 1, size=k) % comm.size  # rank 0 gets more
            if epoch == 1:
                owner[:] = comm.size - 1  # every spike on one rank
            mine = owner == comm.rank
            got = exchange_spikes(comm, gids[mine], times[mine])
            want = exchange_spikes(SerialCommunicator(), gids, times)
            for a, b, name in zip(got, want, ("gids", "times")):
                if a.dtype != b.dtype or a.tobytes() != b.tobytes():
                    raise AssertionError(f"epoch {epoch}: exchanged {name} differ from one "
                                         f"process's on rank {comm.rank}")
        if comm.rank == 0:
            print(f"exchange ok on {comm.size} ranks", flush=True)


if __name__ == "__main__":
    main(sys.argv)
