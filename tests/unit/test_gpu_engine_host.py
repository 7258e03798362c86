"""The GPU engine's logic without a GPU: its kernel built as host C++ (one thread per block;
:class:`hinesbatch.engine.gpu.devices.HostDevice`) against the serial CPU engine.

The host build evaluates every expression in the same order with the same C library, so the
traces and spike times must be identical, bit for bit: this pins the kernel's assembly,
level-by-level solve, state updates, event application, recordings, several devices and
the host's epoch loop. Races between threads are the CUDA tests' business
(``tests/gpu/test_gpu_engine.py``).
"""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from gpu_engine_cases import REAL, SMALL, cell, clamped_cells, compare, network, wire
from network_cases import one_step_epochs

import hinesbatch as hb
from hinesbatch import run_network
from hinesbatch.engine.gpu import runner
from hinesbatch.engine.gpu.devices import EMULATION_ENV, HostDevice
from hinesbatch.engine.gpu.source import field_roles
from hinesbatch.errors import DeviceMemoryError
from hinesbatch.sim.errors import NonFiniteStateError

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="the host build of the GPU kernel needs g++")


@pytest.fixture(autouse=True)
def emulated_devices(monkeypatch):
    """Two emulated devices; ``devices=1`` picks one."""
    monkeypatch.setenv(EMULATION_ENV, "2")


def _sim(cells, backend, n_devices=1, **kw):
    if backend == "gpu":
        kw["devices"] = n_devices
    return hb.Simulation(cells, backend=backend, **kw)


@pytest.mark.parametrize("tables", [True, False])
@pytest.mark.parametrize("n_devices", [1, 2])
def test_clamped_cells_equal_serial(seed, tables, n_devices):
    out = {}
    for backend in ("serial", "gpu"):
        rng = np.random.default_rng(seed)
        cells = clamped_cells(rng)
        sim = _sim(cells, backend, n_devices, tables=tables)
        keys = [sim.record("v", cell=k) for k in range(len(cells))]
        keys += [sim.record("m_hh", cell=1, every=3), sim.record("i", target=cells[0].point_processes[0])]
        spikes = [sim.record_spikes(sim.spike_source(k)) for k in range(len(cells))]
        out[backend] = sim.run(30.0)
    worst, same = compare(out["serial"], out["gpu"], keys, spikes)
    assert sum(out["serial"].spikes[k].size for k in spikes) > 0
    assert worst == 0.0 and same
    meta = out["gpu"].meta
    assert meta["precision"] == "float64" and meta["step_seconds"] > 0
    assert meta["devices"] == [f"host:{k}" for k in range(n_devices)]


@pytest.mark.parametrize("threads", [None, 8])
def test_state_in_device_memory_equals_serial(seed, monkeypatch, threads):
    """The kernel's path with v, d and rhs in device memory (chosen on a GPU where shared
    memory would hold fewer blocks at once), with one cell a block or four a warp."""
    monkeypatch.setattr(HostDevice, "state_in_shared", lambda self, kernel, t, b: False)
    out = {}
    for backend in ("serial", "gpu"):
        rng = np.random.default_rng(seed)
        cells = clamped_cells(rng)
        kw = {"block_threads": threads} if backend == "gpu" and threads else {}
        sim = _sim(cells, backend, 2, **kw)
        keys = [sim.record("v", cell=k) for k in range(len(cells))]
        spikes = [sim.record_spikes(sim.spike_source(k)) for k in range(len(cells))]
        out[backend] = sim.run(30.0)
        if backend == "gpu":
            assert "v, d, rhs in device memory" in sim.describe()
    worst, same = compare(out["serial"], out["gpu"], keys, spikes)
    assert sum(out["serial"].spikes[k].size for k in spikes) > 0
    assert worst == 0.0 and same


@pytest.mark.parametrize("min_delay", [1.0, 0.0])
@pytest.mark.parametrize("threads, group_block", [(None, 32), (16, 32), (16, 64), (1, 32)])
def test_network_equals_serial(seed, min_delay, threads, group_block, monkeypatch):
    """Also with groups of 16 lanes or single lanes stepping a cell each: 2, 4 or 32 cells a
    block, the last block partly empty."""
    monkeypatch.setattr(runner, "GROUP_BLOCK_THREADS", group_block)
    out = {}
    for backend in ("serial", "gpu"):
        rng = np.random.default_rng(seed)
        cells = network(rng, 7)
        kw = {"block_threads": threads} if backend == "gpu" and threads else {}
        sim = _sim(cells, backend, 2, **kw)
        keys, spikes = wire(sim, cells, rng, min_delay=min_delay)
        out[backend] = sim.run(40.0)
        if backend == "gpu" and threads:
            per = group_block // threads
            assert f"{per} cells per block of {group_block} threads" in sim.describe()
            assert sim._gpu.block == group_block and sim._gpu.cells_per_block == per
    worst, same = compare(out["serial"], out["gpu"], keys, spikes)
    assert sum(out["serial"].spikes[k].size for k in spikes) > 0
    assert worst == 0.0 and same


@pytest.fixture
def trunk_scan(monkeypatch):
    """The host build with every trunk of 2 nodes or more solved by the warp's scan (its
    lanes one after another), in blocks of any size: the CUDA build's solve, on small cells
    too."""
    monkeypatch.setattr(HostDevice, "trunk_scan", True)
    monkeypatch.setattr(runner, "TRUNK_MIN", 2)
    monkeypatch.setattr(runner, "TRUNK_MIN_THREADS", 32)


#: The trunk's scan orders the solve's arithmetic differently: rounding apart from serial.
TRUNK_MV = 1e-9


@pytest.mark.usefixtures("trunk_scan")
@pytest.mark.parametrize("files", [SMALL, ("pyramidal.swc", "c91662.swc")],
                         ids=["small", "long-trunks"])
@pytest.mark.parametrize("shared", [True, False])
def test_trunk_scan_equals_serial_within_rounding(seed, files, shared, monkeypatch):
    """Trunks of a few nodes (one a lane) to 154 (five a lane, the last lanes empty), with
    v, d, rhs and the scan's scratch in shared or in device memory."""
    if not shared:
        monkeypatch.setattr(HostDevice, "state_in_shared", lambda self, kernel, t, b: False)
    out = {}
    for backend in ("serial", "gpu"):
        rng = np.random.default_rng(seed)
        cells = clamped_cells(rng, files)
        sim = _sim(cells, backend)
        keys = [sim.record("v", cell=k) for k in range(len(cells))]
        keys.append(sim.record("m_hh", cell=1, every=3))
        spikes = [sim.record_spikes(sim.spike_source(k)) for k in range(len(cells))]
        out[backend] = sim.run(30.0)
        if backend == "gpu":
            trunks = [s["tr_node"].size for s in sim._gpu.structs]
    worst, same = compare(out["serial"], out["gpu"], keys, spikes)
    assert min(trunks) >= 2 and (max(trunks) > 64 or files == SMALL)
    assert sum(out["serial"].spikes[k].size for k in spikes) > 0
    assert worst <= TRUNK_MV and same, (worst, same)


@pytest.mark.usefixtures("trunk_scan")
def test_trunk_scan_on_a_cable_and_a_star():
    """An unbranched cable (every node on the trunk, no chain level at all; three nodes a
    lane) and a soma with 40 one-node dendrites (a trunk of a few nodes, the rest pulled)."""
    from hinesbatch.model.sections import SectionCell

    def cells():
        cable = SectionCell(["cable"], [-1], [500.0], [2.0], nseg=[70])
        names = ["soma"] + [f"d{i}" for i in range(40)]
        star = SectionCell(names, [-1] + [0] * 40, [20.0] + [50.0] * 40, [20.0] + [1.0] * 40,
                           nseg=[1] * 41)
        for c, at, amp in ((cable, "cable(0.1)", 0.3), (star, "soma(0.5)", 2.0)):
            c.insert("hh")
            c.place("IClamp", at, delay=1.0, dur=20.0, amp=amp)
        return [cable, star]

    out = {}
    for backend in ("serial", "gpu"):
        sim = _sim(cells(), backend)
        keys = [sim.record("v", cell=0, location="cable(0.9)"),
                sim.record("v", cell=1, location="d3(0.5)")]
        spikes = [sim.record_spikes(sim.spike_source(0, location="cable(0.1)")),
                  sim.record_spikes(sim.spike_source(1, location="soma(0.5)"))]
        out[backend] = sim.run(25.0)
        if backend == "gpu":
            structs = sim._gpu.structs
    assert structs[0]["el_lev"].size == 1 and structs[0]["tr_node"].size == 72   # no level
    worst, same = compare(out["serial"], out["gpu"], keys, spikes)
    assert all(out["serial"].spikes[k].size > 0 for k in spikes)
    assert worst <= TRUNK_MV and same, (worst, same)


@pytest.mark.parametrize("block_threads, scanned", [(None, False), (64, True)])
def test_trunk_scan_only_in_blocks_of_several_warps(seed, block_threads, scanned,
                                                     monkeypatch):
    """Small cells get one-warp blocks, where the chains alone are faster: no scan, unless
    the user asks for larger blocks; describe() says which."""
    monkeypatch.setattr(HostDevice, "trunk_scan", True)
    files = ("ko20x-07.CNG.swc", "mp_ma_40984_gc2.CNG.swc")   # trunks of 34 and 30 nodes
    sim = _sim(clamped_cells(np.random.default_rng(seed), files), "gpu",
               block_threads=block_threads)
    sim.run(sim.dt)
    trunks = [s["tr_node"].size for s in sim._gpu.structs]
    assert sim._gpu.block == (block_threads or 32)
    assert (max(trunks) >= runner.TRUNK_MIN) == scanned
    assert ("by a warp's scan" in sim.describe()) == scanned


@pytest.mark.usefixtures("trunk_scan")
def test_network_with_trunk_scan_equals_serial_within_rounding(seed):
    out = {}
    for backend in ("serial", "gpu"):
        rng = np.random.default_rng(seed)
        cells = network(rng, 8)
        sim = _sim(cells, backend, 2)
        keys, spikes = wire(sim, cells, rng)
        out[backend] = sim.run(40.0)
        if backend == "gpu":
            trunks = [s["tr_node"].size for s in sim._gpu.structs]
    worst, same = compare(out["serial"], out["gpu"], keys, spikes)
    assert max(trunks) >= 2                     # the scan ran
    assert sum(out["serial"].spikes[k].size for k in spikes) > 0
    assert worst <= TRUNK_MV and same, (worst, same)


def _solve_by_structure(st, d, rhs):
    """The solve that the kernel runs on a structure, in NumPy: chain levels (the ranges of
    a level taken last to first, as any thread order may), the trunk's recurrences, then
    back substitution; returns x."""
    d, x = d.astype(float), rhs.astype(float)
    lev, rng_, pc, ab = st["el_lev"], st["el_range"], st["el_pc"], st["el_ab"]
    for h in range(lev.size - 1):
        for q in reversed(range(lev[h], lev[h + 1])):
            for r in range(*rng_[q]):
                (p, c), (a, b) = pc[r], ab[r]
                pp = a / d[c]
                d[p] -= pp * b
                x[p] -= pp * x[c]
    tn, tab = st["tr_node"], st["tr_ab"]
    for i in range(1, tn.size):           # the trunk from its leaf up
        a, b = tab[i - 1]
        pp = a / d[tn[i - 1]]
        d[tn[i]] -= pp * b
        x[tn[i]] -= pp * x[tn[i - 1]]
    for k in range(tn.size):              # and from its root down
        i = tn.size - 1 - k
        x[tn[i]] = (x[tn[i]] - (tab[i][1] * x[tn[i + 1]] if k else 0.0)) / d[tn[i]]
    lev, rng_, ip, bb = st["bs_lev"], st["bs_range"], st["bs_ip"], st["bs_b"]
    for h in range(lev.size - 1):
        for q in reversed(range(lev[h], lev[h + 1])):
            for r in range(*rng_[q]):
                i, p = ip[r]
                x[i] = (x[i] - (bb[r] * x[p] if p >= 0 else 0.0)) / d[i]
    return x


@pytest.mark.parametrize("trunk_min", [0, 1, 3, 12])
def test_structures_solve_every_tree(seed, trunk_min):
    """Random trees (chains, stars, bushes), with and without a trunk: the records, levels
    and trunk of ``_structure`` solve the tree's system (row i: d_i x_i + b_i x_parent +
    sum of a_k x_k over its children k), each node eliminated once."""
    from types import SimpleNamespace

    rng = np.random.default_rng(seed)
    for _ in range(30):
        n = int(rng.integers(1, 120))
        reach = int(rng.choice([1, 3, n]))
        parent = np.array([-1] + [int(rng.integers(max(0, i - reach), i)) for i in range(1, n)])
        a, b = -rng.uniform(0.1, 1.0, n), -rng.uniform(0.1, 1.0, n)
        lay = SimpleNamespace(parent=parent, a=a, b=b, capd=np.ones(n))
        st = runner._structure(lay, SimpleNamespace(start=0, stop=n), trunk_min)
        trunk = st["tr_node"]
        assert trunk.size == 0 or (trunk.size >= trunk_min and trunk[-1] == 0)
        eliminated = np.concatenate([st["el_pc"][:, 1], trunk[:-1]])
        assert sorted(eliminated.tolist()) == list(range(1, n))
        dense = np.diag(rng.uniform(5.0, 10.0, n))
        for i in range(1, n):
            dense[i, parent[i]], dense[parent[i], i] = b[i], a[i]
        rhs = rng.normal(size=n)
        x = _solve_by_structure(st, np.diag(dense).copy(), rhs)
        np.testing.assert_allclose(x, np.linalg.solve(dense, rhs), rtol=1e-12, atol=1e-12)


def test_one_step_epochs_equal_serial():
    """A delay of dt: epochs of one step, events due at a step's end delivered after the
    exchange (``EpochSimulation.receive``), the same on the GPU engine's host loop."""
    out = {b: run_network(one_step_epochs(), 10.0, backend=b) for b in ("serial", "gpu")}
    gids, times = out["serial"].spike_report()
    assert np.count_nonzero(gids == 1) > 0
    g2, t2 = out["gpu"].spike_report()
    assert gids.tolist() == g2.tolist() and times.tolist() == t2.tolist()
    key = "v@1:soma[0](0.5)"
    assert out["serial"][key].tobytes() == out["gpu"][key].tobytes()


def test_final_state_is_copied_back(seed):
    rng = np.random.default_rng(seed)
    sims = {}
    for backend in ("serial", "gpu"):
        sim = _sim(clamped_cells(np.random.default_rng(seed))[:2], backend)
        sim.run(10.0)
        sims[backend] = sim
    assert np.array_equal(sims["serial"]._v, sims["gpu"]._v)
    for m, data in sims["serial"]._data.items():
        assert np.array_equal(data, sims["gpu"]._data[m]), m
    del rng


def test_copies_of_a_morphology_share_one_structure():
    cell = hb.Cell(REAL / "ko20x-07.CNG.swc", nseg=1)
    cell.insert("hh")
    sim = _sim([cell] * 5, "gpu")
    sim.run(1.0)
    text = sim.describe()
    assert "1 distinct cell structure(s)" in text and "cells 0..4" in text


def test_one_warp_blocks_ask_for_the_most_resident_blocks():
    """A block of 32 threads (a small cell) is compiled for 32 blocks a multiprocessor
    (64 registers a thread); larger blocks keep the compiler's choice."""
    small = hb.Cell(REAL / "ko20x-07.CNG.swc", nseg=1)
    small.insert("hh")
    sims = [_sim([small], "gpu"), _sim(clamped_cells(np.random.default_rng(0)), "gpu")]
    for sim in sims:
        sim.run(0.1)
    assert sims[0]._gpu.block == 32 and "__launch_bounds__(32, 32)" in sims[0]._gpu.source
    assert sims[1]._gpu.block == 128 and "__launch_bounds__(128)" in sims[1]._gpu.source


def test_many_small_cells_share_warps(seed):
    """More small cells than the devices hold in one-warp blocks (32 a multiprocessor; the
    host device counts one): groups of a warp's lanes step them, a kernel bound for 32 warps
    a multiprocessor, with the serial engine's numbers; a few cells keep their own blocks."""
    rng = np.random.default_rng(seed)
    amps = rng.uniform(0.3, 1.5, size=40)
    out = {}
    for backend in ("serial", "gpu"):
        cells = []
        for k, amp in enumerate(amps):
            c = cell(SMALL[2 * (k % 2)], nseg=1)     # 73 and 169 nodes
            c.insert("hh")
            c.place("IClamp", "soma[0](0.5)", delay=1.0, dur=20.0, amp=float(amp))
            cells.append(c)
        sim = _sim(cells, backend)
        keys = [sim.record("v", cell=k) for k in range(0, 40, 3)]
        spikes = [sim.record_spikes(sim.spike_source(k)) for k in range(0, 40, 3)]
        out[backend] = sim.run(25.0)
        if backend == "gpu":
            assert sim._gpu.cell_threads in (8, 16) and sim._gpu.block == 64
            assert "cells per block of 64 threads" in sim.describe()
            assert "__launch_bounds__(64, 16)" in sim._gpu.source
            few = _sim(cells[:31], "gpu")
            few.run(0.1)
            assert few._gpu.cell_threads == 32 and few._gpu.cells_per_block == 1
    worst, same = compare(out["serial"], out["gpu"], keys, spikes)
    assert sum(out["serial"].spikes[k].size for k in spikes) > 0
    assert worst == 0.0 and same


def test_non_finite_state_names_cell_and_time():
    cell = hb.Cell(REAL / "ko20x-07.CNG.swc", nseg=1)
    cell.insert("hh")
    cell.place("IClamp", "soma[0](0.5)", delay=1.0, dur=1.0, amp=1e308)
    ok = hb.Cell(REAL / "ko20x-07.CNG.swc", nseg=1)
    ok.insert("hh")
    sim = _sim([ok, cell], "gpu")
    with pytest.raises(NonFiniteStateError, match=r"cell 1 at soma\[0\]\(0\.5\) at t = 1\.025"):
        sim.run(5.0)


def test_memory_refused_before_copying(monkeypatch):
    cell = hb.Cell(REAL / "ko20x-07.CNG.swc", nseg=1)
    cell.insert("hh")
    monkeypatch.setattr(HostDevice, "free_bytes", lambda self: 1000)
    sim = hb.Simulation([cell], backend="gpu")
    with pytest.raises(DeviceMemoryError, match=r"needs about [0-9.]+ MiB on each of 2 device\(s\), and host:0 has "
                       r"0\.00 MiB free: .*record less"):
        sim.run(1.0)


def test_options_are_checked():
    cell = hb.Cell(REAL / "ko20x-07.CNG.swc", nseg=1)
    with pytest.raises(ValueError, match="precision 'float32' needs backend='gpu'"):
        hb.Simulation([cell], precision="float32")
    with pytest.raises(ValueError, match="unknown precision"):
        hb.Simulation([cell], backend="gpu", precision="half")
    with pytest.raises(ValueError, match="apply to backend='gpu' only"):
        hb.Simulation([cell], devices=1)
    sim = _sim([cell], "gpu", block_threads=40)
    with pytest.raises(ValueError, match="multiple of 32"):
        sim.run(1.0)


def test_field_roles_of_the_builtins():
    hh = hb.mechanisms.get("hh")
    data = np.array([[f.default] * 3 for f in hh.fields])
    constants, transient = field_roles(hh, data, True)
    assert set(constants) == {"gnabar", "gkbar", "gl", "el", "ena", "ek"}
    assert transient == {"gna", "gk", "il", "ina", "ik", "minf", "hinf", "ninf", "mtau",
                         "htau", "ntau"}
    data[0, 1] = 0.2          # gnabar differs: no longer a constant
    assert "gnabar" not in field_roles(hh, data, True)[0]
    se = hb.mechanisms.get("SEClamp")
    constants, transient = field_roles(se, np.array([[f.default] for f in se.fields]), True)
    assert "on" not in transient and "vc" not in transient and "i" in transient
    syn = hb.mechanisms.get("ExpSyn")
    _, transient = field_roles(syn, np.array([[f.default] for f in syn.fields]), True)
    assert "g" not in transient


def test_emulation_variable_is_checked(monkeypatch):
    cell = hb.Cell(REAL / "ko20x-07.CNG.swc", nseg=1)
    monkeypatch.setenv(EMULATION_ENV, "two")
    with pytest.raises(ValueError, match="HINESBATCH_GPU_EMULATION='two'"):
        hb.Simulation([cell], backend="gpu").run(1.0)
    monkeypatch.setenv(EMULATION_ENV, "1")
    with pytest.raises(ValueError, match=r"devices=2: 1 CUDA device\(s\) are visible"):
        hb.Simulation([cell], backend="gpu", devices=2).run(1.0)


def test_cli_runs_the_gpu_engine_in_float32(tmp_path, capsys):
    from hinesbatch import cli

    out = tmp_path / "hh32.npz"
    assert cli.main(["simulate", "--mechanism", "hh", "--backend", "gpu", "--precision",
                     "float32", "--tstop", "5", "--iclamp", "1,1,3", "--out", str(out)]) == 0
    assert "backend:  gpu" in capsys.readouterr().out
    res = hb.load_results(out)
    v = res.traces[next(iter(res.traces))]
    assert res.meta["precision"] == "float32" and res.meta["backend"] == "gpu"
    assert v.shape == (201,) and np.isfinite(v).all() and v.max() > 0   # it fired
    assert cli.main(["simulate", "--mechanism", "hh", "--precision", "float32", "--tstop",
                     "1", "--out", str(tmp_path / "x.npz")]) != 0
    assert "precision 'float32' needs backend='gpu'" in capsys.readouterr().err


@pytest.mark.parametrize("nodes, threads, size, shared", [
    (1101, 128, 8, True), (1303, 128, 8, True), (1375, 128, 8, False), (2627, 128, 8, False),
    (5000, 128, 8, False), (1303, 64, 4, True), (2627, 64, 4, False)])
def test_state_memory_rule_on_an_h100(nodes, threads, size, shared):
    """The measured float64 cases behind ``SHARED_MIN_WARPS`` (a kernel of 64 registers, 128
    threads) and float32 blocks of 64 threads, on an H100's multiprocessor (228 KiB of
    shared memory)."""
    from types import SimpleNamespace

    from hinesbatch.engine.gpu.devices import CupyDevice

    device = object.__new__(CupyDevice)
    device.props = {"smem_per_sm": 233472}
    device.max_shared = 232448
    kernel = SimpleNamespace(num_regs=64 if size == 8 else 40, shared_size_bytes=0)
    assert device.state_in_shared(kernel, threads, 3 * nodes * size) is shared
