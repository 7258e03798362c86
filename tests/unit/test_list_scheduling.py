"""The one list scheduler of the host-side schedules (tree/schedules/list_scheduling.py) and
the one depth function (tree.branches.node_depths)."""
import numpy as np
import pytest

from hinesbatch.tree import random_trees as rt
from hinesbatch.tree.branches import node_depths
from hinesbatch.tree.schedules.list_scheduling import list_schedule


def test_node_depths_of_a_forest():
    parent = np.array([-1, 0, 1, 1, -1, 4, 0])
    assert node_depths(parent).tolist() == [0, 1, 2, 2, 0, 1, 1]


def test_the_docstring_example_of_the_tiled_schedule():
    """Two branches of two nodes, two nodes per step: 1 and 3 share the parent 0."""
    steps = list_schedule([-1, 0, 1, 0, 3], 2, ties="low")
    assert steps == [[2, 4], [1, -1], [3, -1], [0, -1]]


@pytest.mark.parametrize("carry", [False, True])
@pytest.mark.parametrize("ties", ["low", "high"])
@pytest.mark.parametrize("width", [1, 2, 3, 8])
def test_every_node_once_children_first_parents_distinct(width, ties, carry):
    for seed in range(10):
        parent = rt.random_tree(int(np.random.default_rng(seed).integers(1, 120)), rng=seed,
                                branch_probability=0.3).parent.astype(np.int64)
        steps = list_schedule(parent, width, ties=ties, carry=carry)
        assert all(len(s) == width for s in steps)
        nodes = [j for s in steps for j in s if j >= 0]
        assert sorted(nodes) == list(range(parent.size))
        step_of = {j: k for k, s in enumerate(steps) for j in s if j >= 0}
        for j in range(1, parent.size):
            assert step_of[j] < step_of[int(parent[j])]
        for s in steps:
            ps = [int(parent[j]) for j in s if j >= 0 and parent[j] >= 0]
            assert len(ps) == len(set(ps))
        assert all(any(j >= 0 for j in s) for s in steps)  # no empty step


def test_ties_and_carry_change_the_order_not_the_rules():
    star = np.array([-1, 0, 0, 0])
    assert list_schedule(star, 1, ties="low")[:3] == [[1], [2], [3]]
    assert list_schedule(star, 1, ties="high")[:3] == [[3], [2], [1]]
    chain_and_leaf = np.array([-1, 0, 1, 0])  # 2 -> 1 -> 0 and 3 -> 0
    assert list_schedule(chain_and_leaf, 2, ties="high", carry=True) == [[2, 3], [1, -1],
                                                                       [0, -1]]


def test_ties_are_checked():
    with pytest.raises(ValueError, match="ties must be 'low' or 'high', got 'x'"):
        list_schedule([-1, 0], 2, ties="x")
