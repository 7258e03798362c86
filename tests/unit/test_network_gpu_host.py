"""Networks on the GPU engine, its kernel built as host C++ (``HINESBATCH_GPU_EMULATION``):
NEURON's ringtest gives the CPU engine's raster bit for bit in one process and with one
emulated GPU per rank under ``mpiexec -n 2``. The CPU engine's raster is NEURON 9.0.2's
(``tests/validation/test_neuron_ringtest.py``)."""
from __future__ import annotations

import importlib.util
import json
import shutil

import numpy as np
import pytest
from test_network_parallel_mpi import MPIEXEC, mpirun

from hinesbatch import run_network
from hinesbatch.engine.gpu.devices import EMULATION_ENV
from hinesbatch.network.ringtest import RingtestParameters, ringtest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                       reason="the host build of the GPU kernel needs g++"),
]


def _raster(res):
    gids, times = res.spike_report()
    keep = gids < RingtestParameters().n_cells
    return gids[keep], times[keep]


@pytest.fixture(scope="module")
def cpu_raster():
    return _raster(run_network(ringtest(), 100.0))


def test_ringtest_gpu_engine_one_process(cpu_raster, monkeypatch):
    monkeypatch.setenv(EMULATION_ENV, "1")
    gids, times = _raster(run_network(ringtest(), 100.0, backend="gpu"))
    assert cpu_raster[0].size == 688
    assert np.array_equal(gids, cpu_raster[0]) and np.array_equal(times, cpu_raster[1])


def test_rank_without_gpu_runs_the_cpu_engine(cpu_raster, monkeypatch, capsys):
    monkeypatch.delenv(EMULATION_ENV, raising=False)
    from hinesbatch.engine.gpu import devices

    monkeypatch.setattr(devices, "availability", lambda: (False, "no CUDA device here"))
    gids, times = _raster(run_network(ringtest(), 100.0, backend="gpu"))
    assert "rank 0: no GPU (no CUDA device here); this rank runs the multicore CPU engine" \
        in capsys.readouterr().err
    assert np.array_equal(gids, cpu_raster[0]) and np.array_equal(times, cpu_raster[1])


@pytest.mark.mpi
@pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None or MPIEXEC is None,
                    reason="mpi4py and mpiexec are needed (pip install 'hinesbatch[mpi]')")
@pytest.mark.skipif(importlib.util.find_spec("h5py") is None,
                    reason="h5py is not installed (pip install 'hinesbatch[sonata]')")
def test_ringtest_gpu_engine_two_ranks(cpu_raster, tmp_path, monkeypatch):
    from hinesbatch.io.sonata import read_spike_report

    monkeypatch.setenv(EMULATION_ENV, "1")
    out = tmp_path / "spikes.h5"
    run = mpirun(2, "ringtest_check.py", "run-gpu", out)
    assert run.returncode == 0, run.stderr
    assert json.loads((tmp_path / "spikes.h5.json").read_text())["n_ranks"] == 2
    gids, times = read_spike_report(out)
    keep = gids < RingtestParameters().n_cells
    assert gids[keep].tobytes() == cpu_raster[0].tobytes()
    assert times[keep].tobytes() == cpu_raster[1].tobytes()
