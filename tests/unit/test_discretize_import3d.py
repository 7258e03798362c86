"""NEURON's Import3d rules (hinesbatch.discretize.import3d) on small inline cells.

Each case states what NEURON 9.0.2 makes of the file (docs/geometry.md lists the rules; the same cases
and 250 random trees are checked against NEURON itself in
tests/validation/test_neuron_geometry.py).
"""
from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

from hinesbatch.discretize import discretize
from hinesbatch.discretize.import3d import hoc_pt3d_values, import3d_sections, section_name
from hinesbatch.morphology import SWCWarning, read_swc


def cell(text: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SWCWarning)
        return read_swc(io.StringIO(text.replace(" / ", "\n") + "\n"))


def points(secs, name):
    k = secs.names.index(name)
    a, b = secs.pt_offsets[k], secs.pt_offsets[k + 1]
    return np.column_stack([secs.xyz[a:b], secs.diam[a:b]]).astype(np.float64)


def parent_of(secs, name):
    k = secs.names.index(name)
    p = secs.parent[k]
    return (None if p < 0 else secs.names[p]), float(secs.parent_x[k])


#: The inline cells of this module; tests/validation/test_neuron_geometry.py loads this dict
#: and checks every case against NEURON.
CASES = {
    "three_point": "1 1 0 0 0 4 -1 / 2 1 0 4 0 4 1 / 3 1 0 -4 0 4 1 / 4 3 4 0 0 1 1 / "
                   "5 3 10 0 0 1 4 / 6 4 -4 0 0 1 1 / 7 4 -12 0 0 1 6",
    "three_point_radii_differ": "1 1 0 0 0 4 -1 / 2 1 0 4 0 3 1 / 3 1 0 -4 0 4 1 / "
                                "4 3 4 0 0 1 1 / 5 3 10 0 0 1 4 / 6 4 -4 0 0 1 1 / "
                                "7 4 -12 0 0 1 6",
    "three_point_too_long": "1 1 0 0 0 4 -1 / 2 1 0 6 0 4 1 / 3 1 0 -4 0 4 1 / "
                            "4 3 4 0 0 1 1 / 5 3 10 0 0 1 4 / 6 4 -4 0 0 1 1 / "
                            "7 4 -12 0 0 1 6",
    "one_point": "1 1 0 0 0 5 -1 / 2 3 0 8 0 1 1 / 3 3 6 0 0 0.5 1 / 4 3 12 0 0 0.5 3",
    "multi_point": "1 1 0 0 0 2 -1 / 2 1 0 2 0 2 1 / 3 1 0 4 0 2 2 / 4 1 0 6 0 2 3 / "
                   "5 3 3 2 0 0.5 2 / 6 3 9 2 0 0.5 5 / 7 4 0 9 0 0.5 4 / 8 4 0 15 0 0.5 7 / "
                   "9 1 2 8 0 1 4 / 10 1 4 10 0 1 9",
    "proximal": "1 1 0 0 0 5 -1 / 2 3 0 6 0 1 1 / 3 3 0 12 0 1 2 / 4 3 6 0 0 1 1 / "
                "5 3 12 0 0 1 4 / 6 3 6 -6 0 1 4",
    "index_1": "1 1 0 0 0 5 -1 / 2 3 5 0 0 1 1 / 3 3 0 5 0 1 1 / 4 3 0 9 0 1 3 / "
               "5 3 9 0 0 1 2",
    "zero_length": "1 3 0 0 0 1 -1 / 2 3 10 0 0 1 1 / 3 3 10 0 0 1 2 / 4 3 20 0 0 1 2 / "
                   "5 3 10 10 0 1 3",
    "root_wire": "1 1 0 0 0 3 -1 / 2 1 0 3 0 2 1 / 3 1 0 -3 0 2 1 / 4 3 5 0 0 1 1 / "
                 "5 3 9 0 0 1 4 / 6 2 -5 0 0 1 1",
    "names": "1 1 0 0 0 3 -1 / 2 0 5 0 0 1 1 / 3 0 9 0 0 1 2 / 4 7 0 5 0 1 1 / "
             "5 7 0 9 0 1 4 / 6 -2 -5 0 0 1 1 / 7 -2 -9 0 0 1 6 / 8 7 0 -5 0 1 1 / "
             "9 7 0 -9 0 1 8",
    "type_change": "1 2 0 0 0 1 -1 / 2 2 5 0 0 1 1 / 3 3 9 0 0 0.5 2 / 4 3 14 0 0 0.5 3",
}


def test_neuromorpho_three_point_soma_becomes_a_cylinder_along_x():
    secs = import3d_sections(cell(CASES["three_point"]))
    assert secs.soma == "three-point"
    assert secs.names == ("soma[0]", "dend[0]", "apic[0]")
    # points 2 and 3 lie along y in the file; NEURON ignores that: x0 -/+ d/2, diameter d
    np.testing.assert_array_equal(points(secs, "soma[0]"),
                                  [[-4, 0, 0, 8], [0, 0, 0, 8], [4, 0, 0, 8]])
    assert parent_of(secs, "dend[0]") == ("soma[0]", 0.5)
    assert parent_of(secs, "apic[0]") == ("soma[0]", 0.5)
    assert secs.wire[1:].all()  # both neurites have 2 own samples: wired to the centre
    np.testing.assert_array_equal(points(secs, "dend[0]"), [[4, 0, 0, 2], [10, 0, 0, 2]])


@pytest.mark.parametrize("case", ["three_point_radii_differ", "three_point_too_long"])
def test_three_point_rule_needs_its_conditions(case):
    secs = import3d_sections(cell(CASES[case]))
    assert secs.soma == "multi-point"
    # sample 3 hangs on the root sample: a second soma section at soma[0](0), with a copy
    assert secs.names[:2] == ("soma[0]", "soma[1]")
    assert parent_of(secs, "soma[1]") == ("soma[0]", 0.0)
    assert points(secs, "soma[1]")[0].tolist() == [0, 0, 0, 8]


def test_one_point_soma_neurite_with_one_sample_runs_from_the_centre():
    secs = import3d_sections(cell(CASES["one_point"]))
    assert secs.soma == "one-point"
    # dend[0] has one own sample: a copy of the soma centre at its own diameter, no wire
    assert parent_of(secs, "dend[0]") == ("soma[0]", 0.5) and not secs.wire[1]
    np.testing.assert_array_equal(points(secs, "dend[0]"), [[0, 0, 0, 2], [0, 8, 0, 2]])
    # dend[1] has two: wired, starting at its own first sample
    assert secs.wire[2]
    np.testing.assert_array_equal(points(secs, "dend[1]"), [[6, 0, 0, 1], [12, 0, 0, 1]])


def test_multi_point_soma_branches_become_soma_sections():
    # soma chain 1-2-3-4; neurites on an interior soma sample (x = 0.5, wired) and on the
    # last one (x = 1); soma samples 9-10 hang on sample 4 after the neurites: soma[1]
    text = CASES["multi_point"]
    secs = import3d_sections(cell(text))
    assert secs.soma == "multi-point"
    assert secs.names == ("soma[0]", "dend[0]", "apic[0]", "soma[1]")
    assert parent_of(secs, "soma[1]") == ("soma[0]", 1.0)
    np.testing.assert_array_equal(points(secs, "soma[1]"),
                                  [[0, 6, 0, 4], [2, 8, 0, 2], [4, 10, 0, 2]])
    assert parent_of(secs, "dend[0]") == ("soma[0]", 0.5) and secs.wire[1]
    # sample 4 has one soma child only: apic[0] keeps its copy (no wire), at the apical
    # diameter
    assert parent_of(secs, "apic[0]") == ("soma[0]", 1.0) and not secs.wire[2]
    assert points(secs, "apic[0]")[0].tolist() == [0, 6, 0, 1]


def test_branch_off_a_wired_neurites_first_sample_connects_to_its_proximal_end():
    # sample 4 (index 3) hangs on the soma; sample 6 hangs on sample 4 out of file order:
    # Import3d flags it "connect to proximal": parentx 0 of that dendrite, electrically the
    # soma(0.5) node; sample 4 is then not a section end, so 4-5 stay one section.
    text = CASES["proximal"]
    secs = import3d_sections(cell(text))
    assert secs.names == ("soma[0]", "dend[0]", "dend[1]", "dend[2]")
    assert points(secs, "dend[1]")[:, 0].tolist() == [6, 12]
    assert parent_of(secs, "dend[2]") == ("dend[1]", 0.0)
    g = discretize(cell(text), nseg=3)
    k = g.section_names.index("dend[2]")
    first = np.flatnonzero((g.section == k) & g.has_membrane)[0]
    assert g.parent[first] == g.node("soma[0]", 0.5)


def test_first_neurite_sample_at_index_1_is_its_own_short_section():
    # sample 2 (index 1) has only a non-contiguous child: it ends a section by itself,
    # running from the soma centre copy (the "index-1 quirk" of Import3d's read_swc.hoc)
    text = CASES["index_1"]
    secs = import3d_sections(cell(text))
    assert secs.names == ("soma[0]", "dend[0]", "dend[1]", "dend[2]")
    np.testing.assert_array_equal(points(secs, "dend[0]"), [[0, 0, 0, 2], [5, 0, 0, 2]])
    assert parent_of(secs, "dend[2]") == ("dend[0]", 1.0)


def test_two_point_section_of_zero_length_is_removed_and_children_reattached():
    # section [sample 3] = copy of sample 2 + sample 3 at the same place: removed; sample 5's
    # section moves to its parent (dend[0]) at its parentx (1)
    text = CASES["zero_length"]
    secs = import3d_sections(cell(text))
    assert secs.names == ("dend[0]", "dend[1]", "dend[2]")
    assert parent_of(secs, "dend[2]") == ("dend[0]", 1.0)
    assert points(secs, "dend[2]")[0].tolist() == [10, 0, 0, 2]  # still the copy of sample 3


def test_neurite_on_root_soma_sample_with_two_soma_children_is_wired_at_x0():
    # sample 1 has two soma children (not a 3-point soma: their radii differ), so a neurite
    # on it is wired at soma[0](0); a neurite of one sample is then left with one point and
    # removed, as NEURON does
    text = CASES["root_wire"]
    secs = import3d_sections(cell(text))
    assert secs.soma == "multi-point"
    assert secs.names == ("soma[0]", "soma[1]", "dend[0]")
    assert parent_of(secs, "soma[1]") == ("soma[0]", 0.0)
    assert parent_of(secs, "dend[0]") == ("soma[0]", 0.0) and secs.wire[2]
    np.testing.assert_array_equal(points(secs, "dend[0]"), [[5, 0, 0, 2], [9, 0, 0, 2]])


def test_names_by_type_and_section_order():
    text = CASES["names"]
    secs = import3d_sections(cell(text))
    assert secs.names == ("soma[0]", "dend_0[0]", "dend_7[0]", "minus_2[0]", "dend_7[1]")
    assert [section_name(t) for t in (1, 2, 3, 4, 0, 12, -1)] == [
        "soma", "axon", "dend", "apic", "dend_0", "dend_12", "minus_1"]
    assert np.all(secs.parent[1:] < np.arange(1, secs.n_sections))


def test_type_change_inside_a_run_starts_a_section_with_the_parents_diameter():
    secs = import3d_sections(cell(CASES["type_change"]))
    assert secs.names == ("axon[0]", "dend[0]")
    assert parent_of(secs, "dend[0]") == ("axon[0]", 1.0)
    assert points(secs, "dend[0]")[0].tolist() == [5, 0, 0, 2]  # copy keeps the axon's diameter


def test_hoc_values_follow_neurons_percent_8g_path():
    # barrionuevo_cell1zr's soma: x0 - d0/2 = -7.738000154495239 in double; instantiate(None)
    # writes "-7.7380002", which becomes the float32 NEURON reports: -7.738000392913818
    assert hoc_pt3d_values(np.array([-7.738000154495239]))[0] == np.float32(-7.738000392913818)
    assert np.float32(-7.738000154495239) != np.float32(-7.738000392913818)
    v = np.float32([0.1, 1234.567, -3.25e-3, 0.0]).astype(np.float64)
    np.testing.assert_array_equal(hoc_pt3d_values(v), v.astype(np.float32))
