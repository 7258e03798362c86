"""The passive time loop: NEURON's numbers, NEURON's matrix, the two assemblers, batches.

References: values NEURON 9.0.2 printed, NEURON's per-area matrix written out densely from
its formulas (docs/simulation.md), and a dense ``np.linalg.solve`` stand-in for the plan.
"""
from __future__ import annotations

import numpy as np
import pytest

from hinesbatch.discretize.geometry import CellGeometry
from hinesbatch.sim.assembly import ArrayAssembler, NumbaAssembler, passive_system
from hinesbatch.sim.passive import run_passive, simulate_passive
from hinesbatch.tree.structure import MonoBatch


class DensePlan:
    """Stand-in for a Plan: solves every cell with ``np.linalg.solve`` on the dense matrix."""

    xp = np
    backend_name = "dense"

    def __init__(self, structure: MonoBatch):
        self.structure = structure
        self.calls = 0

    def solve(self, d, rhs, *, overwrite=False, check_finite=True):
        self.calls += 1
        cell = self.structure.cell
        x = np.stack([np.linalg.solve(cell.to_dense(d[c]), rhs[c]) for c in range(d.shape[0])])
        rhs[...] = x
        return rhs


def geometry(parent, area, ri, has_membrane, section, x, names, nseg, **kw) -> CellGeometry:
    n_sec = len(names)
    return CellGeometry(
        parent=np.asarray(parent, np.int64), area_um2=np.asarray(area, float),
        ri_megohm=np.asarray(ri, float), section=np.asarray(section, np.int64),
        x=np.asarray(x, float), has_membrane=np.asarray(has_membrane, bool),
        section_names=tuple(names), nseg=np.asarray(nseg, np.int64),
        length_um=np.ones(n_sec), section_parent=np.full(n_sec, -1),
        section_parent_x=np.zeros(n_sec), **kw,
    )


def single_soma() -> CellGeometry:
    """Single-sample soma r = 5 µm, Ra 35.4, nseg 1 (numbers NEURON 9.0.2 printed)."""
    return geometry(
        parent=[-1, 0, 1], area=[0.0, 314.1592653589793, 0.0],
        ri=[np.inf, 0.022536339941812384, 0.02253633994181238],
        has_membrane=[False, True, False], section=[0, 0, 0], x=[0.0, 0.5, 1.0],
        names=["soma[0]"], nseg=[1], source="single-sample soma r=5",
    )


def soma_dend() -> CellGeometry:
    """NEURON 9.0.2's numbers for a soma + 3-segment dendrite (Ra 100), dendrite wired at soma(0.5)."""
    return geometry(
        parent=[-1, 0, 1, 1, 3, 4, 5],
        area=[0, 314.1592653589793, 0, 18.84955592153876, 18.849555921538766, 14.33217155903711, 0],
        ri=[np.inf, 0.0636619772, 0.0636619772, 0.47746482927568606, 0.9549296585513721,
            1.1140846016432677, 1.2732395447351628],
        has_membrane=[0, 1, 0, 1, 1, 1, 0], section=[0, 0, 0, 1, 1, 1, 1],
        x=[0, 0.5, 1, 1 / 6, 0.5, 5 / 6, 1], names=["soma[0]", "dend[0]"], nseg=[1, 3],
        ra=100.0, source="soma+dend",
    )


def neuron_matrix(geo: CellGeometry, *, dt, cm, g_pas):
    """NEURON's per-area matrix (S/cm²) (treeset.cpp), densely, and the row areas."""
    n = geo.n_nodes
    area = np.where(geo.has_membrane, geo.area_um2, 100.0)
    mem = geo.has_membrane.astype(float)
    a = np.diag(mem * (1e-3 * cm / dt + g_pas))
    for i in range(1, n):
        p, g = geo.parent[i], 1.0 / geo.ri_megohm[i]
        a[i, p] += -100 * g / area[i]          # b_i
        a[p, i] += -100 * g / area[p]          # a_i
        a[i, i] += 100 * g / area[i]
        a[p, p] += 100 * g / area[p]
    return a, area


def test_neuron_first_steps_single_sample_soma():
    # NEURON 9.0.2's fixed step: cm 1, g 1e-4, e -65, 0.5 nA from t = 0, dt 0.025.
    res = simulate_passive(single_soma(), tstop=0.05, dt=0.025, iclamp=(0.5, 0.0, 1e9),
                           g_pas=1e-4, e_pas=-65.0, v_init=-65.0, backend="serial")
    assert res.v.shape == (1, 3)
    np.testing.assert_allclose(res.v[0], [-65.0, -61.031048800700916, -57.0719952353153],
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(res.t, [0.0, 0.025, 0.05], rtol=0, atol=1e-15)


def test_symmetric_form_is_neurons_matrix_scaled_by_area():
    geo, dt, cm, g_pas = soma_dend(), 0.025, 1.3, 2e-4
    system = passive_system(geo, dt=dt, cm=cm, g_pas=g_pas, e_pas=-70.0)
    ours = system.structure.to_dense(system.diagonal_uS)
    a, area = neuron_matrix(geo, dt=dt, cm=cm, g_pas=g_pas)
    np.testing.assert_allclose(ours, a * area[:, None] / 100, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(ours, ours.T, rtol=0, atol=0)


@pytest.mark.parametrize("assembler", [NumbaAssembler, ArrayAssembler])
def test_rhs_is_neurons_rhs_scaled_by_area(assembler):
    geo, dt, cm, g_pas, e = soma_dend(), 0.025, 1.0, 1e-3, -70.0
    system = passive_system(geo, dt=dt, cm=cm, g_pas=g_pas, e_pas=e)
    rng = np.random.default_rng(1)
    v = -65 + 10 * rng.standard_normal((3, geo.n_nodes))
    d = np.full_like(v, np.nan)
    rhs = np.full_like(v, np.nan)
    stim, amp = 4, 0.37
    assembler(system, np).assemble(v, d, rhs, stim, amp)
    a, area = neuron_matrix(geo, dt=dt, cm=0.0, g_pas=0.0)  # M alone
    mem = geo.has_membrane.astype(float)
    for c in range(3):
        s = np.zeros(geo.n_nodes)
        s[stim] = 100 * amp / area[stim]
        expected = -mem * g_pas * (v[c] - e) + s - a @ v[c]  # mA/cm², NEURON's RHS
        np.testing.assert_allclose(rhs[c], expected * area / 100, rtol=1e-12, atol=1e-11)
        np.testing.assert_array_equal(d[c], system.diagonal_uS)


def test_assemblers_agree_on_a_batch():
    system = passive_system(soma_dend(), dt=0.01, cm=1.0, g_pas=1e-3, e_pas=-70.0)
    v = np.random.default_rng(2).normal(-60, 5, (5, system.n_nodes))
    out = []
    for cls in (NumbaAssembler, ArrayAssembler):
        d, rhs = np.full_like(v, np.nan), np.full_like(v, np.nan)
        cls(system, np).assemble(v, d, rhs, 1, -0.2)
        out.append((d, rhs))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-14, atol=1e-12)


def test_run_passive_against_closed_form_backward_euler():
    """The loop equals NEURON's step (C+G+M)·Δv = -G(v-e) + s - M·v, v += Δv, in NEURON's
    per-area units with its non-symmetric matrix, and the algebraically equal
    (C+G+M)·v' = C·v + G·e + s. The dendrite's axial terms are ~500 times its capacitive
    ones, so each form rounds differently by ~1e-11 mV: the bound is 1e-9 mV."""
    geo, dt, cm, g_pas, e, v0 = soma_dend(), 0.05, 1.0, 5e-4, -70.0, -65.0
    system = passive_system(geo, dt=dt, cm=cm, g_pas=g_pas, e_pas=e)
    amps = np.where((np.arange(40) + 0.5) * dt >= 0.5, 0.3, 0.0)
    plan = DensePlan(MonoBatch(system.structure, 2))
    v, _ = run_passive(system, plan, v_init=v0, amps=amps, stim_node=4, record_node=1)
    assert plan.calls == 40
    a, area = neuron_matrix(geo, dt=dt, cm=cm, g_pas=g_pas)
    mem = geo.has_membrane.astype(float)
    c = mem * 1e-3 * cm / dt
    m = a - np.diag(c + mem * g_pas)
    x = np.full(geo.n_nodes, v0)
    y = x.copy()
    expected, direct = [x[1]], [y[1]]
    for amp in amps:
        s = np.zeros(geo.n_nodes)
        s[4] = 100 * amp / area[4]
        x = x + np.linalg.solve(a, -mem * g_pas * (x - e) + s - m @ x)
        y = np.linalg.solve(a, c * y + mem * g_pas * e + s)
        expected.append(x[1])
        direct.append(y[1])
    assert v.shape == (2, 41)
    assert np.ptp(expected) > 10  # the clamp did act
    np.testing.assert_allclose(v[0], expected, rtol=0, atol=1e-9)
    np.testing.assert_allclose(v[0], direct, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(v[0], v[1])


def test_steady_state_is_ohms_law_on_one_compartment():
    # Long run of the single soma: v -> e + I/(g_pas·A) (the x=0 and x=1 nodes carry no current).
    geo = single_soma()
    amp, g_pas, e = 0.05, 1e-3, -70.0
    res = simulate_passive(geo, tstop=40.0, dt=0.025, iclamp=(amp, 0.0, 1e9), g_pas=g_pas,
                           e_pas=e, v_init=e, backend="serial")
    v_inf = e + amp / (g_pas * 314.1592653589793 * 1e-2)
    assert abs(res.v[0, -1] - v_inf) < 1e-9


REAL = __import__("pathlib").Path(__file__).parents[1] / "data" / "morphologies" / "real"


def test_batch_of_copies_equals_one_cell_on_every_cpu_backend():
    one = simulate_passive(soma_dend(), tstop=2.0, iclamp=(0.2, 0.3, 1.0), backend="serial")
    for backend in ("serial", "multicore"):
        many = simulate_passive(soma_dend(), tstop=2.0, iclamp=(0.2, 0.3, 1.0), n_cells=5,
                                backend=backend)
        assert many.v.shape == (5, one.t.size)
        np.testing.assert_array_equal(many.v, np.broadcast_to(one.v, many.v.shape))
        assert many.params["backend"] == backend


def test_default_morphology_and_params_are_neurons():
    res = simulate_passive(tstop=0.1, backend="serial")
    p = res.params
    assert p["morphology"].endswith("c91662.swc")
    assert (p["cm_uF_per_cm2"], p["ra_ohm_cm"], p["g_pas_S_per_cm2"], p["e_pas_mV"],
            p["v_init_mV"], p["dt_ms"]) == (1.0, 35.4, 0.001, -70.0, -65.0, 0.025)
    assert res.t.size == 5 and res.v[0, 0] == -65.0
    assert res.info["n_nodes"] == 389  # nseg 1 (NEURON's default): 194 sections + 194 + 1


def test_cell_without_soma_says_how_to_choose_the_clamp():
    path = REAL / "Gad1-F-600000.CNG.swc"
    with pytest.warns(UserWarning), pytest.raises(ValueError, match=r"no section 'soma\[0\]'.*--clamp"):
        simulate_passive(path, tstop=0.1)
    with pytest.warns(UserWarning):
        res = simulate_passive(path, tstop=0.5, clamp=("axon[0]", 0.5), record=("axon[3]", 1.0),
                               iclamp=(0.1, 0.0, 1.0), backend="serial")
    assert res.params["record"]["section"] == "axon[3]" and np.ptp(res.v) > 0


@pytest.mark.parametrize("kw, error, match", [
    (dict(n_cells=0), ValueError, "n_cells must be >= 1"),
    (dict(n_cells=2.0), TypeError, "n_cells must be an integer"),
    (dict(g_pas=-1e-3), ValueError, "g_pas must be finite and >= 0"),
    (dict(v_init=float("nan")), ValueError, "v_init must be finite"),
    (dict(dt=0.0), ValueError, "dt must be a positive"),
    (dict(iclamp=(1.0, 2.0)), TypeError, r"iclamp must be \(amp"),
    (dict(record=("soma[0]", 2.0)), ValueError, r"x must lie in \[0, 1\]"),
    (dict(clamp="soma[0](0.5)"), TypeError, r"clamp must be \(section name, x\)"),
    (dict(nseg=3), ValueError, "already discretized"),
    (dict(ra=100.0), ValueError, "discretized with Ra = 35.4"),
    (dict(backend="nope"), ValueError, "valid backends"),
])
def test_bad_arguments_are_named(kw, error, match):
    with pytest.raises(error, match=match):
        simulate_passive(single_soma(), tstop=0.1, **kw)


def test_zero_area_clamp_node_is_refused():
    geo = single_soma()
    zero = geometry(parent=geo.parent, area=[0.0, 0.0, 0.0], ri=geo.ri_megohm,
                    has_membrane=geo.has_membrane, section=geo.section, x=geo.x,
                    names=geo.section_names, nseg=geo.nseg, source="zero soma")
    with pytest.raises(ValueError, match="zero membrane area"):
        simulate_passive(zero, tstop=0.1)


def test_progress_bar_goes_to_stderr(capsys):
    simulate_passive(single_soma(), tstop=1.0, backend="serial", progress=True)
    err = capsys.readouterr().err
    assert "step/s" in err and "/40 " in err
    simulate_passive(single_soma(), tstop=1.0, backend="serial", progress=None)
    assert capsys.readouterr().err == ""  # short run, not a terminal


def test_auto_passes_threads_over_for_a_small_batch_and_says_why():
    from hinesbatch import plan
    from hinesbatch.solvers import registry

    res = simulate_passive(single_soma(), tstop=0.1, n_cells=2)
    assert res.params["backend"] == "serial"  # too small for threads, and for a GPU launch
    assert "multicore passed over" in res.info["backend"]
    big = MonoBatch(passive_system(single_soma(), dt=0.025, cm=1.0, g_pas=1e-3,
                                   e_pas=-70.0).structure, 20_000)
    gpu_here = "gpu" in registry.names() and registry.get("gpu").available()[0]
    assert plan(big).backend_name == ("gpu" if gpu_here else "multicore")


def test_array_assembler_loop_equals_numba_loop(monkeypatch):
    """The array-generic path (what device state uses) steps like the Numba path, on NumPy."""
    from hinesbatch.sim import assembly

    kw = dict(tstop=3.0, iclamp=(0.4, 0.5, 1.5), n_cells=3, backend="serial")
    numba_run = simulate_passive(soma_dend(), **kw)
    monkeypatch.setattr(assembly, "_ASSEMBLERS", {})  # every module -> ArrayAssembler
    array_run = simulate_passive(soma_dend(), **kw)
    assert np.ptp(numba_run.v) > 1.0
    np.testing.assert_allclose(array_run.v, numba_run.v, rtol=0, atol=1e-10)


def test_a_morphology_simulates_like_its_file():
    from hinesbatch import read_swc

    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "data" / "morphologies" / "real" / "h10.CNG.swc"
    a = simulate_passive(path, tstop=1.0, nseg=2, backend="serial")
    b = simulate_passive(read_swc(path), tstop=1.0, nseg=2, backend="serial")
    np.testing.assert_array_equal(a.v, b.v)
    with pytest.raises(TypeError, match="a Morphology, an SWC path or None, got int"):
        simulate_passive(3, tstop=1.0)
