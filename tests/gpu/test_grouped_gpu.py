"""The ``grouped`` strategy on the device: cells with the same matrix solved as a shared
structure, class by class (its accuracy on every batch kind is in test_gpu_accuracy.py)."""
from __future__ import annotations

import numpy as np
import pytest

import hinesbatch
from hinesbatch.errors import SingularSystemError
from hinesbatch.solvers.gpu import layout_solver
from hinesbatch.solvers.gpu.strategies import grouped
from hinesbatch.solvers.gpu.device import SM_BARRIERS, device_properties
from hinesbatch.solvers.gpu.strategies.shared_tiles import SharedTiles
from hinesbatch.tree import random_trees as rt
from hinesbatch.tree.balance import tree_centres
from hinesbatch.tree.structure import HinesStructure, MonoBatch

from gpu_cases import (REAL_CELLS, cell_rel_error, hines_values, poisoned_solve, real_cell,
                       serial_reference)

pytestmark = pytest.mark.gpu


def _mix(rng, copies: int = 40) -> HinesStructure:
    """Copies of the six real test cells in a random order (six classes, never adjacent)."""
    cells = [real_cell(*c) for c in REAL_CELLS for _ in range(copies)]
    return HinesStructure.concatenate([cells[i] for i in rng.permutation(len(cells))])


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_copies_give_bitwise_the_shared_structure_result(dtype, seed, cp):
    """The cells of one class go through the same kernel and schedule as a MonoBatch of their
    cell: bit for bit the same solution, whatever their order in the batch."""
    rng = np.random.default_rng(seed)
    cell = real_cell("morph_ca1_n120.swc", 1)
    mono = MonoBatch(cell, 301)
    d, rhs = hines_values(mono, rng, dtype)
    shared = hinesbatch.plan(mono, backend="gpu", strategy="tiled").solve(cp.asarray(d),
                                                                          cp.asarray(rhs)).get()
    other = real_cell("ko20x-07.CNG.swc", 1)
    cells = [cell] * 301 + [other] * 50
    order = rng.permutation(len(cells))
    batch = HinesStructure.concatenate([cells[i] for i in order])
    row = np.empty(len(cells), np.int64)  # cell of the batch -> row of the MonoBatch
    row[np.flatnonzero(order < 301)] = order[order < 301]
    dd, rr = hines_values(batch, rng, dtype)
    for c in np.flatnonzero(order < 301):
        a = batch.cell_offsets[c]
        dd[a:a + cell.n_nodes], rr[a:a + cell.n_nodes] = d[row[c]], rhs[row[c]]
    plan = hinesbatch.plan(batch, backend="gpu", strategy="grouped")
    x = plan.solve(cp.asarray(dd), cp.asarray(rr)).get()
    for c in np.flatnonzero(order < 301):
        a = batch.cell_offsets[c]
        assert np.array_equal(x[a:a + cell.n_nodes], shared[row[c]]), f"cell {c}"
    assert cell_rel_error(batch, x, serial_reference(batch, dd, rr)) < (
        1e-12 if dtype == np.float64 else 1e-5)
    assert "2 classes" in plan.describe()


def test_deterministic_and_singular_pivot_like_serial(seed, cp):
    rng = np.random.default_rng(seed)
    batch = _mix(rng)
    d, rhs = hines_values(batch, rng, np.float64)
    plan = hinesbatch.plan(batch, backend="gpu", strategy="grouped")
    first = plan.solve(cp.asarray(d), cp.asarray(rhs)).get()
    for _ in range(3):
        assert np.array_equal(plan.solve(cp.asarray(d), cp.asarray(rhs)).get(), first)
    cells = np.sort(rng.choice(batch.n_cells, 3, replace=False))
    for c in cells:  # zero the pivot of a leaf (a leaf's pivot is its d)
        parent = batch.cell(int(c)).parent
        leaves = np.setdiff1d(np.arange(parent.size), parent[parent >= 0])
        d[batch.cell_offsets[c] + rng.choice(leaves)] = 0.0
    with pytest.raises(SingularSystemError) as cpu:
        hinesbatch.plan(batch, backend="serial").solve(d, rhs)
    with pytest.raises(SingularSystemError) as gpu:
        plan.solve(cp.asarray(d), cp.asarray(rhs))
    assert (gpu.value.cell, gpu.value.node) == (cpu.value.cell, cpu.value.node) and \
        gpu.value.cell == cells[0]


@pytest.mark.parametrize("strategy", ["tiled", "grouped"])
def test_centre_rooted_schedules_name_the_failing_leaf_like_serial(strategy, seed, cp):
    """Eliminated from the centre, a cell's pivots are not the serial solver's, but a zero
    at a leaf fails there first: the error names the cell and the leaf as the serial solver
    does (the key's rank, not the node's index, picks the node met first)."""
    rng = np.random.default_rng(seed)
    for name, nseg in REAL_CELLS:
        cell = real_cell(name, nseg)
        structure = MonoBatch(cell, 300)
        batch = structure if strategy == "tiled" else structure.expand()
        d, rhs = hines_values(batch, rng, np.float64)
        plan = hinesbatch.plan(batch, backend="gpu", strategy=strategy, reroot=True)
        impl = layout_solver(plan).strategies[0]
        schedule = (impl.tiles if strategy == "tiled" else impl.tiles[0]).schedule
        centre = int(tree_centres(structure)[0])  # node 0 for none of the six test cells
        assert schedule.rerooted and schedule.parent[centre] == -1, name
        x = poisoned_solve(plan, batch, d, rhs, np.float64, cp)
        assert cell_rel_error(batch, x, serial_reference(batch, d, rhs)) < 1e-12, name
        leaves = np.setdiff1d(np.arange(cell.n_nodes), cell.parent[cell.parent >= 0])
        bad = d.copy().reshape(structure.n_cells, cell.n_nodes)
        cells = np.sort(rng.choice(structure.n_cells, 3, replace=False))
        for c in cells:  # leaves far from the centre: their failures cascade over the most
            bad[c, leaves[-1 - int(rng.integers(3))]] = 0.0
        with pytest.raises(SingularSystemError) as cpu:
            hinesbatch.plan(batch, backend="serial").solve(bad.reshape(d.shape), rhs)
        with pytest.raises(SingularSystemError) as gpu:
            plan.solve(cp.asarray(bad.reshape(d.shape)), cp.asarray(rhs))
        assert (gpu.value.cell, gpu.value.node) == (cpu.value.cell, cpu.value.node), \
            f"{name}: centre {centre}"
        assert gpu.value.cell == cells[0]


def test_auto_groups_copies_and_not_distinct_matrices(seed, cp):
    rng = np.random.default_rng(seed)
    batch = _mix(rng)
    plan = hinesbatch.plan(batch, backend="gpu")
    assert "strategy grouped" in plan.describe() and "6 classes" in plan.describe()
    scale = rng.uniform(0.9, 1.1, batch.n_cells)
    distinct = HinesStructure.concatenate([
        HinesStructure(batch.cell(c).parent, batch.cell(c).u * scale[c])
        for c in range(batch.n_cells)])
    assert "strategy grouped" not in hinesbatch.plan(distinct, backend="gpu").describe()


def test_auto_groups_up_to_one_class_per_sm(seed, cp):
    """``auto`` gives ``grouped`` as many classes as the device has SMs (its one launch keeps
    one block per SM), and ``tiled`` one more (cells of equal sizes)."""
    rng = np.random.default_rng(seed)
    sms = device_properties(0)["sm_count"]
    cells = [rt.random_tree(40, rng=rng, branch_probability=0.3) for _ in range(sms + 1)]
    plan = hinesbatch.plan(HinesStructure.concatenate(cells[:sms]), backend="gpu")
    assert f"strategy grouped (auto: {sms} per-cell" in plan.describe(), plan.describe()
    assert f"<= {sms} classes, one per SM" in plan.describe()
    plan = hinesbatch.plan(HinesStructure.concatenate(cells), backend="gpu")
    assert "strategy tiled (auto" in plan.describe(), plan.describe()


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_large_cells_share_a_block_in_groups(dtype, seed, cp):
    """1,600-node bushy cells get 32 lanes each (the width rule); with enough cells to fill
    every SM, a block holds several groups of two cells, which share one staged schedule. The
    same path serves a large class of ``grouped``. A partial last tile and a partial last
    block."""
    rng = np.random.default_rng(seed)
    cell = rt.random_tree(1600, rng=rng, branch_probability=0.5)
    structure = MonoBatch(cell, 8 * device_properties(0)["sm_count"] + 3)
    d, rhs = hines_values(structure, rng, dtype)
    for strategy, batch in (("tiled", structure),
                            ("grouped", HinesStructure.concatenate([cell] * structure.n_cells))):
        plan = hinesbatch.plan(batch, backend="gpu", strategy=strategy)
        impl = layout_solver(plan, dtype).strategies[0]
        tiles = impl.tiles if strategy == "tiled" else impl.tiles[0]
        assert tiles.lanes == 32 and tiles.groups > 1, plan.describe()
        x = plan.solve(cp.asarray(d.reshape(batch.values_shape)),
                       cp.asarray(rhs.reshape(batch.values_shape))).get()
        err = cell_rel_error(structure, x.reshape(structure.values_shape),
                             serial_reference(structure, d, rhs))
        assert err < (1e-12 if dtype == np.float64 else 1e-5), f"{strategy}: {err:.2e}"


@pytest.mark.parametrize("reroot", [None, False], ids=["root-by-steps", "own-root"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_one_launch_gives_bitwise_the_launches_per_class(dtype, reroot, seed, cp):
    """All classes in one launch (the default) run the same sweeps as one launch per class,
    whichever block takes a tile: bit for bit the same solution, solve after solve (the tile
    counters start from zero at every solve). Classes of 8, 16 and 32 lanes (from their own
    roots; by default the 683-node cell, from its centre, takes 32), a class of one cell, and
    a large class with several tiles per group (blocks move between classes)."""
    rng = np.random.default_rng(seed)
    sms = device_properties(0)["sm_count"]
    cells = ([real_cell(*c) for c in REAL_CELLS for _ in range(30)]
             + [rt.random_tree(1600, rng=rng, branch_probability=0.5)] * (20 * sms)
             + [rt.random_tree(50, rng=rng, branch_probability=0.3)])
    batch = HinesStructure.concatenate([cells[i] for i in rng.permutation(len(cells))])
    d, rhs = hines_values(batch, rng, dtype)
    one = hinesbatch.plan(batch, backend="gpu", strategy="grouped", reroot=reroot)
    per_class = hinesbatch.plan(batch, backend="gpu", strategy="grouped", one_launch=False,
                                reroot=reroot)
    assert "one launch for all classes" in one.describe(), one.describe()
    assert "one launch per class" in per_class.describe(), per_class.describe()
    tiles = layout_solver(one, dtype).strategies[0].one.tiles
    assert {t.lanes for t in tiles} == ({8, 16, 32} if reroot is False else {8, 32})
    assert any(t.schedule.rerooted for t in tiles) == (reroot is None), one.describe()
    want = per_class.solve(cp.asarray(d), cp.asarray(rhs)).get()
    assert cell_rel_error(batch, want, serial_reference(batch, d, rhs)) < (
        1e-12 if dtype == np.float64 else 1e-5)
    for _ in range(3):
        x = poisoned_solve(one, batch, d, rhs, dtype, cp)
        assert np.array_equal(x, want)


@pytest.mark.parametrize("one_launch", [False, True], ids=["per-class", "one-launch"])
def test_groups_take_many_tiles_of_small_cells_in_turn(one_launch, seed, cp):
    """Small cells, shuffled, in numbers that give every group several tiles in turn: each
    group loads its next tile's cell starts during the sweeps into the row its last tile no
    longer needs. Solved like the serial solver; a zero pivot in cells met late (the last
    tiles) is reported for the right cell and node."""
    rng = np.random.default_rng(seed)
    sms = device_properties(0)["sm_count"]
    small = [rt.random_tree(12, rng=rng, branch_probability=0.4),
             rt.random_tree(40, rng=rng, branch_probability=0.3)]
    kinds = rng.integers(0, 2, 300 * sms)
    batch = HinesStructure.concatenate([small[k] for k in kinds])
    d, rhs = hines_values(batch, rng, np.float64)
    options = {"one_launch": True} if one_launch else {"groups": 2}  # else one tile a block
    plan = hinesbatch.plan(batch, backend="gpu", strategy="grouped", **options)
    impl = layout_solver(plan, np.float64).strategies[0]
    arranged = impl.one.tiles if one_launch else impl.tiles
    tiles = [-(-int(count) // t.tile_cells) for t, count in zip(arranged, impl.counts)]
    assert all(t.listed for t in arranged)
    if one_launch:  # one block per SM, for every class
        assert sum(tiles) >= 2 * max(t.groups for t in arranged) * sms, plan.describe()
    else:  # each class's grid: at most SM_BARRIERS // 16 blocks of several groups per SM
        most = SM_BARRIERS // SharedTiles.GROUP_BARRIERS * sms
        assert all(n >= 2 * 2 * most for n in tiles), plan.describe()
    x = poisoned_solve(plan, batch, d, rhs, np.float64, cp)
    assert cell_rel_error(batch, x, serial_reference(batch, d, rhs)) < 1e-12
    last = [int(np.flatnonzero(kinds == k)[-1]) for k in (0, 1)]  # each class's last cell
    bad = d.copy()
    for c in last:
        bad[batch.cell_offsets[c] + small[kinds[c]].n_nodes - 1] = 0.0  # its last leaf
    with pytest.raises(SingularSystemError) as err:
        plan.solve(cp.asarray(bad), cp.asarray(rhs))
    assert err.value.cell == min(last), str(err.value)
    assert err.value.node == small[kinds[min(last)]].n_nodes - 1, str(err.value)


def test_one_launch_with_fewer_tiles_than_blocks(seed, cp):
    """Three classes of two cells: most blocks find no tile and end; every cell is solved."""
    rng = np.random.default_rng(seed)
    cells = [real_cell(*c) for c in REAL_CELLS[:3] for _ in range(2)]
    batch = HinesStructure.concatenate([cells[i] for i in rng.permutation(len(cells))])
    d, rhs = hines_values(batch, rng, np.float64)
    plan = hinesbatch.plan(batch, backend="gpu", strategy="grouped", one_launch=True)
    assert "one launch for all classes" in plan.describe()
    x = poisoned_solve(plan, batch, d, rhs, np.float64, cp)
    assert cell_rel_error(batch, x, serial_reference(batch, d, rhs)) < 1e-12


def test_one_launch_refuses_widths_it_is_not_compiled_for(cp):
    batch = HinesStructure.concatenate([rt.random_tree(60, rng=k) for k in range(3)] * 2)
    with pytest.raises(ValueError, match="one_launch=True: class 0 .60 nodes. is solved 4 lanes"):
        hinesbatch.plan(batch, backend="gpu", strategy="grouped", lanes=4, batch=4,
                        one_launch=True)
    with pytest.raises(TypeError, match="one_launch must be a bool"):
        hinesbatch.plan(batch, backend="gpu", strategy="grouped", one_launch="yes")


def test_too_many_classes_is_a_clear_error(monkeypatch, cp):
    monkeypatch.setattr(grouped, "MAX_CLASSES", 3)
    batch = HinesStructure.concatenate([rt.random_tree(20, rng=k) for k in range(5)])
    with pytest.raises(ValueError, match="5 classes .at most 3.*'fine' or 'auto'"):
        hinesbatch.plan(batch, backend="gpu", strategy="grouped")


def test_tile_groups_are_for_shared_structures_only(cp):
    batch = HinesStructure.concatenate([rt.random_tree(20, rng=k) for k in range(5)])
    with pytest.raises(ValueError, match="groups is for shared structures"):
        hinesbatch.plan(batch, backend="gpu", strategy="tiled", groups=2)
    with pytest.raises(ValueError, match="groups must be a positive int"):
        hinesbatch.plan(MonoBatch(batch.cell(0), 4), backend="gpu", strategy="tiled", groups=0)
