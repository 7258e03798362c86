"""Work balancing: tree centres, re-rooting (same matrix, permuted) and branch splitting."""
from __future__ import annotations

from collections import deque

import numpy as np
import pytest
from solver_cases import real_parents

from hinesbatch import HinesStructure, MonoBatch
from hinesbatch.solvers.cpu.hines_kernels import cells_serial
from hinesbatch.tree import branches
from hinesbatch.tree import random_trees as rt
from hinesbatch.tree.balance import (COST_CANDIDATES, cost_threshold, reroot, split_branches,
                                     split_threshold, tree_centres)

SHAPES = {
    "single-node": lambda sym: rt.chain(1, rng=1, symmetric=sym),
    "two-node": lambda sym: rt.chain(2, rng=2, symmetric=sym),
    "chain-odd": lambda sym: rt.chain(9, rng=3, symmetric=sym),
    "chain-even": lambda sym: rt.chain(10, rng=4, symmetric=sym),
    "star": lambda sym: rt.star(40, rng=5, symmetric=sym),
    "binary": lambda sym: rt.binary_tree(5, branch_length=3, rng=6, symmetric=sym),
    "random-sparse": lambda sym: rt.random_tree(700, rng=7, branch_probability=0.05,
                                                symmetric=sym),
    "random-bushy": lambda sym: rt.random_tree(400, rng=8, branch_probability=0.9,
                                               symmetric=sym),
    "mixed-batch": lambda sym: rt.random_batch(40, rng=9, max_nodes=90, symmetric=sym),
    "real-purkinje": lambda sym: rt.structure_from_parents(real_parents("v_e_purk2.CNG.swc"),
                                                           rng=10, symmetric=sym),
}


def neighbours(parent):
    adj = [[] for _ in parent]
    for i, p in enumerate(parent):
        if p >= 0:
            adj[i].append(p)
            adj[p].append(i)
    return adj


def eccentricities(parent) -> list[int]:
    """Farthest distance from every node, by a breadth-first search from each (slow, plain)."""
    adj = neighbours(parent)
    out = []
    for start in range(len(parent)):
        dist = {start: 0}
        queue = deque([start])
        while queue:
            x = queue.popleft()
            for y in adj[x]:
                if y not in dist:
                    dist[y] = dist[x] + 1
                    queue.append(y)
        out.append(max(dist.values()))
    return out


def local_parent(s: HinesStructure, c: int) -> list[int]:
    return s.cell(c).parent.tolist()


def serial_solve(s: HinesStructure, d, rhs) -> np.ndarray:
    d, x = d.copy(), rhs.copy()
    assert cells_serial(s.parent, s.cell_offsets, s.u, s.lower, d, x) == (-1, -1)
    return x


def depth(parent) -> int:
    parent = np.asarray(parent)
    level = np.zeros(parent.size, np.int64)
    for i in range(1, parent.size):
        level[i] = level[parent[i]] + 1
    return int(level.max(initial=0))


@pytest.mark.parametrize("name", ["single-node", "two-node", "chain-odd", "chain-even", "star",
                                  "binary", "random-sparse", "mixed-batch"])
def test_centres_minimise_the_farthest_distance(name):
    s = SHAPES[name](True)
    centres = tree_centres(s)
    assert centres.shape == (s.n_cells,) and centres.dtype == np.int64
    for c in range(s.n_cells):
        ecc = eccentricities(local_parent(s, c))
        best = min(ecc)
        assert ecc[centres[c]] == best
        assert centres[c] == ecc.index(best)  # of two centres, the lower index


def test_centre_of_a_chain_is_its_middle():
    assert tree_centres(rt.chain(9)).tolist() == [4]
    assert tree_centres(rt.chain(10)).tolist() == [4]  # nodes 4 and 5 tie: the lower
    assert tree_centres(MonoBatch(rt.chain(7), 3)).tolist() == [3]


@pytest.mark.parametrize("symmetric", [True, False], ids=["symmetric", "nonsymmetric"])
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_reroot_is_the_same_matrix_permuted(name, symmetric):
    s = SHAPES[name](symmetric)
    r = reroot(s)
    new = r.structure
    assert isinstance(new, HinesStructure)
    np.testing.assert_array_equal(new.cell_offsets, s.cell_offsets)
    assert branches(new).contiguous
    d, rhs = rt.diagonally_dominant(s, rng=11)
    if s.n_nodes <= 800:
        a = s.to_dense(d)
        np.testing.assert_array_equal(new.to_dense(d[r.order]), a[np.ix_(r.order, r.order)])
    # solve the re-rooted system, map back, compare with the serial solve of the original
    x_ref = serial_solve(s, d, rhs)
    x = serial_solve(new, d[r.order], rhs[r.order])[np.argsort(r.order)]
    assert np.max(np.abs(x - x_ref)) <= 1e-12 * np.max(np.abs(x_ref))
    for c in np.flatnonzero(s.cell_sizes <= 400):  # every cell is now rooted at its centre
        assert depth(local_parent(new, c)) == min(eccentricities(local_parent(s, c)))


def test_reroot_maps_and_explicit_roots():
    s = HinesStructure.concatenate([rt.chain(5, rng=1, symmetric=False), rt.star(4, rng=2)])
    r = reroot(s, roots=[4, 2])  # the far end of the chain, a leaf of the star
    assert r.structure.parent.tolist() == [-1, 0, 1, 2, 3, -1, 5, 6, 6]
    assert r.order.tolist() == [4, 3, 2, 1, 0, 7, 5, 6, 8]
    # every chain edge is reversed: the new u is the old l of the old child
    assert r.swapped.tolist() == [False, True, True, True, True, False, True, False, False]
    assert r.source.tolist() == [-1, 4, 3, 2, 1, -1, 7, 6, 8]
    np.testing.assert_array_equal(r.structure.u[1:5], s.l[[4, 3, 2, 1]])
    np.testing.assert_array_equal(r.structure.l[1:5], s.u[[4, 3, 2, 1]])


def test_reroot_mono_batch_and_bad_roots():
    m = MonoBatch(rt.chain(7, rng=3), 5)
    r = reroot(m)
    assert isinstance(r.structure, MonoBatch) and r.structure.n_cells == 5
    assert r.structure.cell.parent.tolist() == [-1, 0, 1, 2, 0, 4, 5]
    s = rt.random_batch(3, rng=4, max_nodes=5)
    with pytest.raises(ValueError, match="one per cell"):
        reroot(s, roots=[0, 0])
    with pytest.raises(ValueError, match=r"roots\[1\]"):
        reroot(s, roots=[0, int(s.cell_sizes[1]), 0])


def pieces_of(b):
    """Per branch: its nodes (parent to tip)."""
    return [b.nodes[b.offsets[i]:b.offsets[i + 1]].tolist() for i in range(b.n_branches)]


def test_split_a_chain_at_a_fixed_length():
    sb = split_branches(branches(rt.chain(7)), rule=3)
    assert pieces_of(sb) == [[0, 1, 2], [3, 4, 5], [6]]
    assert sb.level.tolist() == [0, 1, 2]
    assert sb.parent_node.tolist() == [-1, 2, 5] and sb.parent_branch.tolist() == [-1, 0, 1]
    assert split_threshold([1, 2], rule=3, min_length=5) == 5


def test_split_moves_the_subtree_one_level_down():
    # root chain 0-1-2-3 with two side branches on node 3: {4, 5} and {6}
    s = rt.structure_from_parents([-1, 0, 1, 2, 3, 4, 3])
    b = branches(s)
    assert pieces_of(b) == [[0, 1, 2, 3], [4, 5], [6]] and b.level.tolist() == [0, 1, 1]
    sb = split_branches(b, rule=2)
    assert pieces_of(sb) == [[0, 1], [2, 3], [4, 5], [6]]
    assert sb.level.tolist() == [0, 1, 2, 2]
    assert sb.parent_node.tolist() == [-1, 1, 3, 3]


def test_mean_rule_is_arbors_level_by_level():
    # level 0: one chain of 30 (mean 30: kept); level 1: branches of 40, 10, 10 (mean 20):
    # the 40 is cut at 20; level 2 then holds its rest (20) and the others' children (none)
    parent = list(range(-1, 29))  # chain 0..29
    for length in (40, 10, 10):
        first = len(parent)
        parent += [29] + list(range(first, first + length - 1))
    b = branches(rt.structure_from_parents(parent))
    sb = split_branches(b, rule="mean")
    assert sorted(sb.length.tolist()) == [10, 10, 20, 20, 30]
    assert sb.level[sb.length == 30].tolist() == [0]
    assert sorted(sb.level.tolist()) == [0, 1, 1, 1, 2]
    # the default keeps Arbor's 10-node minimum; with min_length 1 the mean still rules
    assert split_branches(b, rule="mean", min_length=1).n_branches == 5
    assert sorted(split_branches(b, rule="mean", min_length=25).length.tolist()) == \
        [10, 10, 15, 25, 30]  # cut at 25, not 20


def test_split_invariants_on_random_trees():
    s = rt.random_batch(60, rng=12, max_nodes=200)
    b = branches(s)
    for rule in ("mean", "cost", 1, 4):
        sb = split_branches(b, rule=rule, min_length=1)
        np.testing.assert_array_equal(sb.nodes, b.nodes)
        assert sb.offsets[-1] == s.n_nodes and np.all(sb.length >= 1)
        has = sb.parent_branch >= 0
        assert np.all(sb.level[has] == sb.level[sb.parent_branch[has]] + 1)
        assert np.all(sb.level[~has] == 0)
        assert np.all(sb.parent_branch[has] < np.flatnonzero(has))
        # the parent node of every piece is the last node of its parent piece
        last = sb.nodes[sb.offsets[1:] - 1]
        np.testing.assert_array_equal(sb.parent_node[has], last[sb.parent_branch[has]])
        # each piece is a chain of the tree
        for i in np.flatnonzero(sb.length > 1)[:200]:
            run = sb.nodes[sb.offsets[i]:sb.offsets[i + 1]]
            np.testing.assert_array_equal(s.parent[run[1:]], run[:-1])
        if isinstance(rule, int):
            assert sb.length.max() <= rule


def test_weights_stand_for_copies():
    cells = [rt.random_tree(300, rng=13, branch_probability=0.05),
             rt.random_tree(120, rng=14, branch_probability=0.3)]
    copies = HinesStructure.concatenate([cells[0]] * 3 + [cells[1]] * 5)
    reps = HinesStructure.concatenate(cells)
    full = split_branches(branches(copies), rule="mean", min_length=1)
    weighted = split_branches(branches(reps), rule="mean", min_length=1, weights=[3, 5])
    for c_full, c_rep in ((0, 0), (3, 1)):
        assert sorted(full.length[full.cell == c_full].tolist()) == \
            sorted(weighted.length[weighted.cell == c_rep].tolist())


def modelled_cost(b, barrier_cost):
    total = 0.0
    for c in np.unique(b.cell):
        mine = b.cell == c
        levels = b.level[mine]
        total += sum(b.length[mine][levels == L].max() for L in np.unique(levels))
        total += barrier_cost * (levels.max() + 1)
    return total


@pytest.mark.parametrize("barrier_cost", [0.5, 4.0, 50.0])
def test_cost_rule_picks_the_cheapest_candidate(barrier_cost):
    s = HinesStructure.concatenate(
        [rt.random_tree(400, rng=15 + i, branch_probability=p) for i, p in
         enumerate((0.02, 0.1, 0.5))])
    b = branches(s)
    chosen = cost_threshold(b, barrier_cost=barrier_cost)
    costs = {None: modelled_cost(b, barrier_cost)}
    for h in COST_CANDIDATES:
        costs[h] = modelled_cost(split_branches(b, rule=h, min_length=1), barrier_cost)
    assert costs[chosen] == pytest.approx(min(costs.values()))
    got = split_branches(b, rule="cost", barrier_cost=barrier_cost)
    assert modelled_cost(got, barrier_cost) == pytest.approx(min(costs.values()))


def test_cost_rule_extremes():
    long_chains = HinesStructure.concatenate([rt.chain(200)] * 2)
    b = branches(rt.binary_tree(6, branch_length=2))
    assert cost_threshold(branches(long_chains), barrier_cost=1.0) is None  # one chain: no gain
    assert cost_threshold(b, barrier_cost=1e6) is None  # barriers cost everything


def test_split_errors():
    b = branches(rt.chain(5))
    with pytest.raises(ValueError, match="unknown split rule"):
        split_branches(b, rule="median")
    with pytest.raises(ValueError, match="min_length"):
        split_branches(b, rule=2, min_length=0)
    with pytest.raises(ValueError, match="weights"):
        split_branches(b, weights=[1, 2])
    with pytest.raises(ValueError, match="barrier_cost"):
        split_branches(b, rule="cost", barrier_cost=-1.0)
