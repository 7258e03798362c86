"""The GPU engine on CUDA devices against the serial CPU engine (docs/simulator.md).

float64: traces within 1e-6 mV over 100 ms of spiking and identical spike times (the
kernel is compiled without FMA contraction, so it rounds as the CPU does except in
``exp``/``log``/``pow``, CUDA's own, and in the solve's reciprocal pivots). float32 (fast
division and ``exp``): spike times within one step of the CPU's.
Every run starts from recordings poisoned with NaN on the device, and a run repeated gives
the same bits.
"""
from __future__ import annotations

import numpy as np
import pytest
from gpu_engine_cases import cell, clamped_cells, compare, network, wire

import hinesbatch as hb

pytestmark = pytest.mark.gpu

FP64_MV = 1e-6


def _runs(build, tstop, **gpu):
    """Serial and GPU results of the model ``build(sim_factory)`` returns."""
    out = {}
    for backend in ("serial", "gpu"):
        kw = gpu if backend == "gpu" else {}
        sim, keys, spikes = build(lambda cells, backend=backend, kw=kw, **x: hb.Simulation(
            cells, backend=backend, **x, **kw))
        out[backend] = sim.run(tstop)
    return out["serial"], out["gpu"], keys, spikes


def _clamped(seed, files=None, **sim_kw):
    def build(make):
        rng = np.random.default_rng(seed)
        cells = clamped_cells(rng) if files is None else clamped_cells(rng, files)
        sim = make(cells, **sim_kw)
        keys = [sim.record("v", cell=k) for k in range(len(cells))]
        keys.append(sim.record("m_hh", cell=0, every=4))
        spikes = [sim.record_spikes(sim.spike_source(k)) for k in range(len(cells))]
        return sim, keys, spikes
    return build


@pytest.mark.parametrize("tables", [True, False])
def test_real_cells_fp64(seed, tables):
    files = ("c91662.swc", "morph_ca1_n120.swc", "ko20x-07.CNG.swc", "tc200.CNG.swc")
    a, b, keys, spikes = _runs(_clamped(seed, files, tables=tables), 100.0)
    worst, same = compare(a, b, keys, spikes)
    assert sum(a.spikes[k].size for k in spikes) >= 4
    assert worst <= FP64_MV and same, (worst, same)


@pytest.mark.parametrize("trunk_min", [16, 2])
def test_trunk_scan_fp64(seed, trunk_min, monkeypatch):
    """Long trunks by a warp's scan (c91662: 92 nodes, three a lane), and with every trunk
    of 2 nodes or more scanned, the small cells' too: the CPU's traces within 1e-6 mV."""
    from hinesbatch.engine.gpu import runner

    monkeypatch.setattr(runner, "TRUNK_MIN", trunk_min)
    files = ("c91662.swc", "ko20x-07.CNG.swc", "mp_ma_40984_gc2.CNG.swc")
    build = _clamped(seed, files)
    sim, _, _ = build(lambda cells, **x: hb.Simulation(cells, backend="gpu", **x))
    sim.run(1.0)
    assert "by a warp's scan" in sim.describe()
    a, b, keys, spikes = _runs(build, 60.0)
    worst, same = compare(a, b, keys, spikes)
    assert sum(a.spikes[k].size for k in spikes) >= 3
    assert worst <= FP64_MV and same, (worst, same)


@pytest.mark.parametrize("threads", [None, 16])
def test_network_fp64(seed, threads):
    """20 cells, with one block each or two to a warp (events, spikes and recordings per
    group of lanes)."""
    def build(make):
        rng = np.random.default_rng(seed)
        cells = network(rng, 20)
        sim = make(cells)
        keys, spikes = wire(sim, cells, rng)
        return sim, keys, spikes
    a, b, keys, spikes = _runs(build, 100.0, **({"block_threads": threads} if threads else {}))
    worst, same = compare(a, b, keys, spikes)
    assert sum(a.spikes[k].size for k in spikes) > 10
    assert worst <= FP64_MV and same, (worst, same)


def test_fp32_spikes_within_one_step(seed):
    a, b, keys, spikes = _runs(_clamped(seed), 100.0, precision="float32")
    for k in spikes:
        assert a.spikes[k].size == b.spikes[k].size, k
        assert np.all(np.abs(a.spikes[k] - b.spikes[k]) <= 0.025 + 1e-9), k
    for k in keys[:-1]:
        assert np.max(np.abs(a.traces[k] - b.traces[k])) < 5.0, k   # mV, around spikes


@pytest.mark.parametrize("threads", [None, 8])
def test_repeatable_bitwise(seed, threads):
    build = _clamped(seed, **({"block_threads": threads} if threads else {}))
    runs = []
    for _ in range(2):
        sim, keys, spikes = build(lambda cells, **x: hb.Simulation(cells, backend="gpu", **x))
        runs.append(sim.run(50.0))
    worst, same = compare(runs[0], runs[1], keys, spikes)
    assert worst == 0.0 and same


@pytest.mark.parametrize("threads", [1, 8, 16, 32, 96, 256])
def test_block_sizes_agree(seed, threads):
    """More threads than nodes, a few nodes per thread, and many; below 32, a warp's groups
    of lanes stepping a cell each (the last warp partly idle)."""
    a, b, keys, spikes = _runs(_clamped(seed), 30.0, block_threads=threads)
    worst, same = compare(a, b, keys, spikes)
    assert worst <= FP64_MV and same


def test_many_copies_and_mixed_morphologies(seed):
    pick = np.random.default_rng(seed).choice(300, size=12, replace=False)

    def build(make):
        cells = []
        for k in range(300):
            c = cell(("ko20x-07.CNG.swc", "c91662.swc", "mp_ma_40984_gc2.CNG.swc")[k % 3],
                     d_lambda=0.1)
            c.insert("hh")
            c.place("IClamp", "soma[0](0.5)", delay=2.0, dur=20.0, amp=float(0.5 + k / 300))
            cells.append(c)
        sim = make(cells)
        keys = [sim.record("v", cell=int(k)) for k in pick]
        spikes = [sim.record_spikes(sim.spike_source(int(k))) for k in pick]
        return sim, keys, spikes
    a, b, keys, spikes = _runs(build, 25.0)
    worst, same = compare(a, b, keys, spikes)
    assert worst <= FP64_MV and same


def test_several_devices_equal_one(seed):
    import cupy

    n = cupy.cuda.runtime.getDeviceCount()
    if n < 2:
        pytest.skip("one CUDA device")
    build = _clamped(seed)
    res = []
    for devices in (1, n):
        sim, keys, spikes = build(lambda cells, devices=devices, **x: hb.Simulation(
            cells, backend="gpu", devices=devices, **x))
        res.append(sim.run(40.0))
    worst, same = compare(res[0], res[1], keys, spikes)
    assert worst == 0.0 and same


def test_large_cell_falls_back_to_device_memory(seed):
    """A cell whose v, d, rhs exceed shared memory runs from device memory."""
    c = cell("morph_l5pc_with_axon.swc", d_lambda=0.01)
    c.insert("hh")
    c.place("IClamp", "soma[0](0.5)", delay=1.0, dur=5.0, amp=2.0)
    out = {}
    for backend in ("serial", "gpu"):
        sim = hb.Simulation([c], backend=backend)
        key = sim.record("v")
        out[backend] = sim.run(5.0)
        if backend == "gpu":
            text = sim.describe()
    n = out["serial"].traces[key]
    assert np.max(np.abs(n - out["gpu"].traces[key])) <= FP64_MV
    if "device memory" not in text:
        pytest.skip(f"the cell fits shared memory here: {text}")


def test_ringtest_raster_on_the_gpu():
    """NEURON's ringtest (688 spikes; the CPU engine's raster is NEURON's) on the GPU."""
    from hinesbatch import run_network
    from hinesbatch.network.ringtest import RingtestParameters, ringtest

    rasters = []
    for backend in ("serial", "gpu"):
        gids, times = run_network(ringtest(), 100.0, backend=backend).spike_report()
        keep = gids < RingtestParameters().n_cells
        rasters.append((gids[keep], times[keep]))
    assert rasters[0][0].size == 688
    assert np.array_equal(rasters[0][0], rasters[1][0])
    assert np.array_equal(rasters[0][1], rasters[1][1])


def test_events_due_at_the_end_of_one_step_epochs_on_the_gpu():
    """Epochs of one step (a delay of dt): events due at a step's end, delivered after the
    exchange, act there on the GPU as on the CPU."""
    from network_cases import one_step_epochs

    from hinesbatch import run_network

    out = {b: run_network(one_step_epochs(), 10.0, backend=b) for b in ("serial", "gpu")}
    gids, times = out["serial"].spike_report()
    assert np.count_nonzero(gids == 1) > 0
    g2, t2 = out["gpu"].spike_report()
    assert np.array_equal(gids, g2) and np.array_equal(times, t2)
    key = "v@1:soma[0](0.5)"
    assert np.max(np.abs(out["serial"][key] - out["gpu"][key])) <= FP64_MV
