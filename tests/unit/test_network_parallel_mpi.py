"""Spike exchange, a split network and a failing rank under ``mpiexec -n N``.

The scripts in ``tests/mpi/`` run under ``mpiexec`` (from the ``mpich`` wheel of the ``mpi``
extra, found beside the Python interpreter or on PATH), each with a timeout so that a hang
fails the test. Skipped with the reason when mpi4py or mpiexec is missing.
"""
import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from hinesbatch.network.parallel import SerialCommunicator

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "tests" / "mpi"
TIMEOUT = 60  # [s] per mpiexec run; a hang fails the test


def _find_mpiexec() -> str | None:
    beside = Path(sys.executable).parent / "mpiexec"
    if beside.exists():
        return str(beside)
    return shutil.which("mpiexec")


MPIEXEC = _find_mpiexec()
pytestmark = [
    pytest.mark.mpi, pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None,
                       reason="mpi4py is not installed (pip install 'hinesbatch[mpi]')"),
    pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec beside Python or on PATH "
                                               "(pip install 'hinesbatch[mpi]')"),
]


def mpirun(n: int, script: str, *args) -> subprocess.CompletedProcess:
    """Run ``tests/mpi/<script>`` on ``n`` ranks; fail the test if it outlives TIMEOUT."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"),
                                                      env.get("PYTHONPATH")]))
    cmd = [MPIEXEC, "-n", str(n), sys.executable, str(SCRIPTS / script), *map(str, args)]
    try:
        return subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=TIMEOUT, env=env,
                              cwd=ROOT)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{' '.join(cmd[2:])} hung: no exit within {TIMEOUT} s\n"
                    f"stdout: {exc.stdout}\nstderr: {exc.stderr}")


def _load_toy():
    spec = importlib.util.spec_from_file_location("toy_network", SCRIPTS / "toy_network.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("n_ranks", [2, 4])
def test_exchange_on_every_rank_equals_one_process(seed, n_ranks):
    # 4 ranks oversubscribe a 2-core machine: MPICH allows it
    run = mpirun(n_ranks, "exchange_check.py", seed)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == f"exchange ok on {n_ranks} ranks"


@pytest.mark.parametrize("shortest", [40, 3])
def test_split_network_gives_bitwise_the_same_spikes_on_1_2_4_ranks(seed, tmp_path, shortest):
    # smallest delay 40 dt (epochs of 1 ms) or 3 dt (epochs of 3 steps, many exchanges)
    toy = _load_toy()
    net = toy.build(seed, shortest=shortest)  # delays on the dt grid: events share times
    want_gids, want_times = toy.run_epochs(net, SerialCommunicator(), 50.0)
    assert np.count_nonzero(want_gids < net["n_cells"]) > 100  # recurrent spikes exist
    for n_ranks in (1, 2, 4):
        out = tmp_path / f"spikes{n_ranks}.npz"
        run = mpirun(n_ranks, "network_check.py", seed, 50.0, out, shortest)
        assert run.returncode == 0, run.stderr
        got = np.load(out)
        # one rank under mpiexec runs without MPI; more use MPI's COMM_WORLD
        assert int(got["ranks"]) == n_ranks
        assert got["gids"].tobytes() == want_gids.tobytes(), f"{n_ranks} ranks: gids differ"
        assert got["times"].tobytes() == want_times.tobytes(), f"{n_ranks} ranks: times differ"


@pytest.mark.parametrize("mode, message", [
    ("raise", "[rank 1 of 2] ValueError: bad input on the last rank"),
    ("bad-spikes", "[rank 1 of 2] ValueError: spike 0 (gid 1) has time nan"),
    ("memory", "[rank 1 of 2] MemoryError: cannot allocate the cells of the last rank"),
    ("uncaught", "[rank 1 of 2] ValueError: bad input on the last rank, not caught"),
])
def test_a_failing_rank_stops_every_rank_with_its_message(mode, message):
    start = time.perf_counter()
    run = mpirun(2, "abort_check.py", mode)
    elapsed = time.perf_counter() - start
    assert run.returncode != 0
    assert message in run.stderr
    assert "Traceback" in run.stderr
    assert "finished" not in run.stdout  # rank 0 was stopped, not left to go on
    assert elapsed < TIMEOUT
