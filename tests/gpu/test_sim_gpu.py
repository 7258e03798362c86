"""The passive simulation with its state on the device: the same traces as the CPU's.

The GPU path keeps v, d, rhs and the recording in CuPy arrays, assembles with array
operations (a scatter-add for the parents' currents) and solves through the GPU backend;
only the recorded trace comes back, once. The recording starts as NaN, so an unwritten sample
fails the comparison.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hinesbatch.sim import simulate_passive

pytestmark = pytest.mark.gpu

REAL = Path(__file__).resolve().parents[1] / "data" / "morphologies" / "real"


@pytest.mark.parametrize("name, nseg", [("c91662.swc", 3), ("h10.CNG.swc", 1),
                                        ("mp_ma_40984_gc2.CNG.swc", 2)])
def test_gpu_simulation_matches_serial(name, nseg):
    kw = dict(tstop=5.0, dt=0.025, iclamp=(0.5, 1.0, 2.0), nseg=nseg, n_cells=300)
    ref = simulate_passive(REAL / name, backend="serial", **kw)
    gpu = simulate_passive(REAL / name, backend="gpu", **kw)
    assert gpu.params["backend"] == "gpu"
    assert gpu.v.shape == ref.v.shape == (300, 201)
    assert np.isfinite(gpu.v).all()
    np.testing.assert_allclose(gpu.v, ref.v, rtol=0, atol=1e-9)  # mV
    assert float(np.ptp(ref.v)) > 1.0  # the clamp moved the voltage: the check has teeth
