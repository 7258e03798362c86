"""The kernels under discretize: float32 arc lengths, the d_lambda rule, the node layout."""
from __future__ import annotations

import math

import numpy as np
import pytest

from hinesbatch.discretize.nodes import node_layout
from hinesbatch.discretize.pt3d import arc_lengths, area_ri, lambda_sums, nseg_d_lambda


def test_arc_lengths_take_differences_in_float32():
    # 1000.1 and 0.3 as C floats: their difference rounds in float32 (NEURON's pt3d are
    # floats) and differs from the same difference taken in double
    xyz = np.array([[1000.1, 0, 0], [0.3, 0, 0], [0.3, 4, 3]], dtype=np.float32)
    arc = arc_lengths(xyz, np.array([0, 3]))
    step = float(np.float32(xyz[1, 0] - xyz[0, 0]))
    assert arc[1] == abs(step)
    assert arc[1] != abs(float(xyz[1, 0]) - float(xyz[0, 0]))
    assert arc[2] == arc[1] + 5.0
    assert arc[0] == 0.0


def test_arc_lengths_restart_in_every_section():
    xyz = np.array([[0, 0, 0], [3, 4, 0], [10, 0, 0], [10, 0, 2]], dtype=np.float32)
    np.testing.assert_array_equal(arc_lengths(xyz, np.array([0, 2, 4])), [0, 5, 0, 2])


def test_area_ri_of_a_zero_length_section_is_finite_and_zero_area():
    # three coincident points of diameter 0 (v_e_purk2's soma): NEURON reports area 0 and
    # ri = 9.01e14 MΩ (two zero pieces of 1e15 each in the left half) and leaves diam
    # alone (ours: NaN)
    xyz = np.zeros((3, 3), dtype=np.float32)
    diam = np.zeros(3, dtype=np.float32)
    arc = arc_lengths(xyz, np.array([0, 3]))
    out = [np.full(1, np.nan) for _ in range(4)]
    area_ri(arc, diam, np.array([0, 3]), np.array([1]), 35.4, out[0], out[1], out[2], out[3])
    area, ri, ri_end, seg_diam = (o[0] for o in out)
    assert area == 0.0
    assert ri == pytest.approx(2e15 * 35.4 / math.pi * 0.04, rel=1e-12)
    assert np.isnan(seg_diam)


def test_d_lambda_rule_by_hand():
    length = np.array([1000.0, 10.0])
    diam = np.array([1.0, 1.0], dtype=np.float32)
    # two-point cylinders: Σ Δs/sqrt(2d) = L/sqrt(2)
    lam = lambda_sums(np.array([0.0, 1000.0, 0.0, 10.0]), np.repeat(diam, 2),
                      np.array([0, 2, 4]))
    np.testing.assert_allclose(lam, length / math.sqrt(2), rtol=1e-15)
    lam_um = 1e5 * math.sqrt(1.0 / (4 * math.pi * 100 * 100.0 * 1.0))
    expect = (np.trunc((length / (0.1 * lam_um) + 0.9) / 2) * 2 + 1).astype(int)
    got = nseg_d_lambda(length, lam, d_lambda=0.1, freq=100.0, ra=100.0, cm=1.0)
    np.testing.assert_array_equal(got, expect)
    assert got.tolist() == [37, 1]
    # cm = 0: NEURON's lambda_f returns 1e10 µm, one segment
    assert nseg_d_lambda(length, lam, d_lambda=0.1, freq=100.0, ra=100.0, cm=0.0).tolist() == [1, 1]


def test_node_layout_follows_neurons_location_rules():
    # root (nseg 2); s1 at root(0.5) -> root segment 1; s2 at s1(0) -> where s1 hangs;
    # s3 at s1(1) -> s1's x = 1 node; s4 at root(0) -> the root node
    nseg = np.array([2, 3, 1, 1, 2])
    layout = node_layout(nseg, np.array([-1, 0, 1, 1, 0]), np.array([1.0, 0.5, 0.0, 1.0, 0.0]))
    first = layout.first_segment
    np.testing.assert_array_equal(first, [1, 4, 8, 10, 12])
    assert layout.n_nodes == 15
    assert layout.parent[first].tolist() == [0, 2, 2, first[1] + 3, 0]
    assert layout.is_segment.tolist() == [False, True, True, False, True, True, True, False,
                                          True, False, True, False, True, True, False]
    np.testing.assert_array_equal(layout.x[first[1]:first[1] + 4], [1 / 6, 0.5, 5 / 6, 1.0])
    assert np.all(layout.parent[1:] < np.arange(1, 15))
