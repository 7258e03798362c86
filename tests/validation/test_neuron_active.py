"""hinesbatch's active simulator against NEURON 9.0.2: the same answers, to 1e-9 mV.

Every model is described once (``neuron_active.py``) and built in both simulators: in NEURON
through Import3d with NEURON's d_lambda rule, in hinesbatch through its public API
(``hb.Cell``, ``Cell.insert``, ``Cell.place``, ``hb.Simulation``, ``sim.record``,
``sim.record_spikes``). NEURON runs in fresh processes (one per model family, reset between
models). The fact sheet on active membranes (``NEURON-COMPAT-ACTIVE.md``) shows that
max |ΔV| = 0 is reachable on all of these.

Acceptance, for every test unless its docstring says more:

- every cell has NEURON's sections and nseg per section;
- the same sample times (|Δt| <= 1e-9 ms, the same count) for every recording;
- max |ΔV| <= 1e-9 mV at every recorded step of every ``v`` recording; other recorded
  variables within 1e-9 times max(1, their largest magnitude) (an SEClamp's ``i`` within
  1e-9 mV / rs);
- every spike source's times equal NEURON's ``NetCon.record`` exactly (float equality);
- the model is not trivial: NEURON records at least one threshold spike.

The tests skip, with the reason, while hinesbatch has no ``Simulation``.
"""
from __future__ import annotations

import warnings
from functools import cache

import neuron_active as na
import numpy as np
import pytest

pytestmark = [pytest.mark.validation, pytest.mark.neuron,
              pytest.mark.filterwarnings("ignore::UserWarning")]  # SWC notices of real files

V_TOLERANCE_MV = 1e-9
T_TOLERANCE_MS = 1e-9
USETABLE = [pytest.param(1, id="usetable1"), pytest.param(0, id="usetable0")]
#: NEURON refuses these at d_lambda 0.1 (test_neuron_active_reference.py checks it).
REFUSED = ("EC3-80604.CNG.swc", "v_e_purk2.CNG.swc")
FILES = sorted(p.name for p in na.REAL.glob("*.swc") if p.name not in REFUSED)


@pytest.fixture(scope="module")
def simulator():
    """Skip while hinesbatch cannot run active models; else the ``hinesbatch`` module."""
    reason = na.simulator_missing()
    if reason is not None:
        pytest.skip(reason)
    import hinesbatch

    return hinesbatch


@cache
def geometry(name: str, ra: float = 100.0):
    """hinesbatch's CellGeometry of a real file at d_lambda 0.1."""
    from hinesbatch.discretize import discretize

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return discretize(na.REAL / name, d_lambda=0.1, ra=ra)


def clamp_location(geo) -> str:
    """``soma[0](0.5)``, or the root section's middle for a cell without a soma."""
    if "soma[0]" in geo.section_names:
        return "soma[0](0.5)"
    root = int(np.flatnonzero(np.asarray(geo.section_parent) < 0)[0])
    return na.format_location(geo.section_names[root], 0.5)


def sweep_model(name: str, usetable: int) -> dict:
    """hh everywhere, d_lambda 0.1, Ra 100, IClamp 1 nA 5–55 ms, dt 0.025, 100 ms."""
    geo = geometry(name)
    clamp = clamp_location(geo)
    return na.hh_cell_model(na.REAL / name, usetable=usetable, d_lambda=0.1, ra=100.0,
                            clamp=clamp, amp=1.0, delay=5.0, dur=50.0, tstop=100.0, dt=0.025,
                            record=(clamp, na.distal_location(geo)),
                            states=("m_hh", "h_hh", "n_hh", "ina"))


@pytest.fixture(scope="module")
def sweep(simulator):
    """NEURON's results for every (file, usetable) of the hh sweep, from one process."""
    cases = [(name, ut) for name in FILES for ut in (1, 0)]
    results = na.run_models([sweep_model(name, ut) for name, ut in cases])
    return dict(zip(cases, results))


def assert_same(model: dict, nrn: dict, ours: dict) -> dict:
    """Check the module's acceptance criterion; returns max |Δ| per recording key."""
    assert nrn["error"] is None, f"NEURON failed: {nrn['error']}"
    for gid, nseg in nrn["nseg"].items():
        assert ours["nseg"][gid] == nseg, f"cell {gid}: sections or nseg differ from NEURON's"
    assert sum(s.size for k, s in nrn["spikes"].items()
               if "cell" in model["sources"][int(k)]) > 0, "NEURON recorded no threshold spike"
    tolerances = {}
    for rec in model["records"]:
        if rec["variable"] == "v":
            tolerances[rec["key"]] = V_TOLERANCE_MV
        elif "target" in rec and rec["variable"] == "i" and _kind(model, rec) == "SEClamp":
            tolerances[rec["key"]] = V_TOLERANCE_MV / _pp(model, rec)["params"]["rs"]
        else:
            scale = max(1.0, float(np.max(np.abs(nrn["traces"][rec["key"]]), initial=0.0)))
            tolerances[rec["key"]] = V_TOLERANCE_MV * scale
    errors, failures = {}, []
    for key, tol in tolerances.items():
        t_nrn, t_ours = nrn["times"][key], ours["times"][key]
        assert t_ours.size == t_nrn.size, (key, t_ours.size, t_nrn.size)
        assert na.max_abs_diff(t_ours, t_nrn) <= T_TOLERANCE_MS, key
        errors[key] = na.max_abs_diff(ours["traces"][key], nrn["traces"][key])
        if not errors[key] <= tol:
            diff = np.abs(ours["traces"][key] - nrn["traces"][key])
            step = int(np.argmax(np.nan_to_num(diff, nan=np.inf)))
            failures.append(f"{key}: max |Δ| = {errors[key]:.3g} > {tol:.3g} "
                            f"(first worst at t = {t_nrn[step]!r} ms)")
    for key, times in nrn["spikes"].items():
        mine = ours["spikes"][key]
        if not np.array_equal(mine, times):
            failures.append(f"spikes of source {key} ({model['sources'][int(key)]}): "
                            f"NEURON {times.tolist()}, hinesbatch {mine.tolist()}")
    assert not failures, "\n".join(failures)
    return errors


def _pp(model, rec):
    gid, index = rec["target"]
    return model["cells"][gid]["point_processes"][index]


def _kind(model, rec):
    return _pp(model, rec)["kind"]


@pytest.mark.parametrize("usetable", USETABLE)
@pytest.mark.parametrize("name", FILES)
def test_hh_everywhere_matches_neuron(sweep, name, usetable):
    """hh in every section of a real cell (d_lambda 0.1 at 100 Hz, Ra 100 Ω·cm, cm 1),
    IClamp 1 nA 5–55 ms at soma[0](0.5) (the root section's middle without a soma),
    dt 0.025 ms, 100 ms, celsius 6.3, v_init -65, usetable_hh as given.

    Acceptance (module docstring): v at the clamp location and at
    the segment farthest from it (path length) within 1e-9 mV at every step (m, h, n and
    ina there within 1e-9); the spike times of a 10 mV threshold at the clamp location
    equal exactly.
    """
    nrn = sweep[(name, usetable)]
    model = sweep_model(name, usetable)
    assert_same(model, nrn, na.run_hinesbatch(model))


@pytest.mark.parametrize(("celsius", "v_init"), [(16.3, -70.0), (22.0, -55.0), (6.3, -40.0)])
@pytest.mark.parametrize("usetable", USETABLE)
def test_celsius_and_v_init_match_neuron(simulator, usetable, celsius, v_init):
    """mp_ma_40984_gc2, hh everywhere, d_lambda 0.1, Ra 100, IClamp 1 nA 5–55 ms at
    soma[0](0.5), dt 0.025, 100 ms, at other temperatures (q10 = 3 and 3^1.57; the hh table
    built at that celsius) and resting points (-55 and -40 mV are where hh's vtrap takes
    its series branch).

    Acceptance (module docstring) for v, m_hh, h_hh, n_hh at the soma and the spikes.
    """
    model = na.hh_cell_model(na.REAL / "mp_ma_40984_gc2.CNG.swc", usetable=usetable,
                             celsius=celsius, v_init=v_init, states=("m_hh", "h_hh", "n_hh"))
    nrn = na.run_model(model)
    assert_same(model, nrn, na.run_hinesbatch(model))


@pytest.mark.parametrize("seclamp", [pytest.param(False, id="iclamps"),
                                     pytest.param(True, id="seclamp")])
@pytest.mark.parametrize("usetable", USETABLE)
def test_regions_and_clamps_match_neuron(simulator, usetable, seclamp):
    """c91662: pas (g 1e-4 S/cm², e -65 mV) in dend and apic, hh in soma and axon,
    d_lambda 0.1, Ra 100, dt 0.025, 100 ms; two IClamps at soma[0](0.5) (0.8 nA 5–55 ms,
    0.3 nA 60.0125–80 ms: an edge at a half-step tie) and at the distal segment either
    an IClamp (-0.2 nA 20–40 ms) or an SEClamp (rs 0.01 MΩ; -65, -20, -70 mV for 10, 20,
    30 ms).

    Acceptance (module docstring) for v, ina, m_hh at the soma, v distally, every clamp's
    i, and the soma's spike times.
    """
    distal = na.distal_location(geometry("c91662.swc"))
    model = na.regions_model(na.REAL / "c91662.swc", usetable=usetable, seclamp=seclamp,
                             distal=distal)
    nrn = na.run_model(model)
    assert_same(model, nrn, na.run_hinesbatch(model))


@pytest.mark.parametrize("usetable", USETABLE)
def test_two_cells_with_synapses_match_neuron(simulator, usetable):
    """c91662 (IClamp 1 nA 5–55 ms) → mp_ma_40984_gc2, both hh everywhere, d_lambda 0.1,
    Ra 100: a 10 mV threshold at the pre soma, delay 1 ms, weight 0.05 µS onto an ExpSyn
    (τ 2 ms) at the post soma and an Exp2Syn (0.5/5 ms) at the post cell's distal
    segment; a NetStim (20 + 7.3 k ms, 6 spikes, weight 0.01 µS) onto another ExpSyn
    (delay 0.5 ms) and Exp2Syn (delay 0.0123 ms) at the post soma; dt 0.025, 100 ms.

    Acceptance (module docstring) for v at both somas and the post dendrite, every
    synapse's g (and A, B), and the spikes of both cells and the NetStim.
    """
    post_dend = na.distal_location(geometry("mp_ma_40984_gc2.CNG.swc"))
    model = na.two_cell_model(usetable=usetable, weight=0.05, post_dend=post_dend)
    nrn = na.run_model(model)
    assert nrn["spikes"]["1"].size > 0, "the post cell must fire"
    assert_same(model, nrn, na.run_hinesbatch(model))


@pytest.mark.parametrize("usetable", USETABLE)
def test_ring_matches_neuron(simulator, usetable):
    """A ring of 4 ko20x-07 cells (hh everywhere, d_lambda 0.1, Ra 100): soma i (10 mV)
    → ExpSyn (τ 2 ms, e 0) at soma i+1 mod 4, weight 0.1 µS, delay 1 ms; a NetStim spike
    at 5 ms onto cell 0's ExpSyn (delay 0); dt 0.025, 100 ms.

    Acceptance (module docstring) for v at every soma, every ExpSyn's g and every cell's
    spikes (about ten each).
    """
    model = na.ring_model(4, usetable=usetable)
    nrn = na.run_model(model)
    assert all(nrn["spikes"][str(i)].size >= 2 for i in range(4)), "the ring must circulate"
    assert_same(model, nrn, na.run_hinesbatch(model))


@pytest.mark.parametrize("usetable", USETABLE)
def test_event_ties_match_neuron(simulator, tmp_path, usetable):
    """Event delivery at its ties on one hh compartment (``neuron_active.events_model``):
    NetStim spikes at 20 ms (delays 0, 0.0124, 0.0125, 0.0126, 0.025, 1 ms) and 3.0125 ms
    (delay 0), the soma's threshold spikes (delays 0, 0.0125, 1 ms), two equal-time events
    on one Exp2Syn, eleven point processes on one node, dt 0.025, 30 ms.

    Acceptance (module docstring) for v, every synapse's g and the Exp2Syn's A and B: an
    event acting one step early or late changes g by far more than the tolerance.
    """
    model = na.events_model(na.cylinder_swc(tmp_path), usetable=usetable)
    nrn = na.run_model(model)
    assert_same(model, nrn, na.run_hinesbatch(model))


@pytest.mark.parametrize("backend", ["serial", "multicore"])
def test_backends_match_neuron_on_a_batch(simulator, backend):
    """The ring above (usetable 1) with each CPU backend: four cells in one batch.

    Acceptance (module docstring).
    """
    model = na.ring_model(4, usetable=1)
    nrn = na.run_model(model)
    assert_same(model, nrn, na.run_hinesbatch(model, backend=backend))


@pytest.mark.slow
@pytest.mark.parametrize("usetable", USETABLE)
def test_long_firing_matches_neuron(simulator, usetable):
    """1000 ms of continuous firing: c91662, hh everywhere, d_lambda 0.1, Ra 100, IClamp
    1 nA from 5 ms to the end at soma[0](0.5), dt 0.025; v at the soma and the distal
    segment every 4th step.

    Acceptance (module docstring), and NEURON fires more than 30 spikes.
    """
    distal = na.distal_location(geometry("c91662.swc"))
    model = na.long_firing_model(na.REAL / "c91662.swc", usetable=usetable, distal=distal)
    nrn = na.run_model(model)
    assert nrn["spikes"]["0"].size > 30
    assert_same(model, nrn, na.run_hinesbatch(model))


@pytest.fixture(scope="module")
def ring_twice():
    """The ring model (usetable 1) run by NEURON in two separate processes."""
    model = na.ring_model(4, usetable=1)
    return model, na.run_model(model), na.run_model(model)


def test_acceptance_holds_for_neuron_against_itself(ring_twice):
    """NEURON in two fresh processes gives the same ring bit for bit.

    Acceptance: every trace's max |Δ| is exactly 0 and the module's criterion passes, so
    the reference is reproducible and the criterion is reachable.
    """
    model, first, second = ring_twice
    errors = assert_same(model, first, second)
    assert set(errors) == {rec["key"] for rec in model["records"]}
    assert max(errors.values()) == 0.0


@pytest.mark.parametrize(("defect", "message"), [
    ("v+2e-9", r"v@2: max \|Δ\| = 2e-09"), ("spike+1ulp", "spikes of source 1"),
    ("spike-missing", "spikes of source 3"), ("sample-missing", "g@0"),
    ("nan", r"g@1: max \|Δ\| = inf")])
def test_acceptance_rejects_a_small_defect(ring_twice, defect, message):
    """The module's criterion fails on the smallest defects it must catch.

    Acceptance: ``assert_same`` raises AssertionError when the other result has v off by
    2e-9 mV at one step, one spike one ulp late, one spike missing, one sample missing, or
    a NaN in a trace.
    """
    model, nrn, other = ring_twice
    other = {**other, "traces": dict(other["traces"]), "times": dict(other["times"]),
             "spikes": dict(other["spikes"])}
    if defect == "v+2e-9":
        v = other["traces"]["v@2"].copy()
        v[1234] += 2e-9
        other["traces"]["v@2"] = v
    elif defect == "spike+1ulp":
        s = other["spikes"]["1"].copy()
        s[3] = np.nextafter(s[3], np.inf)
        other["spikes"]["1"] = s
    elif defect == "spike-missing":
        other["spikes"]["3"] = other["spikes"]["3"][:-1]
    elif defect == "sample-missing":
        other["traces"]["g@0"] = other["traces"]["g@0"][:-1]
        other["times"]["g@0"] = other["times"]["g@0"][:-1]
    else:
        g = other["traces"]["g@1"].copy()
        g[10] = np.nan
        other["traces"]["g@1"] = g
    with pytest.raises(AssertionError, match=message):
        assert_same(model, nrn, other)
