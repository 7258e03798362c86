"""The NEURON-side builders of ``neuron_active.py`` against NEURON 9.0.2's verified numbers.

These tests run NEURON only. They pin the builders (geometry, mechanisms, clamps, synapses,
NetCon, NetStim, recording, the run) to the values of the fact sheet on active membranes
(``NEURON-COMPAT-ACTIVE.md`` §9 and §12), so that a disagreement in the comparisons with
hinesbatch (``test_neuron_active.py``) is the simulator's and not the harness's. All models
run in one fresh NEURON process per module (:func:`neuron_active.run_models`), reset between
models. Values are compared with ``==``: they are NEURON's own doubles on this machine.
"""
from __future__ import annotations

import neuron_active as na
import numpy as np
import pytest

pytestmark = [pytest.mark.validation, pytest.mark.neuron]

#: §12: cylinder L = diam = 20 µm, hh, nseg 1, IClamp 0.5 nA from 0 for 1 ms, v_init -65,
#: dt 0.025: v at t = 0, dt, 2 dt, 3 dt and m at t = dt, per usetable_hh.
CYLINDER_V = {
    0: [-65.0, -64.02109764276888, -63.05756675875316, -62.10830474396522],
    1: [-65.0, -64.02109764276888, -63.05756560575416, -62.10829930157325],
}
CYLINDER_M_DT = {0: 0.053548959404668854, 1: 0.053549643583742194}
#: §12: rates(-65), exact and table alike.
RATES_65 = {"minf": 0.05293248525724958, "mtau": 0.2367668786856876,
            "hinf": 0.5961207535084603, "htau": 8.516010764406575,
            "ninf": 0.3176769140606974, "ntau": 5.458584687514421}
#: §12: rates(-64.3): the table interpolates between -65 and -64 mV, the exact form does not.
RATES_643 = {1: {"minf": 0.05754013588372681, "htau": 8.450055239828691},
             0: {"minf": 0.057467082514940315, "htau": 8.454321431595629}}
#: §12: Exp2Syn's factor for (tau1, tau2).
EXP2SYN_FACTOR = {(0.5, 5.0): 1.435055183349871, (0.1, 10.0): 1.0581977300905705}
#: §9 case (b): c91662, hh everywhere, d_lambda 0.1 (NEURON's default Ra 35.4), IClamp 1 nA
#: 5–55 ms at soma[0](0.5): 194 sections, 728 segments, first spike (NetCon.record).
C91662_SECTIONS, C91662_SEGMENTS, C91662_FIRST_SPIKE = 194, 728, 6.925000000100065
#: §6.5: NetStim start 20, interval 7.3, 6 spikes: the times accumulate.
NETSTIM_TIMES = [20.0, 27.3, 34.6, 41.9, 49.199999999999996, 56.49999999999999]
#: §9: files NEURON cannot build at d_lambda 0.1 ("lambda_f error: 0 diameter").
REFUSED = ("EC3-80604.CNG.swc", "v_e_purk2.CNG.swc")


def exp2syn_factor_model() -> dict:
    """The cylinder with one Exp2Syn per (tau1, tau2), each hit at t = 0 with weight 1.

    A NetStim starting at 0 (one spike, delay 0) is delivered inside ``finitialize``, so the
    sample of A at t = 0 is ``weight * factor`` (§6.2, §7).
    """
    model = na.cylinder_model(usetable=1, amp=0.0, states=())
    pps = model["cells"][0]["point_processes"]
    model["sources"].append({"net_stim": {"start": 0.0, "interval": 10.0, "number": 1}})
    for tau1, tau2 in EXP2SYN_FACTOR:
        pps.append({"kind": "Exp2Syn", "location": "soma[0](0.5)",
                    "params": {"tau1": tau1, "tau2": tau2, "e": 0.0}})
        k = len(pps) - 1
        model["connections"].append({"source": 1, "target": [0, k], "weight": 1.0,
                                     "delay": 0.0})
        model["records"].append({"key": f"A@{tau1}/{tau2}", "variable": "A", "target": [0, k]})
    return model


def netstim_model() -> dict:
    """The cylinder, unstimulated, and a NetStim (start 20, interval 7.3, number 6), 60 ms."""
    model = na.cylinder_model(usetable=1, amp=0.0, states=(), tstop=60.0)
    model["sources"] = [{"net_stim": {"start": 20.0, "interval": 7.3, "number": 6}}]
    return model


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """Every reference model, run in one NEURON process; results by name."""
    models = {
        "cylinder0": {**na.cylinder_model(usetable=0), "rates_at": [-65.0, -64.3]},
        "cylinder1": {**na.cylinder_model(usetable=1), "rates_at": [-65.0, -64.3]},
        "factor": exp2syn_factor_model(),
        "netstim": netstim_model(),
        "c91662_0": na.hh_cell_model(na.REAL / "c91662.swc", usetable=0, ra=35.4),
        "c91662_1": na.hh_cell_model(na.REAL / "c91662.swc", usetable=1, ra=35.4),
        "ring": na.ring_model(4, usetable=1),
        "events": na.events_model(na.cylinder_swc(tmp_path_factory.mktemp("cylinder"))),
        **{name: na.hh_cell_model(na.REAL / name) for name in REFUSED},
    }
    results = na.run_models(list(models.values()))
    return dict(zip(models, results))


@pytest.mark.parametrize("usetable", [0, 1])
def test_cylinder_trace_is_the_fact_sheets(reference, usetable):
    """§12 cylinder (L = diam = 20 µm, nseg 1, hh, IClamp 0.5 nA 0–1 ms, dt 0.025).

    Acceptance: t, v at the first four samples, m at t = dt and the initial gates
    (rates(-65)) equal the fact sheet's doubles exactly; the clamp's i is 0.5 nA from t = 0.
    """
    res = reference[f"cylinder{usetable}"]
    assert res["error"] is None, res["error"]
    assert res["t"][:4].tolist() == [0.0, 0.025, 0.05, 0.075]
    assert res["traces"]["v@soma[0](0.5)"][:4].tolist() == CYLINDER_V[usetable]
    assert res["traces"]["m_hh@soma[0](0.5)"][1] == CYLINDER_M_DT[usetable]
    for gate in "mhn":
        assert res["traces"][f"{gate}_hh@soma[0](0.5)"][0] == RATES_65[f"{gate}inf"]
    assert res["traces"]["i@IClamp[0]"].tolist() == [0.5] * res["t"].size


@pytest.mark.parametrize("usetable", [0, 1])
def test_hh_rates_are_the_fact_sheets(reference, usetable):
    """hh's rates(v) through ``setdata_hh``/``rates_hh`` after a run at celsius 6.3.

    Acceptance: at -65 mV all six values equal §12's (table and exact agree at integer
    mV); at -64.3 mV minf and htau equal §12's table values with usetable 1, and the exact
    values with usetable 0.
    """
    traces = reference[f"cylinder{usetable}"]["traces"]
    for name, value in RATES_65.items():
        assert traces[f"rates/{name}"][0] == value, name
    for name, value in RATES_643[usetable].items():
        assert traces[f"rates/{name}"][1] == value, name


def test_exp2syn_factor_is_the_fact_sheets(reference):
    """Exp2Syn's ``factor`` read as A at t = 0 after a weight-1 event at t = 0.

    Acceptance: 1.435055183349871 for τ 0.5/5 ms and 1.0581977300905705 for 0.1/10 ms
    (§12), exactly.
    """
    res = reference["factor"]
    assert res["error"] is None, res["error"]
    for (tau1, tau2), factor in EXP2SYN_FACTOR.items():
        assert res["traces"][f"A@{tau1}/{tau2}"][0] == factor


def test_netstim_spike_times_accumulate(reference):
    """NetStim start 20 ms, interval 7.3 ms, number 6, noise 0, 60 ms run.

    Acceptance: NetCon.record gives 20, 27.3, 34.6, 41.9, 49.199999999999996,
    56.49999999999999 exactly (§6.5: t += interval, not start + k·interval).
    """
    assert reference["netstim"]["spikes"]["0"].tolist() == NETSTIM_TIMES


@pytest.mark.parametrize("usetable", [0, 1])
def test_c91662_first_spike_is_the_fact_sheets(reference, usetable):
    """§9 case (b): c91662.swc, hh everywhere, d_lambda 0.1, Ra 35.4, cm 1, IClamp 1 nA
    5–55 ms at soma[0](0.5), dt 0.025, 100 ms, threshold 10 mV at soma[0](0.5).

    Acceptance: 194 sections and 728 segments; 3 spikes, the first at 6.925000000100065 ms
    exactly; every spike time is a recorded step time plus 1e-10 ms (§6.4).
    """
    res = reference[f"c91662_{usetable}"]
    assert res["error"] is None, res["error"]
    nseg = res["nseg"][0]
    assert (len(nseg), sum(nseg.values())) == (C91662_SECTIONS, C91662_SEGMENTS)
    spikes = res["spikes"]["0"]
    assert spikes.size == 3
    assert spikes[0] == C91662_FIRST_SPIKE
    steps = np.searchsorted(res["t"], spikes - 1e-10 - 1e-12)
    np.testing.assert_array_equal(res["t"][steps] + 1e-10, spikes)


def test_ring_delivers_around_the_ring(reference):
    """Ring of 4 ko20x-07 cells (hh, d_lambda 0.1, Ra 100): soma i → ExpSyn on soma i+1
    (weight 0.1 µS, delay 1 ms), cell 3 → cell 0, a NetStim spike at 5 ms kicks cell 0.

    Acceptance: the kick is recorded at 5.0; every cell fires at least twice; each cell's
    k-th spike comes more than the 1 ms delay after its predecessor's k-th spike (cell 0's
    first after the kick), so activity travels the ring.
    """
    res = reference["ring"]
    assert res["error"] is None, res["error"]
    spikes = [res["spikes"][str(i)] for i in range(4)]
    assert res["spikes"]["4"].tolist() == [5.0]
    assert min(s.size for s in spikes) >= 2
    assert spikes[0][0] > 5.0 + 0.0
    for i in range(1, 4):
        k = min(spikes[i].size, spikes[i - 1].size)
        assert np.all(spikes[i][:k] > spikes[i - 1][:k] + 1.0), i
    k = min(spikes[0].size - 1, spikes[3].size)
    assert np.all(spikes[0][1:k + 1] > spikes[3][:k] + 1.0)


@pytest.mark.parametrize("name", REFUSED)
def test_neuron_refuses_zero_diameter_at_d_lambda(reference, name):
    """The two real files with a zero radius: NEURON's d_lambda rule (lambda_f) refuses them.

    Acceptance: the build fails with NEURON's "lambda_f error: 0 diameter". The comparisons
    with hinesbatch leave these files out for that reason.
    """
    error = reference[name]["error"]
    assert error is not None and "lambda_f error: 0 diameter" in error, error


def test_events_act_on_neurons_steps(reference):
    """Event delivery at its ties (``neuron_active.events_model``: one hh compartment from a
    one-point soma SWC, eleven point processes on its node, dt 0.025).

    Acceptance, from the first nonzero sample of each synapse's g (an event acting on step n
    first shows at sample n + 1; §6.3, §6.4):

    - the NetStim spike at 20 ms with delays 0 and 0.0124 acts on step 800; 0.0125, 0.0126
      and 0.025 on step 801; 1 on step 840;
    - the NetStim spike at 3.0125 ms (recorded 3.0124999999999993) with delay 0 on step
      120;
    - a threshold spike first seen at sample k (ts = t_k + 1e-10) acts with delay 0 on step
      k, with 0.0125 on k + 1, with 1 on k + 40;
    - two events at 21 ms on the Exp2Syn: A and B on step 840, its g one step later.
    """
    res = reference["events"]
    assert res["error"] is None, res["error"]

    def first(key):
        return int(np.flatnonzero(res["traces"][key])[0])

    assert res["spikes"]["1"].tolist() == [20.0]
    assert res["spikes"]["2"].tolist() == [3.0124999999999993]
    steps = [800, 800, 801, 801, 801, 840]
    assert [first(f"g@ExpSyn[{k}]") - 1 for k in range(6)] == steps
    assert first("g@ExpSyn[6]") - 1 == 120
    ts = res["spikes"]["0"][0]
    k = int(np.flatnonzero(res["t"] + 1e-10 == ts)[0])
    assert res["traces"]["v"][k] > 10.0 >= res["traces"]["v"][k - 1]
    assert [first(f"g@ExpSyn[{7 + j}]") - 1 for j in range(3)] == [k, k + 1, k + 40]
    assert (first("A@Exp2Syn") - 1, first("B@Exp2Syn") - 1, first("g@Exp2Syn") - 1) == (
        840, 840, 841)
