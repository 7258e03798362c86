"""Branch decomposition against a plain-Python reference, and the contiguous renumbering."""
from __future__ import annotations

import numpy as np
import pytest
from solver_cases import real_names, real_parents

import hinesbatch
from hinesbatch import HinesStructure, MonoBatch
from hinesbatch.tree import branches, contiguous_order, depth_order, make_branches_contiguous
from hinesbatch.tree import random_trees as rt


def reference_branches(structure: HinesStructure):
    """Walk each branch from its start node, one node at a time (the definition, slowly)."""
    parent = structure.parent.tolist()
    n = len(parent)
    children = [[] for _ in range(n)]
    for i, p in enumerate(parent):
        if p >= 0:
            children[p].append(i)
    starts = [i for i in range(n) if parent[i] < 0 or len(children[parent[i]]) >= 2]
    runs, branch_of = [], {}
    for s in starts:
        run = [s]
        while len(children[run[-1]]) == 1:
            run.append(children[run[-1]][0])
        for i in run:
            branch_of[i] = len(runs)
        runs.append(run)
    level = []
    for s in starts:
        depth, p = 0, parent[s]
        while p >= 0:
            depth += 1
            p = parent[runs[branch_of[p]][0]]
        level.append(depth)
    return runs, level


STRUCTURES = {
    "single-node": lambda: rt.chain(1),
    "chain": lambda: rt.chain(30),
    "two-node-star": lambda: rt.star(2),
    "star": lambda: rt.star(12),
    "binary": lambda: rt.binary_tree(5, branch_length=3),
    "random-bushy": lambda: rt.random_tree(500, rng=90, branch_probability=0.8),
    "random-sparse": lambda: rt.random_tree(500, rng=91, branch_probability=0.05),
    "mixed-batch": lambda: rt.random_batch(30, rng=92, max_nodes=40),
    "real-ca1": lambda: rt.structure_from_parents(real_parents("morph_ca1_n120.swc")),
    "real-purkinje": lambda: rt.structure_from_parents(real_parents("v_e_purk2.CNG.swc")),
}


@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_matches_reference(name):
    s = STRUCTURES[name]()
    b = branches(s)
    runs, level = reference_branches(s)
    assert b.n_branches == len(runs)
    for k, run in enumerate(runs):
        assert b.start[k] == run[0]
        assert b.length[k] == len(run)
        assert b.nodes[b.offsets[k]:b.offsets[k + 1]].tolist() == run
        assert b.parent_node[k] == s.parent[run[0]]
        assert b.level[k] == level[k]
        assert b.cell[k] == np.searchsorted(s.cell_offsets, run[0], side="right") - 1
        pb = b.parent_branch[k]
        assert (pb == -1) if b.parent_node[k] < 0 else (b.parent_node[k] in runs[pb])
    assert b.n_levels == (max(level) + 1 if level else 0)
    np.testing.assert_array_equal(np.sort(b.nodes), np.arange(s.n_nodes))
    for k in range(b.n_branches):
        assert np.all(b.node_branch[b.nodes[b.offsets[k]:b.offsets[k + 1]]] == k)


@pytest.mark.parametrize("name", real_names())
def test_real_morphologies_partition_into_branches(name):
    s = rt.structure_from_parents(real_parents(name))
    b = branches(s)
    n_children = np.bincount(s.parent[s.parent >= 0], minlength=s.n_nodes)
    ends = b.nodes[b.offsets[1:] - 1]
    assert np.all(n_children[ends] != 1), "a branch ends at a tip or a branch point"
    inner = np.ones(s.n_nodes, dtype=bool)  # positions in b.nodes that do not start a branch
    inner[b.offsets[:-1]] = False
    pos = np.flatnonzero(inner)
    assert np.all(s.parent[b.nodes[pos]] == b.nodes[pos - 1]), "each hangs on the one before"
    starts_ok = (s.parent[b.start] < 0) | (n_children[np.maximum(s.parent[b.start], 0)] >= 2)
    assert np.all(starts_ok), "a branch starts at a root or below a branch point"
    assert np.all(b.level[b.parent_branch[b.parent_branch >= 0]] + 1
                  == b.level[b.parent_branch >= 0])


def test_small_cases_by_hand():
    assert branches(rt.chain(30)).length.tolist() == [30]
    star = branches(rt.star(5))
    assert star.start.tolist() == [0, 1, 2, 3, 4] and star.level.tolist() == [0, 1, 1, 1, 1]
    assert branches(rt.star(2)).length.tolist() == [2]  # a root with one child continues
    empty = branches(HinesStructure(np.zeros(0, np.int64), np.zeros(0)))
    assert empty.n_branches == 0 and empty.n_levels == 0 and empty.contiguous


def test_mono_batch_gives_the_shared_cells_branches():
    cell = rt.random_tree(60, rng=93)
    mono = branches(MonoBatch(cell, 7))
    alone = branches(cell)
    for field in ("start", "length", "parent_node", "level", "cell", "nodes"):
        np.testing.assert_array_equal(getattr(mono, field), getattr(alone, field))


@pytest.mark.parametrize("name", ["random-bushy", "mixed-batch", "real-ca1", "binary"])
def test_contiguous_renumbering(name):
    s = STRUCTURES[name]()
    new, order = make_branches_contiguous(s)
    np.testing.assert_array_equal(new.cell_offsets, s.cell_offsets)
    np.testing.assert_array_equal(np.sort(order), np.arange(s.n_nodes))
    b_old, b_new = branches(s), branches(new)
    assert b_new.contiguous
    assert b_new.n_branches == b_old.n_branches
    np.testing.assert_array_equal(np.sort(b_new.length), np.sort(b_old.length))
    for c in range(new.n_cells):  # levels laid out in order within each cell
        assert np.all(np.diff(b_new.level[b_new.cell == c]) >= 0)
    # the same matrix: the same edges with the same couplings, and the same solution
    old_edges = {(int(order[j]), int(order[p])): new.u[j] for j, p in enumerate(new.parent) if p >= 0}
    assert old_edges == {(i, int(p)): s.u[i] for i, p in enumerate(s.parent) if p >= 0}
    d, rhs = rt.diagonally_dominant(s, rng=94)
    x_old = hinesbatch.solve(s, d, rhs, backend="serial")
    x_new = hinesbatch.solve(new, d[order], rhs[order], backend="serial")
    np.testing.assert_allclose(x_new, x_old[order], rtol=1e-12, atol=1e-14)


def test_contiguous_order_of_already_contiguous_tree_is_identity():
    s = rt.binary_tree(4, branch_length=2)
    assert branches(s).contiguous
    np.testing.assert_array_equal(contiguous_order(s), np.arange(s.n_nodes))


def test_mono_batch_renumbering():
    mono = MonoBatch(rt.random_tree(40, rng=95), 3)
    new, order = make_branches_contiguous(mono)
    assert isinstance(new, MonoBatch) and new.n_cells == 3
    assert branches(new).contiguous
    d, rhs = rt.diagonally_dominant(mono, rng=96)
    np.testing.assert_allclose(hinesbatch.solve(new, d[:, order], rhs[:, order]),
                               hinesbatch.solve(mono, d, rhs)[:, order], rtol=1e-12)


def test_a_million_nodes():
    """Vectorized: a 10^6-node random tree and a 10^6-node cable decompose (not timed)."""
    b = branches(rt.random_tree(10**6, rng=97, branch_probability=0.3))
    assert b.length.sum() == 10**6 and b.n_levels > 1
    assert branches(rt.chain(10**6)).n_branches == 1


def reference_depths(parent):
    """Depth of each node by walking up to the root, one edge at a time."""
    depth = []
    for i in range(len(parent)):
        k, p = 0, parent[i]
        while p >= 0:
            k, p = k + 1, parent[p]
        depth.append(k)
    return np.array(depth)


@pytest.mark.parametrize("seed", range(4))
def test_depth_order_sorts_each_cell_by_depth_and_solves_the_same(seed):
    rng = np.random.default_rng(seed)
    s = rt.random_batch(5, rng=rng, max_nodes=300)
    order = depth_order(s)
    r = s.renumber(order)  # raises if Hines order or a cell range were broken
    depth = reference_depths(s.parent.tolist())
    for c in range(s.n_cells):
        a, b = s.cell_offsets[c], s.cell_offsets[c + 1]
        assert np.all(np.diff(depth[order[a:b]]) >= 0)
        assert np.all((order[a:b] >= a) & (order[a:b] < b))
    d, rhs = rt.diagonally_dominant(s, rng=rng)
    x = hinesbatch.solve(s, d, rhs, backend="serial")
    y = hinesbatch.solve(r, d[order], rhs[order], backend="serial")
    np.testing.assert_allclose(y[np.argsort(order)], x, rtol=1e-12)


def test_depth_order_of_a_mono_batch_is_the_shared_cells():
    cell = rt.random_tree(200, rng=np.random.default_rng(7), branch_probability=0.4)
    np.testing.assert_array_equal(depth_order(MonoBatch(cell, 3)), depth_order(cell))
