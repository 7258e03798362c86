"""Small cells of every shape for the GPU schedules' CPU tests (test_gpu_schedule.py,
test_factor_schedule.py): one node, two nodes, a chain, a star, a binary tree, bushy and
sparse random trees, an asymmetric one."""
from __future__ import annotations

import numpy as np

from hinesbatch.tree import random_trees as rt


def _cells():
    rng = np.random.default_rng(20261121)
    yield "single", rt.chain(1, rng=rng)
    yield "two", rt.chain(2, rng=rng)
    yield "chain", rt.chain(37, rng=rng)
    yield "star", rt.star(19, rng=rng)
    yield "binary", rt.binary_tree(4, branch_length=3, rng=rng)
    yield "bushy", rt.random_tree(150, rng=rng, branch_probability=0.8)
    yield "sparse", rt.random_tree(150, rng=rng, branch_probability=0.1)
    yield "asym", rt.random_tree(60, rng=rng, symmetric=False)


#: (name, HinesStructure of one cell)
CELLS = list(_cells())
