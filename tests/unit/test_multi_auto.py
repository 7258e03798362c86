"""The ``strategy="auto"`` rule of the GPU backend (no GPU needed: it is a pure function)."""
import numpy as np
import pytest

from hinesbatch.solvers.gpu.auto import (GROUPED_MAX_CLASSES,
                                         UNIFORM_SPREAD, auto_strategy, choose, depth_fraction)
from hinesbatch.solvers.gpu.backend import STRATEGIES
from hinesbatch.tree import random_trees as rt
from hinesbatch.tree.structure import HinesStructure, MonoBatch


def test_depth_fraction_against_hand_counts():
    assert depth_fraction(np.array([-1])) == 1.0
    assert depth_fraction(rt.chain(10, rng=0).parent) == 1.0
    assert depth_fraction(rt.star(5, rng=0).parent) == pytest.approx(2 / 5)
    # 3 branches of 4 nodes: root branch + 2 children -> longest path 8 of 12
    assert depth_fraction(rt.binary_tree(2, branch_length=4, rng=0).parent) == pytest.approx(8 / 12)


def test_shared_structure_gets_tiled():
    bushy = rt.random_tree(200, rng=1, branch_probability=0.5)
    deep = rt.binary_tree(2, branch_length=170, rng=2)  # Fig. 14's 2-level tree: 2/3 on one path
    for cell in (bushy, deep):
        for n in (1, 100, 3000, 256000):
            name, options, why = auto_strategy(MonoBatch(cell, n))
            assert (name, options) == ("tiled", {}) and "MonoBatch" in why


def test_per_cell_batches_by_size_spread():
    # more classes than grouped takes (every cell's couplings its own)
    same = HinesStructure.concatenate([rt.random_tree(50, rng=k)
                                       for k in range(GROUPED_MAX_CLASSES + 1)])
    name, options, why = auto_strategy(same)
    assert (name, options) == ("tiled", {}) and "nearly equal" in why
    mixed = HinesStructure.concatenate([rt.random_tree(10, rng=k) if k % 2 else rt.chain(90, rng=k)
                                        for k in range(GROUPED_MAX_CLASSES + 1)])
    name, options, why = auto_strategy(mixed)
    assert (name, options) == ("fine", {"reroot": True, "split": "cost"}) and "mixed" in why
    edge = dict(mono=False, n_cells=10, mean_nodes=100.0)
    assert choose(max_nodes=int(UNIFORM_SPREAD * 100), **edge)[0] == "tiled"
    assert choose(max_nodes=int(UNIFORM_SPREAD * 100) + 1, **edge)[0] == "fine"


def test_per_cell_batches_of_few_matrices_get_grouped():
    """Copies of a few cells (the same tree and couplings), and a few cells however different,
    are solved class by class; many cells with every cell's couplings different are not."""
    pool = [rt.random_tree(40, rng=1), rt.chain(90, rng=2), rt.random_tree(300, rng=3)]
    pick = np.random.default_rng(4).integers(0, len(pool), 3 * GROUPED_MAX_CLASSES + 10)
    copies = HinesStructure.concatenate([pool[i] for i in pick])
    name, options, why = auto_strategy(copies)
    assert (name, options) == ("grouped", {}) and "3 classes" in why
    scale = np.random.default_rng(5).uniform(0.9, 1.1, pick.size)
    distinct = HinesStructure.concatenate([HinesStructure(pool[i].parent, pool[i].u * f)
                                           for i, f in zip(pick, scale)])
    assert auto_strategy(distinct)[0] == "fine"
    few = HinesStructure.concatenate([distinct.cell(c) for c in range(10)])  # 10 classes
    name, options, why = auto_strategy(few)
    assert (name, options) == ("grouped", {}) and "10 classes" in why
    edge = dict(mono=False, mean_nodes=100.0, max_nodes=1000)
    assert choose(n_cells=5, classes=5, **edge)[0] == "grouped"
    assert choose(n_cells=10**6, classes=GROUPED_MAX_CLASSES, **edge)[0] == "grouped"
    many = GROUPED_MAX_CLASSES + 1
    assert choose(n_cells=many, classes=many, **edge)[0] == "fine"
    assert choose(n_cells=10**6, classes=many, **edge)[0] == "fine"
    assert choose(n_cells=10**6, classes=None, **edge)[0] == "fine"  # rows without classes


def test_grouped_takes_at_most_one_class_per_sm():
    """With the device's SM count known, ``grouped`` takes up to one class per SM (its one
    launch keeps one block per SM), past :data:`GROUPED_MAX_CLASSES`; the reason says which."""
    edge = dict(mono=False, n_cells=10**4, mean_nodes=200.0, max_nodes=200)
    name, _, why = choose(classes=128, sms=132, **edge)
    assert name == "grouped" and "128 classes" in why and "<= 132 classes, one per SM" in why
    assert choose(classes=132, sms=132, **edge)[0] == "grouped"
    assert choose(classes=133, sms=132, **edge)[0] == "tiled"
    assert choose(classes=40, sms=32, **edge)[0] == "tiled"
    name, _, why = choose(classes=GROUPED_MAX_CLASSES, **edge)
    assert name == "grouped" and "SM count not known" in why
    assert choose(classes=GROUPED_MAX_CLASSES + 1, **edge)[0] == "tiled"
    cells = HinesStructure.concatenate([rt.random_tree(50, rng=k) for k in range(100)])
    assert auto_strategy(cells)[0] == "tiled"
    name, _, why = auto_strategy(cells, sms=132)
    assert name == "grouped" and "100 classes" in why


def test_every_pick_is_a_registered_strategy_with_its_options():
    for mono in (True, False):
        for n in (1, 10, 10**4, 10**6):
            for max_nodes in (10, 100, 1000):
                for classes in (None, 1, 17, n):
                    name, options, _ = choose(mono=mono, n_cells=n, mean_nodes=100.0,
                                              max_nodes=max_nodes, classes=classes)
                    assert name in STRATEGIES
                    assert set(options) <= set(STRATEGIES[name].options)
