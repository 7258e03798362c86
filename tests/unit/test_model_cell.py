"""The model description: regions, the per-region policy, the decor, locations, errors,
and the plain-data round trip."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hinesbatch as hb

REAL = Path(__file__).parents[1] / "data" / "morphologies" / "real"
C91662 = REAL / "c91662.swc"

# soma (one point), a two-section dendrite and an axon
SMALL = """\
1 1 0 0 0 5 -1
2 3 5 0 0 1 1
3 3 20 0 0 1 2
4 3 30 5 0 0.8 3
5 3 30 -5 0 0.8 3
6 2 -5 0 0 0.5 1
7 2 -40 0 0 0.5 6
"""


@pytest.fixture
def small(tmp_path) -> Path:
    path = tmp_path / "small.swc"
    path.write_text(SMALL)
    return path


def test_uniform_policy_is_discretize(small):
    cell = hb.Cell(C91662, d_lambda=0.1, ra=100)
    ref = hb.discretize(C91662, d_lambda=0.1, ra=100)
    g = cell.geometry
    assert np.array_equal(g.nseg, ref.nseg)
    assert np.array_equal(g.area_um2, ref.area_um2)
    assert np.array_equal(g.ri_megohm, ref.ri_megohm)


def test_geometry_shared_by_cells_with_same_morphology_and_policy(small):
    a, b = hb.Cell(small, nseg=3), hb.Cell(small, nseg=3)
    assert a.geometry is b.geometry
    assert hb.Cell(small, nseg=5).geometry is not a.geometry


def test_cells_of_one_morphology_share_its_section_table(small):
    """The section table is built once per morphology, not once per cell: batches of
    thousands of copies are built in a fraction of a second."""
    m = hb.read_swc(small)
    a, b = hb.Cell(m, nseg=3), hb.Cell(m, d_lambda=0.1)
    assert a.section_names is b.section_names
    assert not a._types.flags.writeable
    other = hb.Cell(hb.read_swc(small))
    assert other.section_names == a.section_names and other.section_names is not a.section_names


def test_per_region_nseg_and_ra(small):
    cell = hb.Cell(small, nseg={"all": 1, "dend": 3}, ra={"all": 35.4, "axon": 200.0})
    g = cell.geometry
    names = g.section_names
    for k, name in enumerate(names):
        assert g.nseg[k] == (3 if name.startswith("dend") else 1), name
    # each section's values equal a uniform discretization with that section's settings
    for ra, region in ((35.4, "dend"), (200.0, "axon")):
        ref = hb.discretize(small, nseg=3 if region == "dend" else 1, ra=ra)
        for k, name in enumerate(names):
            if name.startswith(region):
                mine = g.ri_megohm[g.section == k]
                theirs = ref.ri_megohm[ref.section == k]
                assert np.array_equal(mine, theirs), name


def test_nseg_and_d_lambda_on_one_region_refused(small):
    with pytest.raises(ValueError, match="not both"):
        hb.Cell(small, nseg={"dend": 3}, d_lambda={"all": 0.1})


def test_unknown_region_lists_valid_ones(small):
    cell = hb.Cell(small)
    with pytest.raises(ValueError, match=r"unknown region 'basal'.*valid regions: all, soma"):
        cell.insert("hh", "basal")
    with pytest.raises(ValueError, match="unknown region"):
        hb.Cell(small, nseg={"dendrite": 3})


def test_insert_set_and_values(small):
    cell = hb.Cell(small).insert("hh").insert("pas", "dend", g_pas=2e-4, e=-70.0)
    cell.set("gnabar_hh", 0.2, "soma")
    values = cell.density_values()
    g = cell.geometry
    mask, hh = values["hh"]
    assert mask.sum() == g.has_membrane.sum()
    soma_nodes = (g.section == g.section_names.index("soma[0]")) & g.has_membrane
    assert np.all(hh["gnabar"][soma_nodes] == 0.2)
    assert np.all(hh["gnabar"][mask & ~soma_nodes] == 0.12)
    pmask, pas = values["pas"]
    dend = np.array([n.startswith("dend") for n in g.section_names])[g.section] & g.has_membrane
    assert np.array_equal(pmask, dend)
    assert np.all(pas["g"][dend] == 2e-4) and np.all(pas["e"][dend] == -70.0)


def test_unknown_mechanism_and_parameter_list_valid_names(small):
    cell = hb.Cell(small)
    with pytest.raises(ValueError, match="unknown mechanism 'na'; valid names: pas, IClamp"):
        cell.insert("na")
    with pytest.raises(ValueError, match=r"hh has no parameter 'gnabar_pas'.*gnabar_hh"):
        cell.insert("hh", gnabar_pas=1.0)
    with pytest.raises(ValueError, match="IClamp has no parameter 'amplitude'; parameters: del"):
        cell.place("IClamp", "soma[0](0.5)", amplitude=1.0)
    with pytest.raises(ValueError, match="use cell.place"):
        cell.insert("IClamp")
    with pytest.raises(ValueError, match="not a point process"):
        cell.place("hh", "soma[0](0.5)")


def test_place_locations_and_errors(small):
    cell = hb.Cell(small)
    a = cell.place("IClamp", "soma[0](0.5)", delay=1.0, dur=2.0, amp=0.1)
    b = cell.place("ExpSyn", ("dend[1]", 0.25), tau=2.0)
    c = cell.place("IClamp", "dend[0](1)")
    assert (a.location, a.index, a.name) == ("soma[0](0.5)", 0, "IClamp[0]")
    assert (b.location, b.index, b.name) == ("dend[1](0.25)", 1, "ExpSyn[0]")
    assert c.name == "IClamp[1]" and a.params == {"del": 1.0, "dur": 2.0, "amp": 0.1}
    with pytest.raises(ValueError, match=r"outside the cell .*no section 'dend\[7\]'"):
        cell.place("IClamp", "dend[7](0.5)")
    with pytest.raises(ValueError, match="x must lie in"):
        cell.place("IClamp", "soma[0](1.5)")


def test_to_dict_round_trip(small):
    cell = hb.Cell(small, nseg={"all": 1, "dend": 3}, ra=100.0, name="probe")
    cell.insert("hh").insert("pas", ["dend", "axon"], g_pas=1e-4).set("el_hh", -60.0, "soma")
    cell.place("IClamp", "soma[0](0.5)", delay=1, dur=2, amp=0.3)
    cell.place("Exp2Syn", "dend[1](0.5)", tau1=0.2, tau2=3)
    again = hb.Cell.from_dict(cell.to_dict())
    assert again.to_dict() == cell.to_dict()
    assert repr(again) == repr(cell)
    for m, (mask, values) in cell.density_values().items():
        mask2, values2 = again.density_values()[m]
        assert np.array_equal(mask, mask2)
        for k in values:
            assert np.array_equal(values[k], values2[k])


def test_repr_lists_the_decor(small):
    cell = hb.Cell(small).insert("hh", "soma")
    cell.place("IClamp", "soma[0](0.5)", amp=1.0)
    text = repr(cell)
    assert "insert hh in 'soma'" in text and "IClamp[0] at IClamp('soma[0](0.5)', amp=1.0)" in text


def test_set_takes_the_reversal_potentials_read_by_hh():
    """``ena`` and ``ek`` have no mechanism suffix: ``set`` must not refuse them as
    malformed range names where hh is inserted."""
    cell = hb.Cell(REAL / "c91662.swc").insert("hh")
    assert cell.set("ena", 55.0) is cell and cell.set("ek", -80.0, region="soma") is cell
    with pytest.raises(ValueError, match="NAME_MECHANISM"):
        cell.set("gnabar", 0.1)
