"""A random network of stylized cells against NEURON 9.0.2 built the same way.

The network of ``tests/mpi/random_network.py`` without its SWC cells (120 cells of 1 to 8
dendrites with 1 to 3 segments, ExpSyn and Exp2Syn, 8 NetStims, 528 NetCons with delays
from a continuum in [1, 5] ms) is built in NEURON by ``neuron_random_network.py`` (a fresh
process) and run by :func:`hinesbatch.run_network` here (one process; 1, 2 and 4 ranks give
the same spikes, ``tests/unit/test_network_ringtest_mpi.py``).

Acceptance: the same raster, gids and times (float equality) after sorting by (time, gid),
with more than 100 spikes from more than half the cells.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hinesbatch import run_network

pytestmark = [pytest.mark.validation, pytest.mark.neuron]

HERE = Path(__file__).resolve().parent
TSTOP = 40.0


def _random_network():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "random_network", HERE.parent / "mpi" / "random_network.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_random_network_raster_is_neurons(seed, tmp_path):
    out = tmp_path / "neuron.npz"
    proc = subprocess.run([sys.executable, str(HERE / "neuron_random_network.py"), str(seed),
                           str(TSTOP), str(out)], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, MPLBACKEND="Agg"), check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with np.load(out) as nrn:
        order = np.lexsort((nrn["gids"], nrn["times"]))
        want_g, want_t = nrn["gids"][order], nrn["times"][order]
    net = _random_network().build(seed, swc=False)
    gids, times = run_network(net, TSTOP).spike_report()
    cells = gids < net.cell_gids.size
    assert want_g.size > 100 and np.unique(want_g).size > net.cell_gids.size // 2
    assert gids[cells].tolist() == want_g.tolist()
    assert times[cells].tolist() == want_t.tolist()
