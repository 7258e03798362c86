"""Rallpack 1 (Bhalla, Bilitch & Bower 1992): a passive cable against its analytic solution.

Cable: one section, L = 1 mm, d = 1 µm, nseg = 1000, Ra = 100 Ω·cm, Rm = 40000 Ω·cm²
(g_pas = 1/Rm = 2.5e-5 S/cm²), Cm = 1 µF/cm², e_pas = v_init = -65 mV, 0.1 nA injected from
t = 0 at the x = 0 end, 250 ms. So λ = sqrt(Rm·d/(4·Ra)) = 1 mm (electrotonic length 1) and
τ = Rm·Cm = 40 ms.

Where the current goes: NEURON models Rallpack 1 with ``IClamp`` at ``cable(0)``, i.e. the
root section's x = 0 node. That node has no membrane and sits exactly at the cable's end,
joined to the first segment's centre by half a segment's resistance, so injecting there is
injecting at the sealed end x = 0 of the continuous cable (injecting into the first segment
instead would put it 0.5 µm inside). We record at the x = 0 and x = 1 nodes, the two ends.

Reference: the sealed-end finite cable with a current step at X = 0 (Rall; X = x/λ,
T = t/τ, L = l/λ, r_a = 4·Ra/(π·d²))::

    V(X,T) - E = I0·r_a·λ·[cosh(L-X)/sinh(L)
                 - (1/L)·(e^-T + 2·Σ_n cos(nπX/L)·e^-(1+(nπ/L)²)T / (1+(nπ/L)²))]

(the steady state in closed form minus the eigenfunction series of the transient, which
converges like e^-(nπ)²T). Acceptance: relative RMS error < 0.1 % at both ends, where
relative RMS = RMS(v - v_ref) / RMS(v_ref - E) over the samples at t > 0.
"""
from __future__ import annotations

import numpy as np
import pytest

from hinesbatch.discretize.geometry import CellGeometry
from hinesbatch.sim import simulate_passive

pytestmark = pytest.mark.validation

LENGTH_UM, DIAM_UM, NSEG = 1000.0, 1.0, 1000
RA, RM, CM, I0, E_REST = 100.0, 40000.0, 1.0, 0.1, -65.0
TSTOP = 250.0


def cylinder(length_um: float, diam_um: float, nseg: int, ra: float) -> CellGeometry:
    """One cylindrical section with NEURON's nodes: x = 0 root, nseg segments, x = 1 end."""
    seg = length_um / nseg
    half_ri = ra * (seg / 2) * 4 / (np.pi * diam_um**2) * 1e-2  # MΩ (Ω·cm·µm/µm² · 1e-2)
    n = nseg + 2
    ri = np.full(n, 2 * half_ri)
    ri[0], ri[1], ri[-1] = np.inf, half_ri, half_ri
    area = np.full(n, np.pi * diam_um * seg)
    area[0] = area[-1] = 0.0
    x = np.concatenate([[0.0], (np.arange(nseg) + 0.5) / nseg, [1.0]])
    return CellGeometry(
        parent=np.arange(-1, n - 1), area_um2=area, ri_megohm=ri,
        section=np.zeros(n, np.int64), x=x, has_membrane=(area > 0),
        section_names=("cable[0]",), nseg=np.array([nseg]), length_um=np.array([length_um]),
        section_parent=np.array([-1]), section_parent_x=np.array([0.0]),
        cm=CM, ra=ra, source="Rallpack 1 cable",
    )


def cable_analytic(x_um: float, t_ms: np.ndarray, *, n_terms: int) -> np.ndarray:
    """Sealed-end cable, current I0 [nA] stepped on at x = 0 at t = 0: v [mV] at x_um."""
    d_cm, ra, rm = DIAM_UM * 1e-4, RA, RM
    lam_cm = np.sqrt(rm * d_cm / (4 * ra))
    r_a = 4 * ra / (np.pi * d_cm**2)              # Ω/cm
    scale = I0 * 1e-9 * r_a * lam_cm * 1e3        # mV
    big_l = LENGTH_UM * 1e-4 / lam_cm
    xx = x_um * 1e-4 / lam_cm
    tt = np.asarray(t_ms, dtype=float) / (rm * CM * 1e-3)  # τ = Rm·Cm [ms]
    n = np.arange(1, n_terms + 1)[:, None]
    alpha2 = (n * np.pi / big_l) ** 2
    series = np.cos(n * np.pi * xx / big_l) * np.exp(-(1 + alpha2) * tt) / (1 + alpha2)
    transient = (np.exp(-tt) + 2 * series.sum(axis=0)) / big_l
    steady = np.cosh(big_l - xx) / np.sinh(big_l)
    return E_REST + scale * (steady - transient)


def relative_rms(v: np.ndarray, ref: np.ndarray) -> float:
    return float(np.sqrt(np.mean((v - ref) ** 2)) / np.sqrt(np.mean((ref - E_REST) ** 2)))


@pytest.fixture(scope="module")
def cable_geometry() -> CellGeometry:
    return cylinder(LENGTH_UM, DIAM_UM, NSEG, RA)


def run_cable(geometry: CellGeometry, dt: float, record_x: float):
    return simulate_passive(
        geometry, tstop=TSTOP, dt=dt, iclamp=(I0, 0.0, 1e9), g_pas=1 / RM, e_pas=E_REST,
        v_init=E_REST, clamp=("cable[0]", 0.0), record=("cable[0]", record_x), backend="serial",
    )


def test_analytic_reference_converged():
    t = np.array([0.005, 0.05, 1.0, 10.0, 250.0])
    for x in (0.0, LENGTH_UM):
        a = cable_analytic(x, t, n_terms=400)
        b = cable_analytic(x, t, n_terms=4000)
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-10)
    # Independent check of the closed-form steady state: the plain eigenfunction series at
    # X = 0, L = 1, T -> inf, summed to N terms plus its 1/n² tail, 2/(π²(N + 1/2)).
    big_n = 2_000_000
    n = np.arange(1, big_n + 1)
    series = 1.0 + 2 * np.sum(1 / (1 + (n * np.pi) ** 2)) + 2 / (np.pi**2 * (big_n + 0.5))
    scale = I0 * 1e-9 * (4 * RA / (np.pi * 1e-8)) * 0.1 * 1e3
    assert abs(E_REST + scale * series - cable_analytic(0.0, np.array([1e6]), n_terms=10)[0]) < 1e-9


def test_cylinder_matches_discretize_of_a_two_point_swc(tmp_path, cable_geometry):
    from hinesbatch.discretize import discretize

    swc = tmp_path / "cable.swc"
    swc.write_text(f"1 3 0 0 0 {DIAM_UM / 2} -1\n2 3 {LENGTH_UM} 0 0 {DIAM_UM / 2} 1\n")
    with pytest.warns(UserWarning, match="no soma"):
        geo = discretize(swc, nseg=NSEG, ra=RA)
    np.testing.assert_array_equal(geo.parent, cable_geometry.parent)
    np.testing.assert_allclose(geo.area_um2, cable_geometry.area_um2, rtol=1e-12)
    np.testing.assert_allclose(geo.ri_megohm[1:], cable_geometry.ri_megohm[1:], rtol=1e-9)


@pytest.mark.parametrize("end", [0.0, pytest.param(1.0, marks=pytest.mark.slow)])
def test_rallpack1_against_the_analytic_cable(cable_geometry, end):
    dt = 0.005  # ms: backward Euler's O(dt) error is ~2e-5 relative here (docs/simulation.md)
    res = run_cable(cable_geometry, dt, end)
    assert res.v.shape == (1, res.t.size) and res.t.size == int(round(TSTOP / dt)) + 1
    assert res.v[0, 0] == E_REST
    ref = cable_analytic(end * LENGTH_UM, res.t[1:], n_terms=600)
    err = relative_rms(res.v[0, 1:], ref)
    assert err < 1e-3, f"relative RMS error {err:.2e} at x = {end}"
    # the final voltage is the cable's input/transfer resistance times I0
    assert abs(res.v[0, -1] - ref[-1]) < 1e-3 * abs(ref[-1] - E_REST)


def test_rallpack1_error_is_first_order_in_dt(cable_geometry):
    """Halving dt halves the error: what remains is backward Euler's, not a modelling error."""
    errors = []
    for dt in (0.04, 0.02):
        res = run_cable(cable_geometry, dt, 1.0)
        errors.append(relative_rms(res.v[0, 1:], cable_analytic(LENGTH_UM, res.t[1:], n_terms=600)))
    assert 1.7 < errors[0] / errors[1] < 2.3, errors
