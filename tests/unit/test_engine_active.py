"""The engine: NEURON's fixed step with hh, pas, IClamp, SEClamp, ExpSyn, Exp2Syn and events.

References: closed forms (pas + IClamp on one compartment, ExpSyn decay), numbers NEURON
9.0.2 printed for the same model (one-point soma L = diam = 20 µm built by Import3d from
``1 1 0 0 0 10 -1``), the event rules of NEURON-COMPAT-ACTIVE §6, and the engine itself
(serial == multicore, a batch == each cell alone).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hinesbatch as hb
from hinesbatch.sim import NonFiniteStateError

REAL = Path(__file__).parents[1] / "data" / "morphologies" / "real"

# NEURON 9.0.2: soma from "1 1 0 0 0 10 -1", nseg 1, Ra 35.4, hh, IClamp(0.5) del 0 dur 1
# amp 0.5 nA, v_init -65, dt 0.025: v at t = 0, dt, 2dt, 3dt.
NEURON_CYLINDER = {
    False: [-65.0, -64.02109764276884, -63.057566758753175, -62.108304743965206],
    True: [-65.0, -64.02109764276884, -63.05756560575414, -62.10829930157326],
}


@pytest.fixture
def soma20(tmp_path) -> Path:
    path = tmp_path / "soma20.swc"
    path.write_text("1 1 0 0 0 10 -1\n")
    return path


@pytest.fixture
def small(tmp_path) -> Path:
    path = tmp_path / "small.swc"
    path.write_text("1 1 0 0 0 5 -1\n2 3 5 0 0 1 1\n3 3 60 0 0 1 2\n4 3 90 20 0 0.8 3\n"
                    "5 3 90 -20 0 0.6 3\n6 2 -5 0 0 0.5 1\n7 2 -200 0 0 0.5 6\n")
    return path


@pytest.mark.parametrize("tables", [False, True])
def test_hh_cylinder_equals_neuron_bit_for_bit(soma20, tables):
    cell = hb.Cell(soma20).insert("hh")
    cell.place("IClamp", "soma[0](0.5)", delay=0, dur=1, amp=0.5)
    sim = hb.Simulation(cell, tables=tables)
    key = sim.record("v")
    res = sim.run(0.075)
    assert res[key].tolist() == NEURON_CYLINDER[tables]
    assert res.units[key] == "mV"


def test_pas_iclamp_one_compartment_closed_form(tmp_path):
    """Backward Euler on one compartment: v_n = v_inf + (v0 - v_inf)·r^n, r = C/(C + g),
    and it approaches the exponential with tau = cm/g."""
    path = tmp_path / "soma.swc"
    path.write_text("1 1 0 0 0 5 -1\n")
    g, e, amp, dt = 1e-3, -65.0, 0.05, 0.01
    cell = hb.Cell(path).insert("pas", g_pas=g, e_pas=e)
    cell.place("IClamp", "soma[0](0.5)", delay=0, dur=100, amp=amp)
    sim = hb.Simulation(cell, dt=dt)
    key = sim.record("v")
    ik = sim.record("i", target=cell.point_processes[0])
    res = sim.run(20.0)
    area = cell.geometry.area_um2[1]
    v_inf = e + amp * 100.0 / area / g
    cap = 1e-3 / dt
    n = np.arange(res[key].size)
    closed = v_inf + (e - v_inf) * (cap / (cap + g)) ** n
    np.testing.assert_allclose(res[key], closed, rtol=0, atol=1e-11)
    tau = 1.0 / g * 1e-3        # cm/g [ms] with cm = 1 µF/cm²
    exact = v_inf + (e - v_inf) * np.exp(-res.time(key) / tau)
    assert np.abs(res[key] - exact).max() < 2 * dt / tau * abs(v_inf - e)
    assert res[ik][0] == amp and np.all(res[ik] == amp)   # on from t = 0, as NEURON


def test_expsyn_decay_and_event_timing(soma20):
    """A VecStim spike at 1.0 ms with delay 0.5: the event acts on the step that starts at
    1.5 ms (te <= t_n + dt/2), first seen at t_{n+1}; g then decays as exp(-t/tau)."""
    cell = hb.Cell(soma20).insert("pas")
    syn = cell.place("ExpSyn", "soma[0](0.5)", tau=2.0, e=0.0)
    sim = hb.Simulation(cell)
    sim.connect(sim.vec_stim([1.0]), syn, weight=0.01, delay=0.5)
    kg = sim.record("g", target=syn)
    res = sim.run(10.0)
    g, t = res[kg], res.time(kg)
    first = int(np.flatnonzero(g > 0)[0])
    assert first == 61 and g[first - 1] == 0.0           # acts on step 60 (t_60 ≈ 1.5)
    decay = g[first:] / 0.01
    expected = np.exp(-(t[first:] - t[first - 1]) / 2.0)
    np.testing.assert_allclose(decay, expected, rtol=1e-12)
    assert res.units[kg] == "uS"


@pytest.mark.parametrize("delay, step", [(0.0124, 800), (0.0125, 801), (0.0126, 801),
                                         (0.025, 801), (1.0, 840)])
def test_netstim_delay_ties_follow_accumulated_t(soma20, delay, step):
    """NEURON-COMPAT-ACTIVE §6.3: a NetStim spike at 20 ms acts on step 800 with delay
    0.0124 and on 801 with 0.0125 (20.0125 > t_800 + dt/2 = 20.0124999999994)."""
    cell = hb.Cell(soma20).insert("pas")
    syn = cell.place("ExpSyn", "soma[0](0.5)", tau=2.0)
    sim = hb.Simulation(cell)
    stim = sim.net_stim(start=20.0, interval=7.3, number=1)
    sim.connect(stim, syn, weight=0.01, delay=delay)
    kg = sim.record("g", target=syn)
    ks = sim.record_spikes(stim)
    res = sim.run(25.0)
    assert int(np.flatnonzero(res[kg] > 0)[0]) == step + 1
    assert res.spikes[ks].tolist() == [20.0]
    assert res.spike_gids[ks] == 1


def test_netstim_spike_times_accumulate(soma20):
    sim = hb.Simulation(hb.Cell(soma20).insert("pas"))
    stim = sim.net_stim(start=20.0, interval=7.3, number=6)
    key = sim.record_spikes(stim)
    res = sim.run(100.0)
    assert res.spikes[key].tolist() == [20.0, 27.3, 34.6, 41.9, 49.199999999999996, 56.49999999999999]


def test_vecstim_spike_times_follow_vecevent_arithmetic(soma20):
    """Each next VecStim time is vecevent.mod's ``t + etime - t``, i.e. ``(t + e) - t``;
    NEURON 9.0.2 records 0.762, 5.199999999999999, 7.300000000000001 for a VecStim playing
    0.762, 5.2, 7.3 (NetCon.record, dt 0.025, run to 10 ms)."""
    sim = hb.Simulation(hb.Cell(soma20).insert("pas"))
    stim = sim.vec_stim([0.762, 5.2, 7.3])
    key = sim.record_spikes(stim)
    res = sim.run(10.0)
    assert res.spikes[key].tolist() == [0.762, 5.199999999999999, 7.300000000000001]
    assert sim.run(10.0).spikes[key].tolist() == res.spikes[key].tolist()  # rewound


@pytest.mark.parametrize("backend", ["serial", "multicore"])
def test_threshold_detection_equals_the_network_reference(small, backend):
    """The step kernel's inlined threshold test fires exactly where
    :class:`hinesbatch.network.ThresholdDetector` fires on the recorded voltages: at every
    sample but the last, ``v - threshold > 0`` with the flag clear, ``ts = t_n + 1e-10``."""
    from hinesbatch.network import ThresholdDetector

    cells = [hb.Cell(small).insert("hh") for _ in range(2)]
    for amp, c in zip((0.3, 0.6), cells, strict=True):
        c.place("IClamp", "soma[0](0.5)", delay=1, dur=30, amp=amp)
    sim = hb.Simulation(cells, backend=backend)
    watched = [(0, "soma[0](0.5)", 10.0), (1, "soma[0](0.5)", -20.0),
               (1, "dend[2](1)", 0.0)]
    keys = []
    for gid, where, threshold in watched:
        src = sim.spike_source(gid, where, threshold=threshold)
        keys.append((sim.record("v", cell=gid, location=where), sim.record_spikes(src)))
    res = sim.run(40.0)
    for (kv, ks), (_, _, threshold) in zip(keys, watched, strict=True):
        detector = ThresholdDetector([0], thresholds=threshold)
        v, t = res[kv], res.time(kv)
        expected = [ts for n in range(t.size - 1)
                    for ts in detector.check(v[n:n + 1], t[n])[1]]
        assert len(expected) >= 2
        assert res.spikes[ks].tolist() == expected


def test_threshold_spikes_and_delay_zero(soma20):
    """ts = t_n + 1e-10 at the first sample above threshold; delay 0 acts on that step."""
    cell = hb.Cell(soma20).insert("hh")
    cell.place("IClamp", "soma[0](0.5)", delay=1, dur=20, amp=0.5)
    syn = cell.place("ExpSyn", "soma[0](0.5)", tau=1.0, e=-80.0)
    sim = hb.Simulation(cell)
    src = sim.spike_source(cell, "soma[0](0.5)")
    nc = sim.connect(src, syn, weight=0.001, delay=0.0, threshold=0.0)
    kv, kg = sim.record("v"), sim.record("g", target=syn)
    ks = sim.record_spikes(src)
    res = sim.run(20.0)
    v, t, spikes = res[kv], res.time(kv), res.spikes[ks]
    assert src.threshold == 0.0 and nc.delay == 0.0 and spikes.size >= 2
    for ts in spikes:
        n = int(np.flatnonzero(np.isclose(t, ts - 1e-10, rtol=0, atol=1e-9))[0])
        assert ts == t[n] + 1e-10
        assert v[n] > 0.0 >= v[n - 1]
        assert res[kg][n] == 0.0 or res[kg][n] < res[kg][n + 1]  # acts on step n itself


def _batch(small):
    a = hb.Cell(small, nseg=3).insert("hh")
    a.place("IClamp", "soma[0](0.5)", delay=1, dur=5, amp=0.3)
    b = hb.Cell(small, nseg={"all": 1, "dend": 5}, ra=80.0).insert("pas").insert(
        "hh", "soma", gnabar_hh=0.2)
    b.place("IClamp", "dend[1](0.9)", delay=0.5, dur=3, amp=0.2)
    s2 = b.place("Exp2Syn", "soma[0](0.5)", tau1=0.3, tau2=4.0)
    c = hb.Cell(REAL / "c91662.swc", nseg=1).insert("hh").insert("pas", "dend")
    c.place("SEClamp", "soma[0](0.5)", dur1=2, amp1=-50, dur2=3, amp2=10, rs=2.0)
    return [a, b, c], s2


def _run(cells, syn, backend, subset=None):
    sim = hb.Simulation(cells if subset is None else [cells[i] for i in subset],
                        backend=backend)
    gids = range(len(sim.cells))
    keys = [sim.record("v", cell=g) for g in gids]
    keys += [sim.record("m_hh", cell=g) for g in gids]
    if syn.cell in sim.cells:
        sim.connect(sim.spike_source(0), syn, weight=0.02, delay=0.3)
    return sim.run(8.0), keys


def test_serial_equals_multicore_bit_for_bit(small):
    cells, syn = _batch(small)
    r1, keys = _run(cells, syn, "serial")
    r2, _ = _run(cells, syn, "multicore")
    for k in keys:
        assert np.array_equal(r1[k], r2[k]), k


def test_batch_equals_each_cell_alone(small):
    cells, syn = _batch(small)
    together, keys = _run(cells[1:], syn, "serial")
    for i, cell in enumerate(cells[1:]):
        sim = hb.Simulation(cell)
        k = sim.record("v")
        assert np.array_equal(sim.run(8.0)[k], together[keys[i]])


def test_one_cell_given_several_times_is_several_cells(small):
    """A Cell listed three times (its densities read once) steps as three copies built
    apart: the same per-instance data, each copy's own, and the same traces."""
    def cell():
        c = hb.Cell(small, d_lambda=0.1).insert("hh").insert("pas", "dend", g_pas=2e-4)
        c.place("IClamp", "soma[0](0.5)", delay=1.0, dur=3.0, amp=0.5)
        return c
    shared, apart = hb.Simulation([cell()] * 3), hb.Simulation([cell() for _ in range(3)])
    runs = []
    for sim in (shared, apart):
        keys = [sim.record("v", cell=k) for k in range(3)]
        res = sim.run(5.0)
        runs.append([res[k] for k in keys])
    for m, data in apart._data.items():
        assert np.array_equal(shared._data[m], data), m
    for a, b in zip(*runs):
        assert np.array_equal(a, b)
    shared._data["hh"][0, 0] += 1.0         # each copy's instances are its own
    n = shared._data["hh"].shape[1] // 3
    assert shared._data["hh"][0, n] != shared._data["hh"][0, 0]


def test_recording_every_k_steps_and_assigned_at_t0(soma20):
    cell = hb.Cell(soma20).insert("hh")
    clamp = cell.place("IClamp", "soma[0](0.5)", delay=0, dur=1, amp=0.5)
    sim = hb.Simulation(cell)
    k1, k4 = sim.record("v"), sim.record("v", every=4)
    ki, kina = sim.record("i", target=clamp), sim.record("ina")
    res = sim.run(1.0)
    assert np.array_equal(res[k4], res[k1][::4]) and np.array_equal(res.time(k4),
                                                                   res.time(k1)[::4])
    assert res[ki][0] == 0.5                         # assembly at t = 0 sets i
    assert res[kina][0] != 0.0 and res.units[kina] == "mA/cm2"
    assert k4 == "v@0:soma[0](0.5)|every=4"
    assert res.t.size == 41


def test_time_is_accumulated(soma20):
    sim = hb.Simulation(hb.Cell(soma20).insert("pas"))
    k = sim.record("v")
    t = sim.run(20.0).time(k)
    assert t[200] == 5.0000000000000373 and t[800] == 19.9999999999994 and t.size == 801


def test_non_finite_state_names_cell_location_time(soma20):
    cell = hb.Cell(soma20).insert("hh")
    cell.place("IClamp", "soma[0](0.5)", delay=1, dur=1, amp=1.7e308)
    sim = hb.Simulation([hb.Cell(soma20).insert("pas"), cell])
    with pytest.raises(NonFiniteStateError, match=r"cell 1 at soma\[0\]\(.*\) at t = ") as err:
        sim.run(5.0)
    assert err.value.cell == 1 and 1.0 <= err.value.t_ms <= 1.1


def test_errors_name_what_and_where(soma20):
    cell = hb.Cell(soma20).insert("pas")
    syn = cell.place("ExpSyn", "soma[0](0.5)")
    sim = hb.Simulation(cell)
    with pytest.raises(ValueError, match=r"NetCon\[0\].*delay must be finite and >= 0"):
        sim.connect(sim.net_stim(), syn, delay=-1.0)
    with pytest.raises(ValueError, match="unknown variable 'vm'"):
        sim.record("vm")
    with pytest.raises(ValueError, match="hh has no variable 'q'"):
        sim.record("q_hh")
    sim.record("m_hh")
    with pytest.raises(ValueError, match=r"cannot record 'm_hh' at soma\[0\]\(0.5\) of cell 0: "
                                         "hh is not inserted there"):
        sim.run(1.0)
    with pytest.raises(ValueError, match="unknown backend 'tpu'; valid backends"):
        hb.Simulation(cell, backend="tpu")
    with pytest.raises(ValueError, match="noise"):
        sim.net_stim(noise=0.5)
    with pytest.raises(ValueError, match="VecStim times"):
        sim.vec_stim([2.0, 1.0])


def test_progress_reports_to_stderr_and_changes_nothing(soma20, capsys):
    cell = hb.Cell(soma20).insert("hh")
    cell.place("IClamp", "soma[0](0.5)", delay=0.5, dur=1, amp=0.5)
    sim = hb.Simulation(cell)
    key = sim.record("v")
    quiet = sim.run(3.0)[key]
    loud = sim.run(3.0, progress=True)[key]
    assert np.array_equal(quiet, loud)
    assert "simulated" in capsys.readouterr().err


def test_runs_repeat_from_initial_state(soma20):
    cell = hb.Cell(soma20).insert("hh")
    syn = cell.place("ExpSyn", "soma[0](0.5)", tau=2.0)
    sim = hb.Simulation(cell)
    sim.connect(sim.net_stim(start=1.0, interval=2.0, number=3), syn, weight=0.01)
    key = sim.record("v")
    assert np.array_equal(sim.run(10.0)[key], sim.run(10.0)[key])


def test_point_processes_on_one_node_add_in_reverse_creation_order(soma20):
    """NEURON prepends each new point process to its node's list, so same-node instances
    are added newest first (NEURON-COMPAT-ACTIVE §2)."""
    cell = hb.Cell(soma20).insert("pas")
    first = cell.place("IClamp", "soma[0](0.5)", amp=0.1)
    second = cell.place("IClamp", "soma[0](0.5)", amp=0.2)
    sim = hb.Simulation(cell)
    sim.run(0.025)
    index = sim._layout.pp_index
    assert index[id(second)][1] < index[id(first)][1]


def test_cells_differ_in_parameters_without_recompiling(soma20):
    from hinesbatch.engine import kernels

    cells = [hb.Cell(soma20).insert("hh", gnabar_hh=g) for g in (0.08, 0.12, 0.2)]
    for c in cells:
        c.place("IClamp", "soma[0](0.5)", delay=0.5, dur=5, amp=0.4)
    sim = hb.Simulation(cells, backend="serial")
    keys = [sim.record("v", cell=i) for i in range(3)]
    res = sim.run(6.0)
    peaks = [res[k].max() for k in keys]
    assert peaks[0] < peaks[1] < peaks[2]
    loaded = len(kernels._LOADED)
    other = hb.Cell(soma20).insert("hh", gnabar_hh=0.15)
    other.place("IClamp", "soma[0](0.5)", delay=0.5, dur=5, amp=0.4)
    hb.Simulation(other, backend="serial").run(1.0)  # other values, same mechanisms: the same kernel module
    assert len(kernels._LOADED) == loaded


def test_a_changed_dt_between_runs_rebuilds_the_model(soma20):
    """The capacitance term depends on dt: a second run after ``sim.dt`` changes must equal a
    fresh simulation at the new dt, not reuse the first run's matrix."""
    def model():
        cell = hb.Cell(soma20).insert("hh")
        cell.place("IClamp", "soma[0](0.5)", delay=0.1, dur=5.0, amp=0.3)
        sim = hb.Simulation(cell, dt=0.025, backend="serial")
        return sim, sim.record("v")

    sim, key = model()
    sim.run(1.0)
    sim.dt = 0.0125
    again = sim.run(3.0)[key]
    fresh, key2 = model()
    fresh.dt = 0.0125
    assert np.array_equal(again, fresh.run(3.0)[key2])


@pytest.mark.parametrize("backend", ["serial", "multicore"])
def test_a_second_run_starts_from_the_same_values(small, backend):
    """A run changes the states and synapses of every instance; the next run of the same
    simulation starts from the model's values again and repeats the first bit for bit.
    Cells of one morphology and decor share what the layout reads once; a cell with other
    values keeps its own: each cell equals the same cell simulated alone."""
    morph = hb.read_swc(small)

    def cell(i):
        c = hb.Cell(morph).insert("pas").insert("hh", gnabar_hh=0.2 if i == 2 else 0.12)
        if i == 1:
            c.set("gkbar_hh", 0.05, "dend")
        return c

    def simulation(ids):
        sim = hb.Simulation([cell(i) for i in ids], backend=backend)
        keys, syns = [], []
        for k, i in enumerate(ids):
            syn = sim.cells[k].place("ExpSyn", "soma[0](0.5)", tau=2.0, e=0.0)
            sim.connect(sim.vec_stim([0.5, 2.0 + i]), syn, weight=0.05, delay=0.5)
            keys.append(sim.record("v", cell=k, location="dend[0](0.5)"))
            syns.append(sim.record("g", target=syn))
        return sim, keys + syns

    sim, keys = simulation([0, 1, 2])
    first = sim.run(8.0)
    second = sim.run(8.0)
    for k in keys:
        assert np.array_equal(first[k], second[k])
    for i in range(3):
        alone, (v, g) = simulation([i])
        res = alone.run(8.0)
        assert np.array_equal(res[v], first[keys[i]])
        assert np.array_equal(res[g], first[keys[3 + i]])
    assert len({float(first[k].max()) for k in keys[:3]}) == 3


def test_chunk_order_puts_parents_first_and_keeps_siblings_in_order(small):
    """The order of a chunk's solve: a permutation within each chunk, every node after its
    parent, children of one parent in their node order, neighbours from different cells."""
    from hinesbatch.engine.kernels import chunk_order, chunks
    from hinesbatch.engine.layout import Layout

    morph = hb.read_swc(small)
    lay = Layout([hb.Cell(morph).insert("hh") for _ in range(5)], dt=0.025)
    off = chunks(lay.node_off, target=2 * int(lay.node_off[1]))
    order = chunk_order(lay.node_off, lay.depth, off)
    assert sorted(order.tolist()) == list(range(lay.n_nodes))
    position = np.empty_like(order)
    position[order] = np.arange(order.size)
    for k in range(off.size - 1):
        lo, hi = lay.node_off[off[k]], lay.node_off[off[k + 1]]
        assert set(order[lo:hi].tolist()) == set(range(lo, hi))
    has_parent = lay.parent >= 0
    assert (position[has_parent] > position[lay.parent[has_parent]]).all()
    for p in np.unique(lay.parent[has_parent]):
        kids = np.flatnonzero(lay.parent == p)
        assert (np.diff(position[kids]) > 0).all()
    assert lay.depth[order[0]] == 0 and order[1] == lay.node_off[1]   # the next cell's root


def test_chunk_order_of_single_cells_is_each_cells_level_order(small):
    """Chunks of one cell each: the order is the cells' own, which the by-depth sort of
    several cells' chunks also gives within one cell."""
    from hinesbatch.engine.kernels import chunk_order
    from hinesbatch.engine.layout import Layout

    morph = hb.read_swc(small)
    lay = Layout([hb.Cell(morph).insert("hh") for _ in range(3)], dt=0.025)
    single = np.arange(len(lay.cells) + 1, dtype=np.int64)
    assert chunk_order(lay.node_off, lay.depth, single).tolist() == list(range(lay.n_nodes))
    depth = lay.depth[:lay.node_off[1]]
    assert np.argsort(depth, kind="stable").tolist() == list(range(depth.size))


def test_a_model_run_again_makes_no_kernel_source(soma20, monkeypatch):
    """The kernel module of a set of mechanisms is made once per process: later runs, of
    the same simulation or a new one, neither generate nor hash its source again."""
    from hinesbatch.engine import kernels

    def build():
        cell = hb.Cell(soma20).insert("hh")
        cell.place("IClamp", "soma[0](0.5)", delay=0.5, dur=5, amp=0.4)
        return hb.Simulation(cell, backend="serial")

    sim = build()
    sim.run(1.0)
    made = []
    monkeypatch.setattr(kernels, "generate_source",
                        lambda *a, **k: made.append(a) or pytest.fail("source made again"))
    first = sim.run(1.0)
    build().run(1.0)
    assert made == []
    assert 0.0 < first.meta["step_seconds"]
