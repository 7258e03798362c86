"""Passive simulations against NEURON 9 on real morphologies: max |ΔV| < 1e-6 mV.

Each case builds the same cell in both simulators (NEURON through Import3d, see
``neuron_build.py``; nseg 1, 3, or NEURON's own d_lambda rule at 0.1), inserts ``pas``
everywhere, puts an ``IClamp`` at ``soma[0](0.5)``, records ``v`` there with
``Vector.record`` and runs ``h.finitialize(v_init); h.continuerun(tstop)`` at fixed step.
Acceptance: the same number of samples, the same times, and max |ΔV| < 1e-6 mV.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hinesbatch.discretize import discretize
from hinesbatch.sim import simulate_passive

pytestmark = [pytest.mark.validation, pytest.mark.neuron]

REAL = Path(__file__).parents[1] / "data" / "morphologies" / "real"
FILES = {
    "c91662.swc": "NeuroMorpho three-point soma",
    "mp_ma_40984_gc2.CNG.swc": "single-point soma",
    "h10.CNG.swc": "three-point soma",
    "morph_ca1_n120.swc": "12-point soma in two runs (soma[0], soma[1])",
}
DISCRETIZATIONS = [{"nseg": 1}, {"nseg": 3}, {"d_lambda": 0.1}]
#: NEURON's defaults except the clamp: 0.5 nA from 1 to 6 ms (both edges inside the run).
DEFAULT_PROTOCOL = dict(tstop=10.0, dt=0.025, iclamp=(0.5, 1.0, 5.0), cm=1.0, ra=35.4,
                        g_pas=0.001, e_pas=-70.0, v_init=-65.0)
TOLERANCE_MV = 1e-6


def neuron_run(h, sections, *, tstop, dt, iclamp, g_pas, e_pas, v_init,
               clamp=("soma[0]", 0.5), record=("soma[0]", 0.5)):
    """Run the passive protocol in NEURON; returns (t, v) as float64 arrays."""
    h.load_file("stdrun.hoc")
    for sec in sections.values():
        sec.insert("pas")
        for seg in sec:
            seg.pas.g = g_pas
            seg.pas.e = e_pas
    stim = h.IClamp(sections[clamp[0]](clamp[1]))
    stim.amp, stim.delay, stim.dur = iclamp
    v = h.Vector().record(sections[record[0]](record[1])._ref_v)
    t = h.Vector().record(h._ref_t)
    h.dt = dt
    h.steps_per_ms = 1.0 / dt  # else stdrun's setdt() may change dt
    h.secondorder = 0
    h.finitialize(v_init)
    h.continuerun(tstop)
    assert h.dt == dt, f"NEURON changed dt to {h.dt}"
    return np.array(t), np.array(v)


def compare(ours, t_nrn, v_nrn) -> float:
    assert ours.t.size == t_nrn.size, (ours.t.size, t_nrn.size)
    np.testing.assert_allclose(ours.t, t_nrn, rtol=0, atol=1e-9)
    assert np.ptp(v_nrn) > 1.0, "the clamp must move the voltage"
    return float(np.max(np.abs(ours.v[0] - v_nrn)))


@pytest.mark.filterwarnings("ignore::UserWarning")  # SWC convention warnings of real files
@pytest.mark.parametrize("disc", DISCRETIZATIONS, ids=lambda d: "-".join(f"{k}{v}" for k, v in d.items()))
@pytest.mark.parametrize("name", list(FILES))
def test_passive_soma_trace_matches_neuron(neuron_h, name, disc):
    from neuron_build import build_neuron_cell

    path = REAL / name
    p = DEFAULT_PROTOCOL
    h, sections = build_neuron_cell(path, nseg=disc.get("nseg"), d_lambda=disc.get("d_lambda"),
                                    ra=p["ra"], cm=p["cm"])
    geo = discretize(path, ra=p["ra"], cm=p["cm"], **disc)
    nseg_nrn = {name: sec.nseg for name, sec in sections.items()}
    assert nseg_nrn == dict(zip(geo.section_names, geo.nseg.tolist()))
    t_nrn, v_nrn = neuron_run(h, sections, **{k: p[k] for k in
                                              ("tstop", "dt", "iclamp", "g_pas", "e_pas", "v_init")})
    ours = simulate_passive(geo, **{k: v for k, v in p.items() if k != "ra"}, backend="serial")
    err = compare(ours, t_nrn, v_nrn)
    assert err < TOLERANCE_MV, f"{name} {disc}: max |dV| = {err:.3e} mV"


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_non_default_parameters_dendritic_clamp_and_record(neuron_h):
    """Other Ra, cm, g_pas, e_pas, v_init, dt; clamp edges off the time grid; a dendrite."""
    from neuron_build import build_neuron_cell

    path = REAL / "c91662.swc"
    h, sections = build_neuron_cell(path, nseg=5, ra=100.0, cm=0.9)
    kw = dict(tstop=7.3, dt=0.01, iclamp=(-0.3, 0.513, 2.0061), g_pas=1e-4, e_pas=-62.0,
              v_init=-58.0)
    clamp, record = ("apic[10]", 0.3), ("dend[2]", 0.9)
    t_nrn, v_nrn = neuron_run(h, sections, clamp=clamp, record=record, **kw)
    ours = simulate_passive(path, nseg=5, ra=100.0, cm=0.9, clamp=clamp, record=record,
                            backend="serial", **kw)
    err = compare(ours, t_nrn, v_nrn)
    assert err < TOLERANCE_MV, f"max |dV| = {err:.3e} mV"


def test_rallpack1_cable_matches_neuron(neuron_h):
    """Rallpack 1's cable built natively in NEURON (no pt3d), clamp at cable(0)."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from neuron_build import delete_all_sections
    from test_rallpack import CM, DIAM_UM, E_REST, I0, LENGTH_UM, NSEG, RA, RM, cylinder

    h = neuron_h
    delete_all_sections()
    cable = h.Section(name="cable")
    cable.L, cable.diam, cable.nseg, cable.Ra, cable.cm = LENGTH_UM, DIAM_UM, NSEG, RA, CM
    kw = dict(tstop=20.0, dt=0.025, iclamp=(I0, 0.0, 1e9), g_pas=1 / RM, e_pas=E_REST,
              v_init=E_REST)
    for end in (0.0, 1.0):
        t_nrn, v_nrn = neuron_run(h, {"cable[0]": cable}, clamp=("cable[0]", 0.0),
                                  record=("cable[0]", end), **kw)
        ours = simulate_passive(cylinder(LENGTH_UM, DIAM_UM, NSEG, RA), clamp=("cable[0]", 0.0),
                                record=("cable[0]", end), backend="serial", **kw)
        err = compare(ours, t_nrn, v_nrn)
        assert err < TOLERANCE_MV, f"x = {end}: max |dV| = {err:.3e} mV"
