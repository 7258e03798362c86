"""NEURON's ringtest rebuilt in hinesbatch against NEURON 9.0.2 running the same model.

NEURON builds the model with ``neuron.h`` as neuronsimulator/ringtest does
(:mod:`hinesbatch.bench.neuron_ringtest`, in a fresh process); hinesbatch builds it with
:func:`hinesbatch.network.ringtest.ringtest` and runs it with the network runner (epochs of
the minimum delay, spikes exchanged between them, here in one process; the same raster
under ``mpiexec -n 2`` and ``-n 4`` is checked by ``tests/unit/test_network_ringtest_mpi.py``).

Acceptance: the same cell types (NEURON's Random123 draws), every segment's ``area`` and
``ri`` equal to NEURON's (float equality), and the same raster: equal spike gids and
times (float equality) after sorting by (time, gid), 688 spikes in the default case.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hinesbatch import run_network
from hinesbatch.network.random123 import Random123Stream
from hinesbatch.network.ringtest import (
    RingtestParameters,
    cell_shape,
    cell_types,
    ringtest,
    ringtest_cell,
)

pytestmark = [pytest.mark.validation, pytest.mark.neuron]

DEFAULT = RingtestParameters()
#: Branches of 1..3 segments (dend[0] too, whose 3-D points decide its geometry).
SEGMENTED = RingtestParameters(nring=3, ncell=5, npt=2, branch=(4, 12), compart=(1, 3),
                               tstop=60.0)
CASES = {"default": DEFAULT, "segmented": SEGMENTED}


def _neuron(params: RingtestParameters, out: Path) -> dict:
    args = [params.nring, params.ncell, params.npt, *params.branch, *params.compart,
            params.tstop]
    proc = subprocess.run([sys.executable, "-m", "hinesbatch.bench.neuron_ringtest", str(out),
                           *map(str, args)], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, MPLBACKEND="Agg"), check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"NEURON's ringtest failed (exit {proc.returncode}):\n"
                           f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    with np.load(out) as data:
        return {k: data[k] for k in data.files}


@pytest.fixture(scope="module", params=list(CASES))
def case(request, tmp_path_factory):
    params = CASES[request.param]
    return params, _neuron(params, tmp_path_factory.mktemp("ringtest") / "neuron.npz")


def _sorted(gids, times):
    order = np.lexsort((gids, times))
    return np.asarray(gids)[order], np.asarray(times)[order]


def test_random123_and_cell_types_are_neurons(case):
    params, nrn = case
    stream = Random123Stream(6, 2)
    assert [stream.discunif(0, 1000)] + [stream.repick() for _ in range(19)] == \
        nrn["draws"].tolist()
    assert cell_types(params) == nrn["types"].tolist()


def test_ringtest_cells_have_neurons_area_and_ri(case):
    params, nrn = case
    types = cell_types(params)
    for gid in range(params.ncell):
        geo = ringtest_cell(*cell_shape(types[gid], params.branch, params.compart)).geometry
        # NEURON's list: each section's segments, then its x = 1 node; ours after the root
        assert geo.area_um2[1:].tolist() == nrn[f"area{gid}"].tolist(), f"cell {gid}: area"
        assert geo.ri_megohm[1:].tolist() == nrn[f"ri{gid}"].tolist(), f"cell {gid}: ri"


def test_ringtest_raster_is_neurons(case):
    params, nrn = case
    res = run_network(ringtest(params), params.tstop)
    gids, times = res.spike_report()
    cells = gids < params.n_cells           # ringtest records the cells, not the NetStims
    got_g, got_t = _sorted(gids[cells], times[cells])
    want_g, want_t = _sorted(nrn["gids"], nrn["times"])
    if params == DEFAULT:
        assert want_g.size == 688
    assert np.unique(want_g).size == params.n_cells   # every cell fires
    assert got_g.tolist() == want_g.tolist()
    assert got_t.tolist() == want_t.tolist()
