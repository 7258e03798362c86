"""The canonical structure: its documented example, its validation, and its constructors."""
from __future__ import annotations

import doctest
import os

import numpy as np
import pytest

import hinesbatch
from hinesbatch import HinesStructure, MonoBatch
from hinesbatch.tree import random_trees as rt

STORAGE_MD = os.path.join(os.path.dirname(hinesbatch.__file__), "tree", "STORAGE.md")


def test_storage_md_examples():
    """The worked example of STORAGE.md runs and prints what the document says."""
    result = doctest.testfile(STORAGE_MD, module_relative=False, verbose=False,
                              optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 25
    assert result.failed == 0, f"{result.failed} example(s) of STORAGE.md fail"


def test_storage_example_matches_dense_solve():
    s = HinesStructure([-1, 0, 1, 1, -1, 4, -1, 6, 6], [0, -1, -1, -2, 0, -1, 0, -1, -1])
    d = np.array([3.0, 5, 2, 3, 2, 2, 3, 2, 2])
    rhs = np.array([1.0, 0, 0, 1, 1, 0, 1, 0, 0])
    x = np.linalg.solve(s.to_dense(d), rhs)
    np.testing.assert_allclose(x * 51, [23, 18, 9, 29, 34, 17, 25.5, 12.75, 12.75])


def test_arrays_are_read_only_copies():
    parent = np.array([-1, 0, 1])
    u = np.array([0.0, -1.0, -2.0])
    s = HinesStructure(parent, u)
    parent[1] = -1
    u[2] = 5.0
    assert s.parent.tolist() == [-1, 0, 1] and s.u.tolist() == [0.0, -1.0, -2.0]
    assert s.parent.dtype == np.int32 and s.cell_offsets.dtype == np.int64
    for a in (s.parent, s.u, s.cell_offsets):
        with pytest.raises(ValueError):
            a[0] = 1


@pytest.mark.parametrize(("parent", "offsets", "message"), [
    ([0, 0], None, "node 0 must be a root"),
    ([-1, 1], None, r"cell 0, node 1 \(global 1\): parent 1 is not an earlier node"),
    ([-1, 0, -1, 3], None, r"cell 1, node 1 \(global 3\): parent 3"),
    ([-1, 0, 0, 1], [0, 2, 4], r"cell 1: its first node \(global 2\) must be the root"),
    ([-1, 0, -1, 0], [0, 2, 4], r"cell 1, node 1 \(global 3\): parent 0 is not an earlier node of the same cell"),
    ([-1, -1], [0, 0, 2], "cell 0 is empty"),
    ([-1, -1], [0, 1], "cell_offsets must run from 0 to the number of nodes"),
])
def test_invalid_structures_name_cell_and_node(parent, offsets, message):
    with pytest.raises(ValueError, match=message):
        HinesStructure(np.array(parent), np.zeros(len(parent)), cell_offsets=offsets)


def test_other_validation():
    with pytest.raises(TypeError, match="parent must hold integers"):
        HinesStructure(np.array([-1.0, 0.0]), np.zeros(2))
    with pytest.raises(ValueError, match=r"u has shape \(3,\) but parent has 2 entries"):
        HinesStructure([-1, 0], np.zeros(3))
    with pytest.raises(ValueError, match=r"l has shape"):
        HinesStructure([-1, 0], np.zeros(2), np.zeros(1))
    with pytest.raises(ValueError, match=r"u must be finite, but holds nan at cell 1, node 1 \(global 3\)"):
        HinesStructure([-1, 0, -1, 2], [0, -1, 0, np.nan])
    with pytest.raises(ValueError, match=r"l must be finite, but holds inf at cell 0, node 2"):
        HinesStructure([-1, 0, 1], [0, -1, -1], [0, -1, np.inf])
    HinesStructure([-1, 0], [np.nan, -1.0])  # u[root] is never read


def test_cell_concatenate_tile_expand():
    a, b = rt.random_tree(7, rng=100, symmetric=False), rt.star(4, rng=101)
    batch = HinesStructure.concatenate([a, b, a])
    assert batch.cell_sizes.tolist() == [7, 4, 7] and not batch.symmetric
    for c, original in enumerate([a, b, a]):
        cell = batch.cell(c)
        np.testing.assert_array_equal(cell.parent, original.parent)
        np.testing.assert_array_equal(cell.lower, original.lower)
    assert batch.cell(-1).n_nodes == 7
    with pytest.raises(IndexError, match="cell 3 out of range"):
        batch.cell(3)
    tiled = b.tile(3)
    np.testing.assert_array_equal(tiled.parent, [-1, 0, 0, 0, -1, 4, 4, 4, -1, 8, 8, 8])
    np.testing.assert_array_equal(MonoBatch(b, 3).expand().parent, tiled.parent)
    assert HinesStructure.concatenate([]).n_cells == 0


def test_to_dense_rows():
    s = HinesStructure([-1, 0, 0], [0.0, -1.0, -2.0], [0.0, -3.0, -4.0])
    np.testing.assert_array_equal(s.to_dense([5.0, 6.0, 7.0]),
                                  [[5, -1, -2], [-3, 6, 0], [-4, 0, 7]])


def test_mono_batch():
    cell = rt.chain(4, rng=102)
    m = MonoBatch(cell, 6)
    assert m.values_shape == (6, 4) and m.n_nodes == 24 and m.nodes_per_cell == 4
    with pytest.raises(ValueError, match="a MonoBatch shares one cell"):
        MonoBatch(cell.tile(2), 3)
    with pytest.raises(ValueError, match="n_cells must be >= 0"):
        MonoBatch(cell, -1)
    with pytest.raises(TypeError, match="cell must be a HinesStructure"):
        MonoBatch([-1, 0], 2)


def test_renumber():
    s = HinesStructure.concatenate([HinesStructure([-1, 0, 0, 1], [0, -1, -2, -3]),
                                    HinesStructure([-1, 0], [0, -4])])
    r = s.renumber([0, 2, 1, 3, 4, 5])  # swap nodes 1 and 2 of cell 0
    assert r.parent.tolist() == [-1, 0, 0, 2, -1, 4]
    assert r.u.tolist() == [0, -2, -1, -3, 0, -4]
    d = np.arange(1.0, 7.0) + 10
    order = np.array([0, 2, 1, 3, 4, 5])
    np.testing.assert_array_equal(r.to_dense(d[order]), s.to_dense(d)[np.ix_(order, order)])
    with pytest.raises(ValueError, match="cells must keep their nodes"):
        s.renumber([0, 1, 2, 4, 3, 5])
    with pytest.raises(ValueError, match="not a permutation"):
        s.renumber([0, 0, 1, 2, 3, 4])
    with pytest.raises(ValueError, match="parent .* is not an earlier node"):
        s.renumber([0, 3, 2, 1, 4, 5])  # node 3 (child of 1) before its parent
