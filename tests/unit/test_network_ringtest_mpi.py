"""Networks under ``mpiexec -n 2`` and ``-n 4``: the spikes of one process, bit for bit.

Runs ``tests/mpi/ringtest_check.py`` and ``tests/mpi/random_network_check.py`` (the
launcher and timeouts of ``test_network_parallel_mpi.py``). The one-process ringtest raster
is itself NEURON 9.0.2's (``tests/validation/test_neuron_ringtest.py``), so the split runs
match NEURON too.
"""
import importlib.util
import json
import time

import pytest
from test_network_parallel_mpi import MPIEXEC, SCRIPTS, TIMEOUT, mpirun

from hinesbatch import run_network
from hinesbatch.network.ringtest import RingtestParameters, ringtest

pytestmark = [
    pytest.mark.mpi, pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None,
                       reason="mpi4py is not installed (pip install 'hinesbatch[mpi]')"),
    pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec beside Python or on PATH "
                                               "(pip install 'hinesbatch[mpi]')"),
    pytest.mark.skipif(importlib.util.find_spec("h5py") is None,
                       reason="h5py is not installed (pip install 'hinesbatch[sonata]')"),
]


@pytest.fixture(scope="module")
def one_process():
    """The default ringtest in this process: its cells' spikes sorted by (time, gid)."""
    res = run_network(ringtest(), 100.0)
    gids, times = res.spike_report()
    keep = gids < RingtestParameters().n_cells
    return gids[keep], times[keep]


@pytest.mark.parametrize("n_ranks", [2, 4])
def test_ringtest_on_n_ranks_gives_the_one_process_raster(one_process, tmp_path, n_ranks):
    from hinesbatch.io.sonata import read_spike_report

    out = tmp_path / f"spikes{n_ranks}.h5"
    run = mpirun(n_ranks, "ringtest_check.py", "run", out)
    assert run.returncode == 0, run.stderr
    info = json.loads((tmp_path / f"spikes{n_ranks}.h5.json").read_text())
    assert info["n_ranks"] == n_ranks
    assert min(info["loads"]) > 0          # every rank stepped cells
    gids, times = read_spike_report(out)
    keep = gids < RingtestParameters().n_cells
    want_gids, want_times = one_process
    assert want_gids.size == 688
    assert gids[keep].tobytes() == want_gids.tobytes(), f"{n_ranks} ranks: gids differ"
    assert times[keep].tobytes() == want_times.tobytes(), f"{n_ranks} ranks: times differ"


@pytest.mark.parametrize("mode, message", [
    ("bad-synapse", "ValueError: connection 144: cell 127 has no synapse 'Exp2Syn[0]'"),
    ("unknown-gid", "NetworkCheckError: connection 144: source gid 1000000 is not a gid"),
    ("short-delay", "NetworkCheckError: connection 144: delay 0.01 ms is below dt = 0.025"),
])
def test_a_bad_network_stops_every_rank_with_its_message(tmp_path, mode, message):
    net = ringtest()
    owner = int(net.distribute(2).rank_of_cell[127])
    start = time.perf_counter()
    run = mpirun(2, "ringtest_check.py", mode, tmp_path / "spikes.h5")
    assert run.returncode != 0
    assert message in run.stderr
    if mode == "bad-synapse":   # only the owner of cell 127 builds it
        assert f"[rank {owner} of 2]" in run.stderr
    assert "finished" not in run.stdout
    assert not (tmp_path / "spikes.h5").exists()
    assert time.perf_counter() - start < TIMEOUT


def _load_random_network():
    spec = importlib.util.spec_from_file_location("random_network",
                                                  SCRIPTS / "random_network.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("grid", [False, True], ids=["continuum", "dt-grid"])
def test_a_random_network_gives_the_same_spikes_and_traces_on_1_2_4_ranks(seed, tmp_path,
                                                                          grid):
    """Mixed cells (stylized and SWC, ExpSyn and Exp2Syn), NetStim drive, delays in
    [1, 5] ms; the one-process run of the same description is the reference."""
    from hinesbatch import load_results

    net = _load_random_network().build(seed, grid=grid)
    want = run_network(net, 30.0)
    cells = net.cell_gids.size
    assert sum(want.spikes[f"spikes@{g}"].size for g in range(cells)) > 50
    for n_ranks in (1, 2, 4):
        out = tmp_path / f"net{n_ranks}.npz"
        run = mpirun(n_ranks, "random_network_check.py", seed, int(grid), 30.0, out)
        assert run.returncode == 0, run.stderr
        got = load_results(out)
        assert got.meta["n_ranks"] == n_ranks
        assert list(got.spikes) == list(want.spikes)
        for key, times in want.spikes.items():
            assert got.spikes[key].tobytes() == times.tobytes(), f"{n_ranks} ranks: {key}"
        assert got.keys() == want.keys() and len(want.keys()) == 3
        for key in want:
            assert got[key].tobytes() == want[key].tobytes(), f"{n_ranks} ranks: {key}"
