"""The multi-morphology schedules (levels, fine, dhs), proven on the CPU.

Every schedule is checked structurally (``check_*_schedule``) and run by the CPU emulator
exactly as its GPU kernel will: the result must be bit-identical to the serial solver on the
schedule's working tree (the same arithmetic in the same order), identical when the tasks
of every phase run in the opposite order (they are independent), identical run after run,
and within 1e-12 of the serial solve of the original batch.
"""
from __future__ import annotations

import doctest
import os
import warnings

import numpy as np
import pytest
from solver_cases import REAL_DIR, real_names

import hinesbatch
from hinesbatch import HinesStructure, MonoBatch
from hinesbatch.solvers.cpu.hines_kernels import cells_serial
from schedule_emulator import emulate
from hinesbatch.tree import branches
from hinesbatch.tree import random_trees as rt
from hinesbatch.tree.balance import reroot
from hinesbatch.tree.schedules import (THREAD_CHOICES, branch_metrics, cell_shapes,
                                       check_branch_schedule, check_dhs_schedule,
                                       choose_threads, dhs_schedule, dhs_steps, fine_schedule,
                                       level_schedule, pack_cells, branch_program)
from hinesbatch.tree.schedules import shapes as shapes_module

FORMAT_MD = os.path.join(os.path.dirname(hinesbatch.__file__), "tree", "schedules",
                         "FORMAT.md")


def real_cells() -> list[HinesStructure]:
    """Every test morphology, one node per section (nseg=1); EC3 has a zero radius."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [hinesbatch.discretize(os.path.join(REAL_DIR, n), nseg=1,
                                      min_radius=0.01).hines_structure() for n in real_names()]


@pytest.fixture(scope="module")
def real():
    return real_cells()


def stress_cells(symmetric: bool) -> list[HinesStructure]:
    rng = np.random.default_rng(20)
    cells = [rt.random_tree(int(n), rng=rng, branch_probability=p, symmetric=symmetric)
             for p in (0.1, 0.5, 0.9) for n in rng.integers(50, 600, 4)]
    cells += [rt.star(5000, rng=21, symmetric=symmetric),  # 4999 branches on one level
              rt.chain(1, rng=22, symmetric=symmetric), rt.chain(2, rng=23, symmetric=symmetric),
              rt.chain(700, rng=24, symmetric=symmetric),  # depth several hundred
              rt.random_tree(900, rng=25, branch_probability=0.02, symmetric=symmetric)]
    return cells


def batches(real) -> dict:
    mixed = stress_cells(True)
    order = np.random.default_rng(26).permutation(len(real) * 3 + len(mixed))
    pool = real * 3 + mixed
    return {
        "real-and-random": HinesStructure.concatenate([pool[i] for i in order]),
        "nonsymmetric": HinesStructure.concatenate(stress_cells(False)),
        "mono": MonoBatch(real[real_names().index("morph_ca1_n120.swc")], 6),
        "single-node-cells": HinesStructure.concatenate([rt.chain(1, rng=i) for i in range(5)]),
    }


def serial(s, d, rhs) -> np.ndarray:
    """Algorithm 1 (the serial CPU kernel) on a HinesStructure or MonoBatch."""
    if isinstance(s, MonoBatch):
        return serial(s.expand(), d.reshape(-1), rhs.reshape(-1)).reshape(s.values_shape)
    d, x = np.array(d, np.float64), np.array(rhs, np.float64)
    assert cells_serial(s.parent, s.cell_offsets, s.u, s.lower, d, x) == (-1, -1)
    return x


def working_serial(s, d, rhs, rerooted: bool) -> np.ndarray:
    """The serial solve of the tree a schedule eliminates, in the canonical numbering."""
    if not rerooted:
        return serial(s, d, rhs)
    r = reroot(s)
    back = np.argsort(r.order)
    return serial(r.structure, d[..., r.order], rhs[..., r.order])[..., back]


def assert_proven(schedule, s, *, rerooted: bool, rng: int) -> None:
    d, rhs = rt.diagonally_dominant(s, rng=rng)
    x = emulate(schedule, d, rhs)
    assert x.shape == s.values_shape and np.all(np.isfinite(x))
    np.testing.assert_array_equal(x, working_serial(s, d, rhs, rerooted))  # bit for bit
    np.testing.assert_array_equal(emulate(schedule, d, rhs, reverse=True), x)
    np.testing.assert_array_equal(emulate(schedule, d, rhs), x)  # run after run
    x_ref = serial(s, d, rhs)
    assert np.max(np.abs(x - x_ref), initial=0) <= 1e-12 * np.max(np.abs(x_ref), initial=1)


BRANCH_PLANS = {
    "levels": lambda s: level_schedule(s),
    "levels-contiguous": lambda s: level_schedule(s, lanes=1),
    "levels-balanced": lambda s: level_schedule(s, reroot=True, split="mean", min_length=1),
    "fine-128": lambda s: fine_schedule(s, block_size=128),
    "fine-32-reroot": lambda s: fine_schedule(s, block_size=32, reroot=True),
    "fine-256-split-mean": lambda s: fine_schedule(s, block_size=256, split="mean"),
    "fine-128-reroot-split-cost": lambda s: fine_schedule(s, reroot=True, split="cost"),
    "fine-64-split-2": lambda s: fine_schedule(s, block_size=64, split=2, lanes=8),
}


@pytest.mark.parametrize("batch", ["real-and-random", "nonsymmetric", "mono",
                                   "single-node-cells"])
@pytest.mark.parametrize("plan", sorted(BRANCH_PLANS))
def test_branch_schedules_equal_the_serial_solver(real, plan, batch):
    s = batches(real)[batch]
    schedule = BRANCH_PLANS[plan](s)
    check_branch_schedule(schedule)
    assert_proven(schedule, s, rerooted=schedule.options["reroot"], rng=30)


@pytest.mark.parametrize("batch", ["real-and-random", "nonsymmetric", "mono",
                                   "single-node-cells"])
@pytest.mark.parametrize("threads", [None, 1, 2, 5, 16, 32])
def test_dhs_equals_the_serial_solver(real, threads, batch):
    s = batches(real)[batch]
    for rerooted in (False, True) if threads in (None, 16) else (False,):
        schedule = dhs_schedule(s, threads=threads, reroot=rerooted)
        cells = s.cell if isinstance(s, MonoBatch) else s
        sizes = np.full(s.n_cells, cells.n_nodes) if isinstance(s, MonoBatch) else s.cell_sizes
        check_dhs_schedule(schedule, cell_sizes=sizes)
        assert_proven(schedule, s, rerooted=rerooted, rng=31)


def test_checks_catch_broken_schedules():
    """The structural checks fail on schedules a kernel could not run."""
    import dataclasses

    s = rt.random_batch(30, rng=27, max_nodes=60)
    good = fine_schedule(s, block_size=32)
    has = np.flatnonzero(good.parent_slot >= 0)
    late = good.parent_slot.copy()
    late[has[0]] = good.base[has[-1]]  # hang a branch on a node of a later phase
    swapped_kids = good.children.copy()
    swapped_kids[[0, -1]] = swapped_kids[[-1, 0]]
    twice = good.node_slot.copy()
    twice[1] = twice[0]
    for bad, match in [
        (dataclasses.replace(good, parent_slot=late), "earlier phase"),
        (dataclasses.replace(good, children=swapped_kids), "child lists"),
        (dataclasses.replace(good, node_slot=twice), "inverse"),
        (dataclasses.replace(good, block_threads=good.block_threads * 0 + 33), "block_size"),
        (dataclasses.replace(good, block_cells=good.block_cells * 0), "every cell"),
    ]:
        with pytest.raises(ValueError, match=match):
            check_branch_schedule(bad)
    dhs = dhs_schedule(s, threads=4)
    early = dhs.parent_slot.copy()
    real_kid = np.flatnonzero((dhs.slot_node_local >= 0) & (dhs.parent_slot >= 0))[0]
    early[real_kid] = 0 if real_kid != 0 else 1  # a parent in the first step
    with pytest.raises(ValueError, match="before its child|child lists"):
        check_dhs_schedule(dataclasses.replace(dhs, parent_slot=early), cell_sizes=s.cell_sizes)


def test_planning_is_deterministic(real):
    s = batches(real)["real-and-random"]
    for make in (lambda: fine_schedule(s, reroot=True, split="cost"),
                 lambda: level_schedule(s, split="mean"), lambda: dhs_schedule(s)):
        a, b = make(), make()
        for name, value in vars(a).items():
            if isinstance(value, np.ndarray):
                np.testing.assert_array_equal(value, getattr(b, name), err_msg=name)


def test_empty_batches():
    empty = HinesStructure(np.zeros(0, np.int64), np.zeros(0))
    for s in (empty, MonoBatch(rt.chain(4), 0)):
        for schedule in (level_schedule(s), fine_schedule(s)):
            check_branch_schedule(schedule)
            assert schedule.n_branches == 0 and emulate(schedule, *rt.diagonally_dominant(
                s, rng=1)).shape == s.values_shape
        assert dhs_schedule(s).n_slots == 0


# -- shapes ---------------------------------------------------------------------------------
def test_cell_shapes_group_identical_trees(real):
    pool = real[:5] + [rt.chain(3), rt.star(3)]
    pick = np.random.default_rng(40).integers(0, len(pool), 300)
    s = HinesStructure.concatenate([pool[i] for i in pick])
    shapes = cell_shapes(s)
    key = {}  # reference: a dict of parent arrays
    expected = [key.setdefault(s.cell(c).parent.tobytes(), len(key)) for c in range(s.n_cells)]
    np.testing.assert_array_equal(shapes.shape_of_cell, expected)
    assert shapes.n_shapes == len(set(pick.tolist()))
    np.testing.assert_array_equal(shapes.counts, np.bincount(expected))
    for c in range(0, s.n_cells, 17):
        same = np.flatnonzero(shapes.shape_of_cell == shapes.shape_of_cell[c])
        assert shapes.rank[c] == np.searchsorted(same, c)
        assert shapes.first_cell[shapes.shape_of_cell[c]] == same[0]
    reps = shapes.representatives
    for k in range(shapes.n_shapes):
        np.testing.assert_array_equal(reps.cell(k).parent, s.cell(shapes.first_cell[k]).parent)


def test_cell_shapes_survive_hash_collisions(monkeypatch):
    """With every hash equal, the exact comparison still separates different trees."""
    cells = [rt.random_tree(30, rng=i % 4) for i in range(12)]
    s = HinesStructure.concatenate(cells)
    honest = cell_shapes(s).shape_of_cell
    monkeypatch.setattr(shapes_module, "_hash_cells",
                        lambda values, offsets, *args: np.zeros((2, offsets.size - 1), np.int64))
    fresh = HinesStructure.concatenate(cells)  # not the cached result of s
    np.testing.assert_array_equal(cell_shapes(fresh).shape_of_cell, honest)
    assert honest.max() == 3


def test_cell_classes_split_shapes_by_couplings(real):
    """``couplings=True``: alike cells share tree and couplings bit for bit (the root's u,
    which nothing reads, excepted); each class's representative carries its couplings."""
    tree = real[3]
    scaled = HinesStructure(tree.parent, tree.u * 1.5)
    root_only = HinesStructure(tree.parent, np.where(tree.parent >= 0, tree.u, 7.0))
    asym = HinesStructure(tree.parent, tree.u, tree.u * 0.5)
    asym_other = HinesStructure(tree.parent, tree.u, tree.u * 0.25)
    pool = [tree, scaled, root_only, real[0]]
    pick = np.random.default_rng(42).integers(0, len(pool), 200)
    s = HinesStructure.concatenate([pool[i] for i in pick])
    assert cell_shapes(s).n_shapes == 2  # two trees
    classes = cell_shapes(s, couplings=True)
    key = {0: 0, 2: 0, 1: 1, 3: 2}  # root_only is tree's class
    expected, seen = [], {}
    for i in pick.tolist():
        expected.append(seen.setdefault(key[i], len(seen)))
    np.testing.assert_array_equal(classes.shape_of_cell, expected)
    reps = classes.representatives
    for k in range(classes.n_shapes):
        c = s.cell(int(classes.first_cell[k]))
        np.testing.assert_array_equal(reps.cell(k).u[1:], c.u[1:])
        np.testing.assert_array_equal(reps.cell(k).parent, c.parent)
    both = HinesStructure.concatenate([asym, asym_other, asym])  # l differs, u equal
    assert cell_shapes(both, couplings=True).shape_of_cell.tolist() == [0, 1, 0]
    assert not cell_shapes(both, couplings=True).representatives.symmetric
    mono = cell_shapes(MonoBatch(tree, 5), couplings=True)
    assert mono.n_shapes == 1 and mono.representatives is tree


def test_cell_classes_survive_hash_collisions(monkeypatch):
    """With every hash equal, the exact comparison still separates different couplings."""
    tree = rt.random_tree(30, rng=1)
    cells = [HinesStructure(tree.parent, tree.u * (1 + i % 3)) for i in range(12)]
    s = HinesStructure.concatenate(cells)
    honest = cell_shapes(s, couplings=True).shape_of_cell
    monkeypatch.setattr(shapes_module, "_hash_cells",
                        lambda values, offsets, *args: np.zeros((2, offsets.size - 1), np.int64))
    fresh = HinesStructure.concatenate(cells)  # not the cached result of s
    np.testing.assert_array_equal(cell_shapes(fresh, couplings=True).shape_of_cell, honest)
    assert honest.tolist() == [0, 1, 2] * 4


def test_cell_shapes_are_kept_with_the_structure():
    """Computed once per structure and grouping; the cached arrays cannot be changed."""
    s = HinesStructure.concatenate([rt.random_tree(30, rng=k % 2) for k in range(6)])
    first = cell_shapes(s)
    assert cell_shapes(s) is first and cell_shapes(s, couplings=True) is not first
    with pytest.raises(ValueError):
        first.shape_of_cell[0] = 5


def test_programs_replicate_one_plan_per_shape(real):
    """A batch of copies plans each shape once and solves like the concatenation."""
    pick = np.random.default_rng(41).integers(0, len(real), 2000)
    s = HinesStructure.concatenate([real[i] for i in pick])
    program = branch_program(cell_shapes(s))
    assert program.shapes.n_shapes == len(set(pick.tolist()))
    for make in (lambda: level_schedule(s), lambda: fine_schedule(s, reroot=True),
                 lambda: dhs_schedule(s)):
        schedule = make()
        d, rhs = rt.diagonally_dominant(s, rng=42)
        np.testing.assert_array_equal(emulate(schedule, d, rhs),
                                      working_serial(s, d, rhs, schedule.options["reroot"]))


# -- levels ---------------------------------------------------------------------------------
def test_levels_hold_the_branches_of_each_level():
    s = rt.random_batch(50, rng=43, max_nodes=120)
    schedule = level_schedule(s)
    b = branches(s)
    assert schedule.n_phases == b.n_levels and schedule.n_groups == 1
    cell_of_slot = np.searchsorted(s.cell_offsets, schedule.slot_node[schedule.base],
                                   side="right") - 1
    for level in range(b.n_levels):
        lo, hi = schedule.phase_offsets[level], schedule.phase_offsets[level + 1]
        got = sorted(zip(cell_of_slot[lo:hi].tolist(), schedule.length[lo:hi].tolist()))
        mine = b.level == level
        assert got == sorted(zip(b.cell[mine].tolist(), b.length[mine].tolist()))
        assert np.all(np.diff(schedule.length[lo:hi]) <= 0)  # longest first


def test_levels_contiguous_layout_is_a_hines_order():
    s = rt.random_batch(30, rng=44, max_nodes=80)
    schedule = level_schedule(s, lanes=1)
    assert np.all(schedule.stride == 1) and schedule.n_slots == s.n_nodes
    np.testing.assert_array_equal(schedule.base[1:], schedule.base[:-1] + schedule.length[:-1])
    # slot numbering: every node's parent sits in an earlier slot
    parent = s.parent[schedule.slot_node]
    has = parent >= 0
    assert np.all(schedule.node_slot[parent[has]] < np.flatnonzero(has))


def test_levels_interleaved_groups_are_warps():
    s = HinesStructure.concatenate([rt.binary_tree(4, branch_length=3, rng=i) for i in range(40)])
    schedule = level_schedule(s, lanes=32)
    # 40 identical cells: 40, 80, 160, 320 equal branches per level, in warps of 32
    assert set(np.unique(schedule.stride).tolist()) == {32, 16, 8}
    assert schedule.n_slots == s.n_nodes  # equal lengths in every group: no padding


# -- fine -----------------------------------------------------------------------------------
@pytest.mark.parametrize("block_size", [32, 128, 256])
def test_fine_packing_respects_blocks(real, block_size):
    s = batches(real)["real-and-random"]
    schedule = fine_schedule(s, block_size=block_size, reroot=True)
    check_branch_schedule(schedule)
    assert schedule.block_threads.max() <= block_size
    cell_of = np.searchsorted(s.cell_offsets, schedule.slot_node[schedule.base],
                              side="right") - 1
    group_of = np.repeat(np.arange(schedule.n_groups), np.diff(schedule.group_offsets))
    branch_group = np.repeat(group_of, np.diff(schedule.phase_offsets))
    for g in range(schedule.n_groups):
        cells = schedule.block_cells[schedule.block_cell_offsets[g]:
                                     schedule.block_cell_offsets[g + 1]]
        assert set(cell_of[branch_group == g].tolist()) == set(cells.tolist())
        widths = np.diff(schedule.phase_offsets[schedule.group_offsets[g]:
                                                schedule.group_offsets[g + 1] + 1])
        if cells.size > 1:  # several cells share a block only when every level fits
            assert widths.max() <= block_size
    assert sorted(schedule.block_cells.tolist()) == list(range(s.n_cells))


def test_fine_takes_cells_wider_than_a_block():
    """Arbor refuses a cell with more than 128 branches on a level; here threads loop."""
    s = HinesStructure.concatenate([rt.star(5000, rng=45), rt.chain(3)])
    schedule = fine_schedule(s, block_size=128)
    check_branch_schedule(schedule)
    # the chain still fits beside the star: its one level has room
    assert schedule.n_groups == 1 and schedule.block_threads.tolist() == [128]
    assert np.diff(schedule.phase_offsets).tolist() == [2, 4999]
    metrics = branch_metrics(schedule, s)
    assert metrics["group_time_max"] == 3 + 40  # the chain, then 40 rounds of 128 tips


def test_fine_packing_sorts_deep_cells_first():
    cells = [rt.chain(3), rt.binary_tree(5), rt.chain(1), rt.binary_tree(3)]
    program = branch_program(cell_shapes(HinesStructure.concatenate(cells)))
    cell_seq, starts = pack_cells(program, block_size=1000)
    assert cell_seq.tolist() == [1, 3, 0, 2] and starts.tolist() == [0, 4]


def test_fine_shared_memory_limit():
    cells = [rt.random_tree(int(n), rng=i) for i, n in enumerate([300, 200, 900, 50, 250])]
    s = HinesStructure.concatenate(cells)
    schedule = fine_schedule(s, block_size=1024, max_shared_bytes=500 * 16)
    check_branch_schedule(schedule)
    for g in range(schedule.n_groups):
        members = schedule.block_cells[schedule.block_cell_offsets[g]:
                                       schedule.block_cell_offsets[g + 1]]
        nodes = int(s.cell_sizes[members].sum())
        assert nodes * 16 <= 500 * 16 or members.size == 1  # only the 900-node cell exceeds
    assert schedule.n_groups >= 3


def test_fine_metrics_by_hand():
    # two cells in one block: a chain of 6 (one level), a root of 2 with tips of 3 and 1
    s = HinesStructure.concatenate([rt.chain(6), rt.structure_from_parents(
        [-1, 0, 1, 2, 3, 1])])
    schedule = fine_schedule(s, block_size=8)
    m = branch_metrics(schedule, s, barrier_cost=4.0)
    assert schedule.n_groups == 1 and schedule.block_threads.tolist() == [2]
    assert m["group_time_max"] == 6 + 3  # level 0: max(6, 2); level 1: max(3, 1)
    assert m["cost_max"] == 9 + 2 * 4
    assert m["critical_path_max"] == 6 and m["critical_path_mean"] == (6 + 5) / 2
    assert m["utilisation"] == pytest.approx(12 / (2 * 9))
    assert m["levels"] == 2


# -- dhs -----------------------------------------------------------------------------------
def test_dhs_step_counts_meet_their_bounds():
    assert dhs_steps(rt.chain(50), 8).tolist() == [50]
    assert dhs_steps(rt.star(101), 4).tolist() == [25 + 1]  # 100 leaves, then the root
    s = rt.random_batch(40, rng=46, max_nodes=300)
    for k in THREAD_CHOICES:
        steps = dhs_steps(s, k)
        depth = np.array([_depth(s.cell(c).parent) for c in range(s.n_cells)])
        assert np.all(steps >= np.maximum(-(-s.cell_sizes // k), depth + 1))
        if k == 1:
            np.testing.assert_array_equal(steps, s.cell_sizes)


def _depth(parent) -> int:
    level = np.zeros(parent.size, np.int64)
    for i in range(1, parent.size):
        level[i] = level[parent[i]] + 1
    return int(level.max())


def test_dhs_steps_take_the_deepest_ready_nodes():
    # 0 - 1 - 2 - 3 and 0 - 4: with two threads the deep chain goes first
    schedule = dhs_schedule(rt.structure_from_parents([-1, 0, 1, 2, 0]), threads=2)
    steps = schedule.slot_node_local.reshape(-1, 2).tolist()
    assert steps == [[3, 4], [2, -1], [1, -1], [0, -1]]
    # the busiest lane per step: two leaves, then 2 and 1 (one child each), the root (two)
    assert schedule.n_steps.tolist() == [4] and schedule.work_steps.tolist() == [1 + 2 + 2 + 3]


def test_choose_threads_rule(real):
    s = HinesStructure.concatenate(real[:6])
    k = choose_threads(s)
    steps = {c: dhs_steps(s, c) for c in THREAD_CHOICES}
    for cell in range(s.n_cells):
        assert steps[k[cell]][cell] <= 1.05 * steps[32][cell]
        smaller = [c for c in THREAD_CHOICES if c < k[cell]]
        assert all(steps[c][cell] > 1.05 * steps[32][cell] for c in smaller)


@pytest.mark.parametrize("n_cells", [1, 3000, 256000])
def test_choose_threads_for_large_batches(n_cells):
    """With the GPU's resident threads, k minimises steps x waves (fewest k within 5 %)."""
    cell = rt.random_tree(1400, rng=47, branch_probability=0.1)
    resident = 132 * 2048
    k = int(choose_threads(cell, resident_threads=resident, n_cells=n_cells)[0])
    cost = {c: int(dhs_steps(cell, c)[0]) * max(1.0, n_cells * c / resident)
            for c in THREAD_CHOICES}
    assert cost[k] <= 1.05 * min(cost.values())
    assert all(cost[c] > 1.05 * min(cost.values()) for c in THREAD_CHOICES if c < k)
    if n_cells == 1:
        assert k == int(choose_threads(cell)[0])  # one cell: the latency rule
    if n_cells == 256000:
        assert k <= 4  # the batch fills the GPU many times over: few lanes per cell


def test_dhs_pyramidal_cell_of_1400_nodes():
    """The DeepDendrite comparison cell: CA1 at nseg=8 has 1405 nodes (see the docs)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ca1 = hinesbatch.discretize(os.path.join(REAL_DIR, "morph_ca1_n120.swc"),
                                    nseg=8).hines_structure()
    assert ca1.n_nodes == 1405
    steps = [int(dhs_steps(ca1, k)[0]) for k in THREAD_CHOICES]
    assert steps[0] == 1405 and all(a >= b for a, b in zip(steps, steps[1:]))
    assert steps[-1] == _depth(ca1.parent) + 1  # 32 threads reach the depth bound
    schedule = dhs_schedule(ca1)
    assert schedule.n_steps[0] == steps[THREAD_CHOICES.index(int(schedule.threads[0]))]


def test_dhs_threads_are_checked():
    with pytest.raises(ValueError, match="threads"):
        dhs_schedule(rt.chain(3), threads=0)
    with pytest.raises(ValueError, match="threads"):
        dhs_schedule(rt.chain(3), threads=33)


def test_format_md_examples():
    """The worked example of FORMAT.md runs and prints what the document says."""
    result = doctest.testfile(FORMAT_MD, module_relative=False, verbose=False)
    assert result.attempted >= 20
    assert result.failed == 0, f"{result.failed} example(s) of FORMAT.md fail"
