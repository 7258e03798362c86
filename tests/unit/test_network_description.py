"""``Network``: gids, generators, connections, the checks before a run and the split."""
import numpy as np
import pytest

from hinesbatch import run_network
from hinesbatch.network import Network, NetworkCheckError
from hinesbatch.network.ringtest import RingtestParameters, ringtest


def small(build_count=None):
    from hinesbatch.model.sections import SectionCell

    built = []

    def build(gid):
        built.append(gid)
        cell = SectionCell(["soma[0]", "dend[0]"], [-1, 0], [10.0, 10.0 * (gid + 1)],
                           [10.0, 1.0], nseg=[1, gid + 1])
        cell.place("ExpSyn", "dend[0](0.5)")
        return cell

    net = Network()
    cells = net.add_cells(4, build=build, compartments=build_count)
    return net, cells, built


def test_gids_are_handed_out_in_order():
    net, cells, _ = small(build_count=5)
    stim = net.net_stim(start=1.0, number=2)
    vec = net.vec_stim([0.5, 2.0])
    more = net.add_cells(2, build=lambda g: None, compartments=[3, 4])
    assert list(cells) == [0, 1, 2, 3] and (stim, vec) == (4, 5) and list(more) == [6, 7]
    assert net.cell_gids.tolist() == [0, 1, 2, 3, 6, 7]
    assert net.generator_gids.tolist() == [4, 5]
    assert [net.kind(g) for g in (0, 4, 5)] == ["cell", "NetStim", "VecStim"]
    assert net.compartments().tolist() == [5, 5, 5, 5, 3, 4]
    assert net.generator(5)[1]["times"].tolist() == [0.5, 2.0]


def test_compartments_are_counted_from_the_cells_when_not_given():
    net, _, built = small()
    assert net.compartments().tolist() == [1 + 2 + 2, 1 + 2 + 3, 1 + 2 + 4, 1 + 2 + 5]
    assert built == [0, 1, 2, 3]


def test_ringtest_compartments_are_its_cells_node_counts():
    net = ringtest(RingtestParameters(nring=2, ncell=4, npt=2, compart=(1, 3)))
    counts = net.compartments()
    assert counts.tolist() == [net.build_cell(g).geometry.n_nodes for g in net.cell_gids]


@pytest.mark.parametrize("change, message", [
    (lambda n: n.connect(0, 99, "ExpSyn[0]", delay=1.0),
     "connection 1: target gid 99 is not a gid of the network"),
    (lambda n: n.connect(42, 1, "ExpSyn[0]", delay=1.0),
     "connection 1: source gid 42 is not a gid of the network"),
    (lambda n: n.connect(0, 1, "ExpSyn[0]", delay=0.01),
     "connection 1: delay 0.01 ms is below dt = 0.025 ms"),
    (lambda n: n.connect(0, n.net_stim(), "ExpSyn[0]", delay=1.0),
     "connection 1: target gid 4 is a NetStim; NetCons end on a cell's synapse"),
])
def test_a_network_that_cannot_run_is_refused_before_the_run(change, message):
    net, _, built = small(build_count=5)
    net.connect(0, 1, "ExpSyn[0]", delay=1.0)
    change(net)
    with pytest.raises(NetworkCheckError, match=message):
        net.check(0.025)
    with pytest.raises(NetworkCheckError, match=message):
        run_network(net, 5.0)
    assert built == []            # refused before any cell was built


def test_bad_arguments_name_what_is_wrong():
    net, _, _ = small(build_count=5)
    with pytest.raises(ValueError, match="connection 0: source must be a gid >= 0"):
        net.connect(-1, 0)
    with pytest.raises(ValueError, match="compartments of gid 4 must be an integer >= 1"):
        net.add_cells(1, build=lambda g: None, compartments=0)
    with pytest.raises(ValueError, match="gid 7 is not a gid of the network"):
        net.spike_source(7)
    with pytest.raises(TypeError, match="add_cells\\(n\\) needs build="):
        net.add_cells(2)
    with pytest.raises(ValueError, match="NetStim noise"):
        net.net_stim(noise=0.5)
    stim = net.net_stim()
    with pytest.raises(ValueError, match="only cells have a threshold source"):
        net.spike_source(stim)


def test_cells_are_split_by_lpt_and_generators_follow_their_first_target():
    net, _, _ = small(build_count=None)               # counts 5, 6, 7, 8
    a = net.net_stim()
    net.connect(a, 1, delay=1.0)
    net.connect(a, 3, delay=1.0)
    lonely = net.vec_stim([1.0])
    dist = net.distribute(2)
    # LPT, largest first: gid 3 (8) -> rank 0; gid 2 (7) -> rank 1; loads (8, 7), so
    # gid 1 (6) -> rank 1; loads (8, 13), so gid 0 (5) -> rank 0
    assert dist.rank_of_cell[:4].tolist() == [0, 1, 1, 0]
    assert dist.loads.tolist() == [13, 13]
    assert dist.rank_of_cell[a] == dist.rank_of_cell[1]
    assert dist.rank_of_cell[lonely] == 0
    assert np.array_equal(net.distribute(1).rank_of_cell, np.zeros(net.n_gids))
