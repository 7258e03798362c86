"""Cells to ranks by compartments (greedy LPT), and the network checks before a run."""
import math

import numpy as np
import pytest

from hinesbatch.network import NetConTable
from hinesbatch.network.distribution import (
    NetworkCheckError,
    check_network,
    distribute,
)


def _lpt_reference(counts, n_ranks):
    """The rule written out plainly: largest first (ties by gid), to the least loaded rank."""
    loads = [0] * n_ranks
    rank_of = [None] * len(counts)
    for gid in sorted(range(len(counts)), key=lambda g: (-counts[g], g)):
        rank = min(range(n_ranks), key=lambda r: (loads[r], r))
        rank_of[gid] = rank
        loads[rank] += counts[gid]
    return rank_of


def test_worked_example_of_the_module():
    dist = distribute([5, 3, 3, 8, 1], 2)
    assert dist.rank_of_cell.tolist() == [1, 1, 0, 0, 1]
    assert dist.loads.tolist() == [11, 9]
    assert dist.local_cells(0).tolist() == [2, 3]
    assert dist.local_cells(1).tolist() == [0, 1, 4]
    assert np.asarray(dist).tolist() == [1, 1, 0, 0, 1]


@pytest.mark.parametrize("n_ranks", [1, 2, 3, 4, 7, 64])
def test_balance_bound_every_cell_once_and_the_rule(seed, n_ranks):
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 500, size=int(rng.integers(1, 300)))
    counts[rng.integers(0, counts.size, size=counts.size // 3)] = 17  # many ties
    dist = distribute(counts, n_ranks)
    assert dist.rank_of_cell.dtype == np.int64 and dist.n_ranks == n_ranks
    # every cell exactly once
    owned = np.concatenate([dist.local_cells(r) for r in range(n_ranks)])
    assert np.array_equal(np.sort(owned), np.arange(counts.size))
    # loads add up, and the LPT bound holds
    assert dist.loads.sum() == counts.sum()
    for r in range(n_ranks):
        assert dist.loads[r] == counts[dist.local_cells(r)].sum()
    assert dist.loads.max() <= counts.sum() / n_ranks + counts.max()
    assert dist.rank_of_cell.tolist() == _lpt_reference(counts.tolist(), n_ranks)


def test_deterministic_and_independent_of_the_counts_dtype(seed):
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 50, size=200)
    a = distribute(counts, 4).rank_of_cell
    b = distribute(counts.astype(np.int32), 4).rank_of_cell
    c = distribute(counts.tolist(), 4).rank_of_cell
    assert a.tobytes() == b.tobytes() == c.tobytes()


def test_equal_cells_go_round_robin_by_gid():
    assert distribute([10] * 7, 3).rank_of_cell.tolist() == [0, 1, 2, 0, 1, 2, 0]


def test_more_ranks_than_cells_and_no_cells():
    dist = distribute([4, 9], 4)
    assert dist.rank_of_cell.tolist() == [1, 0]
    assert dist.local_cells(3).size == 0 and dist.loads.tolist() == [9, 4, 0, 0]
    empty = distribute(np.zeros(0, dtype=np.int64), 2)
    assert empty.rank_of_cell.size == 0 and empty.loads.tolist() == [0, 0]


@pytest.mark.parametrize("counts, n_ranks, error, match", [
    ([[1, 2]], 2, ValueError, "must be 1-D"),
    ([1.5, 2.0], 2, TypeError, "must be integers"),
    ([3, -1], 2, ValueError, "cell 1 has -1 compartments"),
    ([3], 0, ValueError, "n_ranks must be an integer >= 1, got 0"),
    ([3], 2.0, ValueError, "n_ranks must be an integer >= 1"),
])
def test_distribute_refuses_bad_input(counts, n_ranks, error, match):
    with pytest.raises(error, match=match):
        distribute(counts, n_ranks)


def test_local_cells_refuses_an_unknown_rank():
    with pytest.raises(ValueError, match=r"rank must be in 0 .. 1, got 2"):
        distribute([1, 2], 2).local_cells(2)


# --- check_network ----------------------------------------------------------------------------

def _connections(**overrides):
    c = {"source": np.array([0, 1, 5]), "target": np.array([1, 0, 1]),
         "delay": np.array([1.0, 0.025, 2.0])}
    c.update(overrides)
    return c


def test_check_network_accepts_a_good_network():
    assert check_network([0, 1, 5], _connections(), 0.025) is None
    table = NetConTable()
    table.add(5, 17, delay=0.1)  # a NetConTable's targets are synapse ids: not checked
    assert check_network([0, 1, 5], table, 0.1) is None


@pytest.mark.parametrize("gids, connections, dt, match", [
    ([0, 1], _connections(), 0.025,
     r"connection 2: source gid 5 is not a gid of the network \(2 gids; 1 connection"),
    ([0, 1, 5], _connections(target=np.array([1, 0, 7])), 0.025,
     r"connection 2: target gid 7 is not a gid"),
    ([0, 1, 5], _connections(), 0.05,
     r"connection 1: delay 0.025 ms is below dt = 0.05 ms \(1 connection"),
    ([0, 1, 5], _connections(delay=np.array([1.0, math.nan, 2.0])), 0.025,
     r"connection 1: delay nan ms is below dt"),
    ([0, 1, 1, 5], _connections(), 0.025, "gid 1 appears 2 times"),
    ([0, -1, 5], _connections(), 0.025, "gid -1 is negative"),
])
def test_check_network_refuses_before_the_run(gids, connections, dt, match):
    with pytest.raises(NetworkCheckError, match=match):
        check_network(gids, connections, dt)
    assert issubclass(NetworkCheckError, ValueError)


def test_check_network_refuses_a_netcon_table_with_short_delay_or_unknown_source():
    table = NetConTable()
    table.add(0, 0, delay=1.0)
    table.add(3, 0, delay=1.0)
    with pytest.raises(NetworkCheckError, match="connection 1: source gid 3"):
        check_network([0, 1], table, 0.025)
    table.set_delay(1, 0.0)
    with pytest.raises(NetworkCheckError, match="connection 1: delay 0.0 ms is below dt"):
        check_network([0, 1, 3], table, 0.025)


@pytest.mark.parametrize("connections, error, match", [
    ([(0, 1, 1.0)], TypeError, "must be a NetConTable or a mapping"),
    ({"source": [0]}, ValueError, "connections lack 'delay'"),
    ({"source": [0.0], "delay": [1.0]}, TypeError, r"connections\['source'\] must be integer"),
    ({"source": [0, 1], "delay": [1.0]}, ValueError, "1-D of one length"),
])
def test_check_network_refuses_malformed_connections(connections, error, match):
    with pytest.raises(error, match=match):
        check_network([0, 1], connections, 0.025)


def test_check_network_refuses_bad_dt_and_gids():
    with pytest.raises(ValueError, match="dt must be > 0 ms"):
        check_network([0], _connections(), 0.0)
    with pytest.raises(TypeError, match="gids must be a 1-D array of integers"):
        check_network([0.5], _connections(), 0.025)
