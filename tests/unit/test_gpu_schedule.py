"""The tiled GPU strategy's elimination schedule, checked on the CPU (no GPU, no CuPy).

``emulate`` replays ``hines_tiled_mono`` (kernels/hines_tiled.cu) slot by slot in NumPy, with
the kernel's order of loads and stores, so the schedule and the kernel's arithmetic are
checked against a dense solve here, before any device time is spent.
"""
from __future__ import annotations

import numpy as np
import pytest

from hinesbatch.tree.schedules.tiled import (kernel_arrays, lu_len, stage_geometry,
                                             tiled_schedule)
from hinesbatch.tree import random_trees as rt
from hinesbatch.tree.balance import tree_centres
from hinesbatch.tree.structure import MonoBatch

from schedule_cells import CELLS

BATCHES = (1, 2, 4, 8)
#: (batch, lanes, item): schedules whose steps are ordered for the banks (see _bank_phase).
SPREAD = ((8, 8, 8), (16, 8, 8), (16, 16, 8), (32, 32, 8), (8, 8, 4), (32, 16, 4))


def emulate(schedule, d, rhs):
    """Solve ``(n_cells, n)`` systems as hines_tiled_mono does (slots, batches, order), from
    the arrays it reads (:func:`kernel_arrays`: a step's (l, u) from the row of its slot, the
    dummies' slots reading row n)."""
    kb, n, stride = schedule.batch, schedule.n_nodes, schedule.n_nodes + schedule.batch + 1
    cells = d.shape[0]
    arrays = kernel_arrays(schedule, np.float64)
    sd, sr = np.zeros((cells, stride)), np.zeros((cells, stride))
    stage = arrays["stage"]  # staging: node -> slot, in staging order
    sd[:, stage >> 16], sr[:, stage >> 16] = d[:, stage & 0xFFFF], rhs[:, stage & 0xFFFF]
    sd[:, n:n + kb] = 1.0
    j, p = arrays["jp"][:, 0].reshape(-1, kb), arrays["jp"][:, 1].reshape(-1, kb)
    lu = arrays["lu"][np.minimum(j, n)]
    lv, uv = lu[..., 0], lu[..., 1]
    for b in range(j.shape[0]):
        big_d, big_r, dp, rp = sd[:, j[b]], sr[:, j[b]], sd[:, p[b]], sr[:, p[b]]
        r = 1.0 / big_d
        m, y = lv[b] * r, big_r * r
        for k in range(kb):  # stores in the kernel's order
            sd[:, j[b, k]], sr[:, j[b, k]] = m[:, k], y[:, k]
            sd[:, p[b, k]] = dp[:, k] - uv[b, k] * m[:, k]
            sr[:, p[b, k]] = rp[:, k] - uv[b, k] * y[:, k]
    for b in range(j.shape[0] - 1, -1, -1):
        y, m, xp = sr[:, j[b]], sd[:, j[b]], sr[:, p[b]]
        for k in range(kb):
            sr[:, j[b, k]] = y[:, k] - m[:, k] * xp[:, k]
    return sr[:, schedule.slot]


def _variants():
    return [(b, 1, 8) for b in BATCHES] + list(SPREAD)


@pytest.mark.parametrize("reroot", [False, True], ids=["root", "centre"])
@pytest.mark.parametrize("batch,lanes,item", _variants())
@pytest.mark.parametrize("name,cell", CELLS, ids=[c[0] for c in CELLS])
def test_schedule_is_a_valid_elimination_order(name, cell, batch, lanes, item, reroot):
    s = tiled_schedule(cell, batch, lanes=lanes, item=item, reroot=reroot)
    n = cell.n_nodes
    _check_eliminated_tree(cell, s, reroot)
    words = 128 // item  # a warp's cells' planes start on banks `phase` words apart
    assert n + batch + 1 <= s.slot_stride < n + batch + 1 + words
    assert s.slot_stride % words == _bank_phase(lanes, item) % words
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
    child = np.flatnonzero(s.parent >= 0)
    assert np.all(batch_of[child] < batch_of[s.parent[child]])  # children first
    root = int(np.flatnonzero(s.parent < 0)[0])
    assert batch_of[root] == jp.shape[0] - 1  # the root closes the sweep
    row = jp[batch_of[root]][nodes_of[batch_of[root]] == root]
    assert np.all(row >> 16 == n + batch)  # its parent: the root-parent slot


def _check_eliminated_tree(cell, s, reroot):
    """The schedule's tree is the cell's (the same edges; its own root unless re-rooted at
    the centre), ranked in Hines order (a parent below its children, so the largest failing
    key of a cascade from one node is that node's); without re-rooting, ranks are the nodes."""
    n = cell.n_nodes
    edges = lambda parent: {frozenset((int(j), int(parent[j])))  # noqa: E731
                            for j in np.flatnonzero(parent >= 0)}
    assert edges(s.parent) == edges(np.asarray(cell.parent))
    assert np.count_nonzero(s.parent < 0) == 1
    if not reroot:
        assert np.array_equal(s.parent, cell.parent) and not s.rerooted
        assert np.array_equal(s.rank, np.arange(n))
    else:
        centre = int(tree_centres(MonoBatch(cell, 1))[0])
        assert s.parent[centre] == -1 and s.rerooted == (centre != 0)
    assert sorted(s.rank.tolist()) == list(range(n))
    child = np.flatnonzero(s.parent >= 0)
    assert np.all(s.rank[s.parent[child]] < s.rank[child])
    key = kernel_arrays(s, np.float64)["node"]
    real = s.node >= 0
    assert np.all(key[~real] == -1)
    assert np.array_equal(key[real] & 0xFFFF, s.node[real])
    assert np.array_equal(key[real] >> 16, s.rank[s.node[real]])


@pytest.mark.parametrize("reroot", [False, True], ids=["root", "centre"])
@pytest.mark.parametrize("batch,lanes,item", _variants())
@pytest.mark.parametrize("name,cell", CELLS, ids=[c[0] for c in CELLS])
def test_emulated_kernel_matches_dense_solve(name, cell, batch, lanes, item, reroot):
    mono = MonoBatch(cell, 5)
    d, rhs = rt.diagonally_dominant(mono, rng=batch)
    x = emulate(tiled_schedule(cell, batch, lanes=lanes, item=item, reroot=reroot), d, rhs)
    ref = rt.dense_solve(mono, d, rhs)
    assert np.linalg.norm(x - ref) <= 1e-12 * np.linalg.norm(ref)


@pytest.mark.parametrize("batch", [1, 8, 32])
def test_kernel_arrays_hold_l_u_per_slot(batch):
    """(l, u) per slot: each real entry's row is its own (l, u), the root's and row n (every
    dummy's) are zeros, the rows are even in number; entries as (slot, parent slot) pairs;
    the staging table pairs each node with its slot."""
    cell = rt.random_tree(300, branch_probability=0.3, rng=batch, symmetric=False)
    s = tiled_schedule(cell, batch, lanes=min(batch, 32))
    a = kernel_arrays(s, np.float32)
    n = cell.n_nodes
    assert a["lu"].shape == (lu_len(n), 2) and lu_len(n) % 2 == 0 and lu_len(n) > n
    assert a["lu"].dtype == np.float32 and a["jp"].dtype == np.int32
    real = s.node >= 0
    row = np.minimum(a["jp"][:, 0], n)
    assert np.array_equal(a["lu"][row[real], 0], s.l[real].astype(np.float32))
    assert np.array_equal(a["lu"][row[real], 1], s.u[real].astype(np.float32))
    assert np.all(a["lu"][n:] == 0) and np.all(a["lu"][s.slot[0]] == 0)  # dummies, root
    assert np.all(row[~real] == n)
    assert np.array_equal(a["jp"][:, 0], s.jp & 0xFFFF)
    assert np.array_equal(a["jp"][:, 1], s.jp >> 16)
    assert np.array_equal(s.slot[a["stage"] & 0xFFFF], a["stage"] >> 16)


#: Share of the excess wavefronts over the ideal that ordering must remove (on the test's
#: three cells, with this test's counts: 25-78% for parents, 43-74% for staging).
GAIN = 0.2


def _bank_phase(lanes, item):
    """Slots side by side in one 128-byte wavefront of a sweep's one-word accesses: a warp's
    32 // lanes cells each take that many consecutive entries of a step."""
    return max(1, (128 // item) * lanes // 32)


def _wavefronts(slots, phase, run):
    """Wavefronts to reach ``slots`` in runs of ``run`` (aligned), ``phase`` slots per
    wavefront at best: per run, the most slots sharing a residue, at least ``run / phase``."""
    total = 0
    for r0 in range(0, slots.size, run):
        part = slots[r0:r0 + run] % phase
        total += int(np.bincount(part, minlength=phase).max())
    return total


@pytest.mark.parametrize("warp_cells", [False, True], ids=["one-cell", "warp-cells"])
@pytest.mark.parametrize("batch,lanes,item", SPREAD)
@pytest.mark.parametrize("name,cell", CELLS, ids=[c[0] for c in CELLS])
def test_stage_order_permutes_within_a_warps_run(name, cell, batch, lanes, item, warp_cells):
    sc = 32 // lanes if warp_cells else 1
    s = tiled_schedule(cell, batch, lanes=lanes, item=item, stage_cells=sc)
    n, run = cell.n_nodes, 32 // sc
    assert s.stage_cells == sc
    assert sorted(s.stage.tolist()) == list(range(n))
    for r0 in range(0, n, run):  # a warp's loads touch the same node range
        assert sorted(s.stage[r0:r0 + run].tolist()) == list(range(r0, min(n, r0 + run)))


def test_stage_cells_are_one_or_a_warps_cells():
    assert stage_geometry(8, 8, 4) == (8, 4)  # 4 cells x 8 nodes; a wavefront: 4 x 4
    assert stage_geometry(8, 8, 1) == (32, 16)  # 32 nodes of one cell; a wavefront: 16
    with pytest.raises(ValueError, match="stage_cells must be 1 or 32 // lanes = 4"):
        stage_geometry(8, 8, 2)


@pytest.mark.parametrize("warp_cells", [False, True], ids=["one-cell", "warp-cells"])
@pytest.mark.parametrize("batch,lanes,item", [(8, 8, 8), (16, 16, 8), (32, 32, 8), (8, 8, 4)])
def test_spread_schedules_meet_fewer_bank_conflicts(batch, lanes, item, warp_cells):
    """On real cells, the ordered steps and staging need fewer wavefronts for the parents'
    slots and for staging than plain schedule order (node order for staging): at least
    ``GAIN`` of the excess over the ideal goes (partial steps keep some, since their
    dummies' slots are fixed). A staging wavefront serves ``modulus`` nodes of each of the
    cells a warp stages (:func:`stage_geometry`)."""
    from hinesbatch.bench._multi_cases import real_cells

    sc = 32 // lanes if warp_cells else 1
    phase, (run, modulus) = _bank_phase(lanes, item), stage_geometry(lanes, item, sc)
    cells = real_cells()
    for name in ("morph_ca1_n120.swc", "v_e_purk2.CNG.swc", "EC3-80604.CNG.swc"):
        cell = cells[name]
        plain = tiled_schedule(cell, batch)
        spread = tiled_schedule(cell, batch, lanes=lanes, item=item, stage_cells=sc)
        assert plain.n_batches == spread.n_batches
        ideal = plain.jp.size // phase
        before = _wavefronts(plain.jp >> 16, phase, phase)
        after = _wavefronts(spread.jp >> 16, phase, phase)
        assert ideal <= after <= before - GAIN * (before - ideal), (name, ideal, after, before)
        ideal = sum(-(-min(run, cell.n_nodes - r0) // modulus)
                    for r0 in range(0, cell.n_nodes, run))
        before = _wavefronts(plain.slot, modulus, modulus)  # node order
        after = _wavefronts(spread.slot[spread.stage], modulus, modulus)
        assert ideal <= after <= before - GAIN * (before - ideal), (name, ideal, after, before)


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
