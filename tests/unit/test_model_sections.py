"""``SectionCell``: cells from L, diam and nseg, with NEURON's stylized and 3-D geometry.

NEURON's own ``seg.area()`` and ``seg.ri()`` for ringtest's cells are compared bit for bit
in ``tests/validation/test_neuron_ringtest.py``; here the formulas and the checks."""
import math

import numpy as np
import pytest

from hinesbatch.model.sections import SectionCell

PI = 3.14159265358979323846


def three_sections(**kw):
    return SectionCell(["soma[0]", "dend[0]", "dend[1]"], [-1, 0, 1], [10.0, 100.0, 30.0],
                       [10.0, 2.0, 1.0], **kw)


def test_stylized_sections_have_neurons_area_and_ri():
    cell = three_sections(nseg=[1, 1, 3], ra=100.0)
    g = cell.geometry
    dx = 30.0 / 3
    rleft = 1e-2 * 100.0 * (dx / 2) / (PI * 1.0 * 1.0 / 4.0)
    nodes = np.flatnonzero(g.section == 2)       # 3 segments then the x = 1 node
    assert g.area_um2[nodes].tolist() == [PI * 1.0 * dx] * 3 + [0.0]
    assert g.ri_megohm[nodes].tolist() == [1.0 / (1.0 / rleft)] + \
        [1.0 / (1.0 / (rleft + rleft))] * 2 + [1.0 / (1.0 / rleft)]
    assert g.n_nodes == 1 + 2 + 2 + 4
    assert g.parent[nodes[0]] == np.flatnonzero(g.section == 1)[-1]   # dend[0]'s x = 1 node


def test_a_pt3d_section_rounds_its_diameter_to_float32():
    cell = three_sections(pt3d=[True, False, False], ra=100.0)
    soma = cell.geometry.area_um2[1]
    d32 = float(np.float32(10.0))
    assert soma == pytest.approx(PI * d32 * 10.0, rel=1e-15)
    odd = SectionCell(["soma[0]"], [-1], [12.6157], [12.6157], pt3d=[True])
    assert odd.geometry.area_um2[1] == PI * float(np.float32(12.6157)) * 12.6157
    assert odd.geometry.area_um2[1] != PI * 12.6157 * 12.6157


def test_regions_locations_and_mechanisms_work_as_on_any_cell():
    cell = three_sections()
    cell.insert("hh", "soma").insert("pas", "dend", g=0.001, e=-65.0)
    syn = cell.place("ExpSyn", "dend[1](0.5)", tau=2.0)
    assert cell.sections_of("dend").tolist() == [False, True, True]
    assert syn.name == "ExpSyn[0]"
    assert set(cell.density_values()) == {"hh", "pas"}
    assert "SectionCell" in repr(cell) and "insert pas in 'dend'" in repr(cell)
    with pytest.raises(ValueError, match="no section 'axon\\[0\\]'"):
        cell.place("IClamp", "axon[0](0.5)")


@pytest.mark.parametrize("kwargs, message", [
    (dict(names=["a[0]", "a[0]"]), "section name 'a\\[0\\]' appears more than once"),
    (dict(parents=[0, 0]), "parents must be -1 for section 0"),
    (dict(lengths_um=[1.0, -2.0]), "lengths_um of section b\\[0\\] is -2.0"),
    (dict(diams_um=[1.0, math.nan]), "diams_um of section b\\[0\\] is nan"),
    (dict(nseg=[1, 0]), "nseg of section b\\[0\\] is 0"),
    (dict(parent_x=[1.0, 1.5]), "parent_x of section b\\[0\\] is 1.5"),
    (dict(lengths_um=[1.0]), "lengths_um has shape \\(1,\\); expected one value per section"),
    (dict(ra=0.0), "ra must be a finite number > 0"),
])
def test_bad_sections_are_refused_with_the_section_named(kwargs, message):
    args = dict(names=["a[0]", "b[0]"], parents=[-1, 0], lengths_um=[1.0, 2.0],
                diams_um=[1.0, 1.0])
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        SectionCell(args.pop("names"), args.pop("parents"), args.pop("lengths_um"),
                    args.pop("diams_um"), **args)
