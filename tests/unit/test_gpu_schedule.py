"""The tiled GPU strategy's elimination schedule, checked on the CPU (no GPU, no CuPy).

``emulate`` replays ``hines_tiled_mono`` (kernels/hines_tiled.cu) slot by slot in NumPy, with
the kernel's order of loads and stores, so the schedule and the kernel's arithmetic are
checked against a dense solve here, before any device time is spent.
"""
from __future__ import annotations

import numpy as np
import pytest

from hinesbatch.solvers.gpu.schedule import tiled_schedule
from hinesbatch.tree import random_trees as rt
from hinesbatch.tree.structure import MonoBatch

from schedule_cells import CELLS

BATCHES = (1, 2, 4, 8)


def emulate(schedule, d, rhs):
    """Solve ``(n_cells, n)`` systems as hines_tiled_mono does (slots, batches, order)."""
    kb, n, stride = schedule.batch, schedule.n_nodes, schedule.slot_stride
    cells = d.shape[0]
    sd, sr = np.zeros((cells, stride)), np.zeros((cells, stride))
    sd[:, schedule.slot], sr[:, schedule.slot] = d, rhs  # staging: node i -> slot[i]
    sd[:, n:n + kb] = 1.0
    jp = schedule.jp.reshape(-1, kb)
    j, p = jp & 0xFFFF, jp >> 16
    lv, uv = schedule.l.reshape(-1, kb), schedule.u.reshape(-1, kb)
    for b in range(jp.shape[0]):
        big_d, big_r, dp, rp = sd[:, j[b]], sr[:, j[b]], sd[:, p[b]], sr[:, p[b]]
        r = 1.0 / big_d
        m, y = lv[b] * r, big_r * r
        for k in range(kb):  # stores in the kernel's order
            sd[:, j[b, k]], sr[:, j[b, k]] = m[:, k], y[:, k]
            sd[:, p[b, k]] = dp[:, k] - uv[b, k] * m[:, k]
            sr[:, p[b, k]] = rp[:, k] - uv[b, k] * y[:, k]
    for b in range(jp.shape[0] - 1, -1, -1):
        y, m, xp = sr[:, j[b]], sd[:, j[b]], sr[:, p[b]]
        for k in range(kb):
            sr[:, j[b, k]] = y[:, k] - m[:, k] * xp[:, k]
    return sr[:, schedule.slot]


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("name,cell", CELLS, ids=[c[0] for c in CELLS])
def test_schedule_is_a_valid_elimination_order(name, cell, batch):
    s = tiled_schedule(cell, batch)
    n = cell.n_nodes
    assert s.slot_stride == n + batch + 1
    order = s.order()
    assert sorted(order.tolist()) == list(range(n))  # every node exactly once
    assert np.array_equal(s.slot[order], np.arange(n))  # stored in schedule order
    batch_of = np.empty(n, dtype=np.int64)
    jp = s.jp.reshape(-1, batch)
    nodes_of = s.node.reshape(-1, batch)
    for b, (row, nodes) in enumerate(zip(jp, nodes_of)):
        real = nodes >= 0
        batch_of[nodes[real]] = b
        assert np.array_equal(row[real] & 0xFFFF, s.slot[nodes[real]])
        assert np.all(row[~real] & 0xFFFF >= n)  # dummies use their own slots
        parents = (row >> 16)[real]
        assert len(set(parents.tolist())) == parents.size  # distinct parents in a batch
    child = np.flatnonzero(cell.parent >= 0)
    assert np.all(batch_of[child] < batch_of[cell.parent[child]])  # children first
    assert batch_of[0] == jp.shape[0] - 1  # the root closes the sweep


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("name,cell", CELLS, ids=[c[0] for c in CELLS])
def test_emulated_kernel_matches_dense_solve(name, cell, batch):
    mono = MonoBatch(cell, 5)
    d, rhs = rt.diagonally_dominant(mono, rng=batch)
    x = emulate(tiled_schedule(cell, batch), d, rhs)
    ref = rt.dense_solve(mono, d, rhs)
    assert np.linalg.norm(x - ref) <= 1e-12 * np.linalg.norm(ref)


def test_batches_shorten_the_sweep():
    cell = rt.binary_tree(6, branch_length=2, rng=1)  # 63 branches of 2 nodes
    steps = {kb: tiled_schedule(cell, kb).n_batches for kb in BATCHES}
    assert steps[1] == cell.n_nodes
    assert steps[8] < steps[4] < steps[2] < steps[1]
    depth_bound = 6 * 2  # the longest leaf-to-root path has 12 nodes
    assert steps[8] >= depth_bound


def test_docstring_example():
    from hinesbatch.tree.random_trees import structure_from_parents

    s = tiled_schedule(structure_from_parents([-1, 0, 1, 0, 3], rng=0), 2)
    nodes = s.node.reshape(-1, 2)
    assert [sorted(int(v) for v in row if v >= 0) for row in nodes] == [[2, 4], [1], [3], [0]]
