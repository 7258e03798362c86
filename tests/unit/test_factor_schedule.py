"""The schedule of ``block-shared`` with ``keep="factors"``, checked on the CPU (no GPU).

``emulate`` replays ``hines_factors`` (kernels/hines_factors.cu) entry by entry in NumPy: the
slot carries in "registers", the shared slots m/y, the flags' read and store rules, in the
kernel's order. A wrong flag (a carry read that nobody wrote, a slot summed before it was
initialised, an x read before it was stored) gives a wrong answer or a NaN here, before any
device time is spent. Per-cell structures are replayed from ``factor_pflags``.
"""
from __future__ import annotations

import numpy as np
import pytest

from hinesbatch.tree.schedules.factors import (ACC, ACC_INIT, CARRY_IN, CARRY_OUT, FLAG_BITS,
                                               ROOT, factor_flags, factor_pflags,
                                               factor_schedule)
from hinesbatch.tree import random_trees as rt
from hinesbatch.tree.structure import HinesStructure, MonoBatch

from schedule_cells import CELLS

SLOTS = (1, 2, 4, 8, 16)  # 16: 8 lanes of 2 nodes


def emulate(entries, lu, slots, d, rhs):
    """Solve ``(n_cells, n)`` systems as hines_factors does with schedule ``entries``: slot n
    is the scratch target, each step loads all its slots, computes, then stores."""
    cells, n = d.shape
    sm = np.full((cells, n + 1), np.nan)  # shared slots start as garbage
    sy = np.full((cells, n + 1), np.nan)
    cd, cr = np.zeros((slots, cells)), np.zeros((slots, cells))
    steps = entries.shape[0] // slots

    def slots_of(e):
        j, p, f = (int(x) for x in e[:3])
        own = j if j >= 0 else n
        target = n if (j < 0 or f & (CARRY_OUT | ROOT)) else p
        return j, f, own, target

    def pick(flag, a, b):  # the kernel's select: never arithmetic on the unused value
        return a if flag else b

    for s in range(steps):
        rows = [slots_of(entries[s * slots + v]) for v in range(slots)]
        loads = [(sm[:, own].copy(), sy[:, own].copy(), sm[:, t].copy(), sy[:, t].copy())
                 for _, _, own, t in rows]
        stores = []
        for v, ((j, f, own, t), (acc_d, acc_r, old_d, old_r)) in enumerate(zip(rows, loads)):
            lj, uj = lu[s * slots + v]
            big_d = d[:, j] if j >= 0 else np.ones(cells)
            big_r = rhs[:, j] if j >= 0 else np.zeros(cells)
            big_d = big_d + pick(f & CARRY_IN, cd[v], 0.0) + pick(f & ACC, acc_d, 0.0)
            big_r = big_r + pick(f & CARRY_IN, cr[v], 0.0) + pick(f & ACC, acc_r, 0.0)
            r = 1.0 / big_d
            m, y = lj * r, big_r * r
            cd[v], cr[v] = -uj * m, -uj * y
            stores.append((own, t, m, y, pick(f & ACC_INIT, 0.0, old_d) + cd[v],
                           pick(f & ACC_INIT, 0.0, old_r) + cr[v]))
        for own, t, m, y, new_d, new_r in stores:
            sm[:, own], sy[:, own] = m, y
            sm[:, t], sy[:, t] = new_d, new_r
    x = np.full((cells, n), np.nan)
    xc = np.zeros((slots, cells))
    for s in range(steps - 1, -1, -1):
        rows = [slots_of(entries[s * slots + v]) for v in range(slots)]
        loads = [(sm[:, own].copy(), sy[:, own].copy(), sm[:, t].copy()) for _, _, own, t in rows]
        for v, ((j, f, own, t), (m, y, xq)) in enumerate(zip(rows, loads)):
            xp = 0.0 if f & ROOT else pick(f & CARRY_OUT, xc[v], xq)
            xc[v] = y - m * xp
        for v, (j, f, own, t) in enumerate(rows):
            if j >= 0:
                x[:, j] = xc[v]
            sm[:, own] = xc[v]
    return x


@pytest.mark.parametrize("slots", SLOTS)
@pytest.mark.parametrize("name,cell", CELLS, ids=[c[0] for c in CELLS])
def test_schedule_is_a_valid_elimination_order(name, cell, slots):
    s = factor_schedule(cell, slots)
    n = cell.n_nodes
    order = s.order()
    assert sorted(order.tolist()) == list(range(n))  # every node exactly once
    node = s.entries[:, 0].reshape(-1, slots)
    step_of = np.empty(n, dtype=np.int64)
    slot_of = np.empty(n, dtype=np.int64)
    for st, row in enumerate(node):
        for v, j in enumerate(row.tolist()):
            if j >= 0:
                step_of[j], slot_of[j] = st, v
    child = np.flatnonzero(cell.parent >= 0)
    assert np.all(step_of[child] < step_of[cell.parent[child]])  # children in earlier steps
    assert step_of[0] == s.n_steps - 1 and np.all(node[-1] < 1)  # the root alone, last
    flags = np.zeros(n, dtype=np.int64)
    flags[order] = s.entries[s.entries[:, 0] >= 0, 2]
    carry = (flags & CARRY_OUT) != 0
    p = cell.parent
    # a carried child's parent is its slot's next node; at most one carried child per node
    assert np.all(step_of[p[carry]] == step_of[carry] + 1)
    assert np.all(slot_of[p[carry]] == slot_of[carry])
    assert np.array_equal(np.bincount(p[carry], minlength=n) > 0, (flags & CARRY_IN) != 0)
    other = child[~carry[child]]
    assert np.array_equal(np.bincount(p[other], minlength=n) > 0, (flags & ACC) != 0)
    inits = np.flatnonzero(flags & ACC_INIT)
    assert sorted(p[inits].tolist()) == sorted(set(p[other].tolist()))  # one init per slot
    for row in node:  # distinct parents within a step: its loads may all precede its stores
        parents = p[row[row > 0]]
        assert len(set(parents.tolist())) == parents.size


@pytest.mark.parametrize("slots", SLOTS)
@pytest.mark.parametrize("name,cell", CELLS, ids=[c[0] for c in CELLS])
def test_emulated_kernel_matches_dense_solve(name, cell, slots):
    mono = MonoBatch(cell, 5)
    d, rhs = rt.diagonally_dominant(mono, rng=slots)
    s = factor_schedule(cell, slots)
    x = emulate(s.entries, s.lu, slots, d, rhs)
    ref = rt.dense_solve(mono, d, rhs)
    assert np.linalg.norm(x - ref) <= 1e-12 * np.linalg.norm(ref)


def test_slots_shorten_the_sweep_and_chains_carry():
    cell = rt.binary_tree(6, branch_length=2, rng=1)  # 63 branches of 2 nodes
    steps = {v: factor_schedule(cell, v).n_steps for v in SLOTS}
    assert steps[1] == cell.n_nodes
    assert steps[8] < steps[4] < steps[2] < steps[1]
    assert steps[8] >= 6 * 2  # the longest leaf-to-root path has 12 nodes
    chain = rt.chain(40, rng=2)
    for v in SLOTS:  # an unbranched cell is one chain: every contribution carried
        assert factor_schedule(chain, v).carried == 1.0


def test_per_cell_flags_match_the_one_slot_schedule():
    rng = np.random.default_rng(5)
    cells = [rt.random_tree(int(rng.integers(1, 80)), rng=rng, branch_probability=0.4)
             for _ in range(30)]
    batch = HinesStructure.concatenate(cells)
    local = np.concatenate([c.parent for c in cells])
    pf = factor_pflags(local, batch.cell_offsets)
    assert np.array_equal(pf >> FLAG_BITS, local)
    for c, cell in enumerate(cells):
        a, b = batch.cell_offsets[c], batch.cell_offsets[c + 1]
        s = factor_schedule(cell, 1)
        flags = np.zeros(cell.n_nodes, dtype=np.int64)
        flags[s.order()] = s.entries[:, 2]
        assert np.array_equal(pf[a:b] & ((1 << FLAG_BITS) - 1), flags)
        assert np.array_equal(flags, factor_flags(cell.parent.astype(np.int64),
                                                  [[j] for j in range(cell.n_nodes - 1, -1, -1)]))


def test_per_cell_replay_matches_dense_solve():
    """The per-cell kernel path: node n-1-s at step s, flags from factor_pflags."""
    rng = np.random.default_rng(9)
    cells = [rt.random_tree(int(rng.integers(1, 60)), rng=rng, branch_probability=0.5,
                            symmetric=bool(k % 2)) for k in range(12)]
    for cell in cells:
        pf = factor_pflags(cell.parent, np.array([0, cell.n_nodes]))
        n = cell.n_nodes
        j = np.arange(n - 1, -1, -1)
        entries = np.stack([j, pf[j] >> FLAG_BITS, pf[j] & 31, 0 * j], axis=1)
        lu = np.stack([cell.lower[j], cell.u[j]], axis=1)
        mono = MonoBatch(cell, 3)
        d, rhs = rt.diagonally_dominant(mono, rng=7)
        x = emulate(entries, lu, 1, d, rhs)
        ref = rt.dense_solve(mono, d, rhs)
        assert np.linalg.norm(x - ref) <= 1e-12 * np.linalg.norm(ref)
