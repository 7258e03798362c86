"""hinesbatch.discretize: NEURON's numbers (printed by NEURON 9.0.2), nodes, errors, Hines structure.

The numbers below were produced by NEURON 9.0.2 (printed with repr); the comparison with
NEURON itself on every real file is tests/validation/test_neuron_geometry.py.
"""
from __future__ import annotations

import io
import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from hinesbatch.discretize import CellGeometry, discretize
from hinesbatch.morphology import (SWCRadiusClampedWarning, SWCRadiusError, SWCWarning,
                                   read_swc)

REAL = Path(__file__).resolve().parents[1] / "data" / "morphologies" / "real"
EXACT = dict(rel=4e-16, abs=0)  # NEURON's value to 1-2 ulp


def cell(text: str):
    """A Morphology from inline SWC rows ("id type x y z r parent / ...")."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SWCWarning)
        return read_swc(io.StringIO(text.replace(" / ", "\n") + "\n"))


def segments(geometry: CellGeometry, name: str) -> np.ndarray:
    k = geometry.section_names.index(name)
    return np.flatnonzero((geometry.section == k) & geometry.has_membrane)


# -- small numbers printed by NEURON 9.0.2 -----------------------------------------------------

def test_one_point_soma_is_a_cylinder_of_length_and_diameter_d():
    g = discretize(cell("1 1 0 0 0 5 -1"), nseg=1, ra=35.4)
    assert g.section_names == ("soma[0]",) and g.soma == "one-point"
    (seg,) = segments(g, "soma[0]")
    assert g.area_um2[seg] == pytest.approx(314.1592653589793, **EXACT)
    assert g.ri_megohm[seg] == pytest.approx(0.022536339941812384, **EXACT)  # left half only
    assert g.ri_megohm[g.node("soma[0]", 1.0)] == pytest.approx(0.02253633994181238, **EXACT)
    assert g.length_um[0] == 10.0


def test_wired_dendrite_on_one_point_soma():
    g = discretize(cell("1 1 0 0 0 5 -1 / 2 3 5 0 0 1 1 / 3 3 11 0 0 1 2 / 4 3 14 0 0 0.5 3"),
                   nseg=3, ra=100.0)
    k = g.section_names.index("dend[0]")
    assert g.section_parent[k] == 0 and g.section_parent_x[k] == 0.5
    assert g.length_um[k] == 9.0  # the wire from the soma centre adds no length
    seg = segments(g, "dend[0]")
    np.testing.assert_allclose(
        g.area_um2[seg], [18.84955592153876, 18.849555921538766, 14.33217155903711], rtol=4e-16)
    np.testing.assert_allclose(
        g.ri_megohm[seg], [0.47746482927568606, 0.9549296585513721, 1.1140846016432677],
        rtol=4e-16)
    assert g.ri_megohm[g.node("dend[0]", 1.0)] == pytest.approx(1.2732395447351628, **EXACT)
    # dend[0](0) is the soma(0.5) node: NEURON's dend[0](0).ri() returns soma(0.5).ri()
    assert g.node("dend[0]", 0.0) == g.node("soma[0]", 0.5) == g.parent[seg[0]]


def test_diameter_step_adds_an_annulus_to_the_lower_segment():
    # pt3d (5,0,0,2) (15,0,0,2) (15,0,0,4) (25,0,0,4): the step sits on the segment boundary
    g = discretize(cell("1 1 0 0 0 5 -1 / 2 3 5 0 0 1 1 / 3 3 15 0 0 1 2 / 4 3 15 0 0 2 3 / "
                        "5 3 25 0 0 2 4"), nseg=2, ra=35.4)
    seg = segments(g, "dend[0]")
    np.testing.assert_allclose(g.area_um2[seg], [72.25663103256525, 125.66370614359172],
                               rtol=4e-16)
    assert g.area_um2[seg[0]] == pytest.approx(math.pi * 2 * 10 + math.pi * 3, rel=1e-15)
    assert g.ri_megohm[g.node("dend[0]", 0.75)] == pytest.approx(0.704260623181637, **EXACT)


def test_float32_taper():
    g = discretize(cell("1 1 0 0 0 5 -1 / 2 2 6 2 3 0.7 1 / 3 2 21 2 3 0.5 2"), nseg=1, ra=35.4)
    (seg,) = segments(g, "axon[0]")
    assert g.area_um2[seg] == pytest.approx(56.5536935270701, **EXACT)
    assert g.ri_megohm[seg] == pytest.approx(2.012173263346643, **EXACT)
    assert g.diam_um[seg] == pytest.approx(1.199999988079071, **EXACT)


def test_taper_inside_one_segment_uses_frustum_area():
    # Jaxley #650: NEURON makes one section dend_0[0] of this two-sample type-0 file
    g = discretize(cell("1 0 0 0 0 2.0 -1 / 2 0 0 1 0 0.2 1"), nseg=1)
    assert g.section_names == ("dend_0[0]",) and g.soma == "none"
    assert g.area_um2[segments(g, "dend_0[0]")[0]] == pytest.approx(14.231657447874195, **EXACT)


# -- analytic checks -------------------------------------------------------------------------

@pytest.mark.parametrize("nseg", [1, 2, 5])
def test_cylinder_area_and_ri_are_the_cable_formulas(nseg):
    length, diam, ra = 100.0, 2.0, 123.0
    g = discretize(cell(f"1 2 0 0 0 {diam / 2} -1 / 2 2 {length} 0 0 {diam / 2} 1"),
                   nseg=nseg, ra=ra)
    seg = segments(g, "axon[0]")
    dx = length / nseg
    half = 1e-2 * ra * (dx / 2) / (math.pi * diam**2 / 4)  # MΩ
    np.testing.assert_allclose(g.area_um2[seg], math.pi * diam * dx, rtol=1e-14)
    np.testing.assert_allclose(g.ri_megohm[seg], [half] + [2 * half] * (nseg - 1), rtol=1e-14)
    assert g.ri_megohm[g.node("axon[0]", 1.0)] == pytest.approx(half, rel=1e-14)
    np.testing.assert_allclose(g.x[seg], (np.arange(nseg) + 0.5) / nseg)


def test_frustum_area_and_resistance():
    # one linear taper, nseg 1: slant area of the frustum; left-half ri = ∫ 4Ra/(π d²) ds
    r1, r2, length, ra = 2.0, 0.5, 30.0, 100.0
    g = discretize(cell(f"1 3 0 0 0 {r1} -1 / 2 3 {length} 0 0 {r2} 1"), nseg=1, ra=ra)
    (seg,) = segments(g, "dend[0]")
    area = math.pi * (r1 + r2) * math.hypot(length, r1 - r2)
    d1, dmid = 2 * r1, r1 + r2
    ri_left = 1e-2 * 4 * ra / math.pi * (length / 2) / (d1 * dmid)
    assert g.area_um2[seg] == pytest.approx(area, rel=1e-13)
    assert g.ri_megohm[seg] == pytest.approx(ri_left, rel=1e-13)


def test_d_lambda_on_a_cylinder_matches_the_length_constant():
    # λ_f(100 Hz) = 1e5·sqrt(d/(4π·f·Ra·cm)) [µm] for a cylinder;
    # nseg = int((L/(d_lambda·λ_f) + 0.9)/2)·2 + 1
    length, diam, ra, cm = 1000.0, 1.0, 100.0, 1.0
    morph = cell(f"1 3 0 0 0 {diam / 2} -1 / 2 3 {length} 0 0 {diam / 2} 1")
    lam = 1e5 * math.sqrt(diam / (4 * math.pi * 100.0 * ra * cm))
    for d_lambda in (0.3, 0.1, 0.03):
        expect = int((length / (d_lambda * lam) + 0.9) / 2) * 2 + 1
        g = discretize(morph, d_lambda=d_lambda, ra=ra, cm=cm)
        assert g.nseg.tolist() == [expect] and expect % 2 == 1
    assert discretize(morph, d_lambda=100.0).nseg.tolist() == [1]
    # a higher frequency shortens λ and needs more segments
    assert discretize(morph, d_lambda=0.1, freq=1000.0).nseg[0] > expect // 3


# -- nodes, mapping, Hines structure -----------------------------------------------------------

@pytest.fixture(scope="module")
def pyramidal():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SWCWarning)
        return discretize(REAL / "c91662.swc", nseg=2)


def test_node_set_is_neurons_in_hines_order(pyramidal):
    g = pyramidal
    n = g.n_nodes
    assert n == 1 + int(np.sum(g.nseg + 1))
    assert g.parent[0] == -1 and np.all(g.parent[1:] < np.arange(1, n))
    assert np.all(g.parent[1:] >= 0)
    assert g.has_membrane.sum() == g.nseg.sum()
    assert np.all(g.area_um2[~g.has_membrane] == 0) and np.all(g.area_um2[g.has_membrane] > 0)
    assert np.isinf(g.ri_megohm[0]) and np.all(np.isfinite(g.ri_megohm[1:]))
    for k in range(g.n_sections):
        nodes = np.flatnonzero(g.section == k)
        own = nodes[nodes > 0]
        assert np.all(np.diff(own) == 1)  # a section's nodes are contiguous
        assert g.x[own].tolist() == [0.25, 0.75, 1.0]
        assert g.parent[own[1]] == own[0] and g.parent[own[2]] == own[1]
    assert g.section[0] == 0 and g.x[0] == 0.0 and not g.has_membrane[0]


def test_node_maps_locations_like_neuron(pyramidal):
    g = pyramidal
    soma = segments(g, "soma[0]")
    assert g.node("soma[0]", 0.5) == soma[1]  # floor(nseg·x) = 1: the segment centred at 0.75
    assert g.node("soma[0]", 0.49) == soma[0]
    assert g.node("soma[0]", 1.0) == soma[1] + 1
    assert g.node("soma[0]", 0.0) == 0
    assert g.node(0, 0.5) == soma[1]
    for k in range(1, g.n_sections):
        first = segments(g, g.section_names[k])[0]
        px = g.section_parent_x[k]
        assert g.parent[first] == g.node(int(g.section_parent[k]), px)
    with pytest.raises(KeyError, match="no section named 'dend\\[9999\\]'"):
        g.node("dend[9999]")
    with pytest.raises(ValueError, match="x must lie in"):
        g.node("soma[0]", 1.5)
    with pytest.raises(IndexError, match="out of range"):
        g.node(g.n_sections)


def test_hines_structure_is_neurons_matrix_scaled_to_microsiemens(pyramidal):
    g = pyramidal
    s = g.hines_structure()
    assert s.symmetric and s.n_cells == 1
    np.testing.assert_array_equal(s.parent, g.parent)
    assert s.u[0] == 0 and np.all(s.u[1:] < 0)
    # NEURON's rows (S/cm²): b_i = -100 g_i/A_i (to the parent), a_c = -100 g_c/A_p(c)
    # (children), with A = 100 on nodes without membrane; row i times A_i/100 is symmetric.
    a_node = np.where(g.has_membrane, g.area_um2, 100.0)
    gax = 1.0 / g.ri_megohm[1:]
    rng = np.random.default_rng(0)
    d = rng.uniform(1, 2, g.n_nodes)
    neuron = np.diag(d)
    child = np.arange(1, g.n_nodes)
    neuron[child, g.parent[child]] = -100 * gax / a_node[child]
    neuron[g.parent[child], child] = -100 * gax / a_node[g.parent[child]]
    scaled = neuron * (a_node / 100)[:, None]
    np.testing.assert_allclose(scaled, s.to_dense(d * a_node / 100), rtol=1e-14, atol=0)


# -- inputs and errors -------------------------------------------------------------------------

def test_path_and_morphology_give_the_same_geometry():
    path = REAL / "h10.CNG.swc"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SWCWarning)
        a = discretize(path, nseg=3)
        b = discretize(read_swc(path), nseg=3)
        c = discretize(str(path))
    np.testing.assert_array_equal(a.area_um2, b.area_um2)
    np.testing.assert_array_equal(a.ri_megohm, b.ri_megohm)
    assert a.source == str(path) and c.nseg.tolist() == [1] * c.n_sections  # NEURON's default


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(nseg=3, d_lambda=0.1), ValueError, "not both"),
    (dict(nseg=0), ValueError, "nseg must lie in"),
    (dict(nseg=40000), ValueError, "nseg must lie in"),
    (dict(nseg=2.0), TypeError, "nseg must be an integer"),
    (dict(nseg=True), TypeError, "nseg must be an integer"),
    (dict(d_lambda=0.0), ValueError, "d_lambda must be finite and > 0"),
    (dict(ra=-1.0), ValueError, "ra must be finite and > 0"),
    (dict(cm=float("nan")), ValueError, "cm must be finite and >= 0"),
    (dict(freq=float("inf")), ValueError, "freq must be finite"),
    (dict(ra="35.4"), TypeError, "ra must be a real number"),
])
def test_bad_options_are_named(kwargs, error, match):
    with pytest.raises(error, match=match):
        discretize(cell("1 1 0 0 0 5 -1"), **kwargs)


def test_d_lambda_beyond_neurons_nseg_limit_is_an_error():
    thin = cell("1 3 0 0 0 0.05 -1 / 2 3 10000 0 0 0.05 1")
    with pytest.raises(ValueError, match=r"nseg=\d+ in dend\[0\] .* more than NEURON's 32767"):
        discretize(thin, d_lambda=1e-4)


def test_not_a_morphology():
    with pytest.raises(TypeError, match="got int"):
        discretize(42)


@pytest.mark.parametrize("name, line", [("v_e_purk2.CNG.swc", 23), ("EC3-80604.CNG.swc", 8108)])
def test_zero_radius_is_an_error_naming_file_and_line(name, line):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SWCWarning)
        with pytest.raises(SWCRadiusError) as info:
            discretize(REAL / name)
    assert info.value.lines == (line,)
    assert str(info.value).startswith(f"{REAL / name}:{line}: ")


def test_min_radius_raises_small_radii_with_a_warning():
    morph = cell("1 1 0 0 0 0 -1 / 2 3 0 0 0 1 1 / 3 3 0 20 0 1 2")
    with pytest.warns(SWCRadiusClampedWarning):
        g = discretize(morph, min_radius=0.5)
    d = 2 * float(np.float32(0.5))
    assert g.area_um2[segments(g, "soma[0]")[0]] == pytest.approx(math.pi * d * d, rel=1e-15)


def test_radius_that_underflows_float32_is_an_error():
    with pytest.raises(SWCRadiusError, match="is 0 once stored as a float32"):
        discretize(cell("1 1 0 0 0 5 -1 / 2 3 0 10 0 1e-46 1 / 3 3 0 20 0 1 2"))
