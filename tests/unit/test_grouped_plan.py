"""The host side of the ``grouped`` strategy and of ``tiled``'s shared-structure plan, without
a GPU: the classes' member lists, launch order and schedules, and the width and cells-per-block
rules (with the H200's shared-memory figures standing in for a device)."""
from __future__ import annotations

import numpy as np
import pytest

from hinesbatch.solvers.gpu import grouped as grouped_module
from hinesbatch.solvers.gpu.grouped import Grouped
from hinesbatch.solvers.gpu.parts import split
from hinesbatch.solvers.gpu.schedule import tiled_schedule
from hinesbatch.solvers.gpu.strategies import SharedTiles, tiled_variants
from hinesbatch.tree import random_trees as rt
from hinesbatch.tree.structure import HinesStructure, MonoBatch

H200 = {"smem_per_block_optin": 232448, "smem_per_sm": 233472, "sm_count": 132}


@pytest.fixture
def h200(monkeypatch):
    monkeypatch.setattr(grouped_module, "device_properties", lambda device: H200)


def _pool():
    tree = rt.random_tree(120, rng=1, branch_probability=0.4)
    return [tree, HinesStructure(tree.parent, tree.u * 2.0),  # same tree, other matrix
            rt.chain(40, rng=2), rt.random_tree(700, rng=3, branch_probability=0.5)]


def test_classes_member_lists_and_launch_order(h200):
    pool = _pool()
    pick = np.random.default_rng(5).integers(0, len(pool), 400)
    batch = HinesStructure.concatenate([pool[i] for i in pick])
    part = split(batch, 1)[0]
    g = Grouped(part, np.float64, 0, {}, 1 << 30)
    assert len(g.tiles) == len(set(pick.tolist())) == 4
    assert g.first[-1] == batch.n_cells and np.array_equal(np.diff(g.first), g.counts)
    for k, tiles in enumerate(g.tiles):
        members = g.members[g.first[k]:g.first[k + 1]]
        assert np.all(np.diff(members) > 0)  # ascending within a class
        kinds = set(pick[members].tolist())
        assert len(kinds) == 1  # one pool cell (one matrix) per class
        cell = pool[kinds.pop()]
        assert tiles.schedule.n_nodes == cell.n_nodes
        assert np.array_equal(tiles.schedule.u, tiled_schedule(cell, tiles.batch).u)
    assert sorted(g.members.tolist()) == list(range(batch.n_cells))
    work = [t.schedule.n_batches * c for t, c in zip(g.tiles, g.counts)]
    assert [work[k] for k in g.order] == sorted(work, reverse=True)
    arrays = g._host_arrays()
    assert arrays["offsets"] is part.offsets and arrays["members"] is g.members
    assert "4 classes of cells with the same matrix" in g.describe()


def test_a_shared_structure_is_one_class_in_row_order(h200):
    part = split(MonoBatch(rt.random_tree(90, rng=4), 50), 1)[0]
    g = Grouped(part, np.float32, 0, {}, 1 << 30)
    assert len(g.tiles) == 1 and np.array_equal(g.members, np.arange(50))
    assert np.array_equal(g._host_arrays()["offsets"], np.arange(51) * 90)


def test_options_apply_to_every_class_and_are_checked(h200):
    part = split(HinesStructure.concatenate(_pool() * 3), 1)[0]
    g = Grouped(part, np.float64, 0, {"batch": 4, "lanes": 4, "tile_cells": 8}, 1 << 30)
    assert {(t.batch, t.lanes, t.tile_cells) for t in g.tiles} == {(4, 4, 8)}
    with pytest.raises(ValueError, match="tile_cells=12 must be a multiple of 8"):
        Grouped(part, np.float64, 0, {"lanes": 4, "tile_cells": 12}, 1 << 30)


def test_class_cap(h200, monkeypatch):
    monkeypatch.setattr(grouped_module, "MAX_CLASSES", 3)
    part = split(HinesStructure.concatenate([rt.random_tree(20, rng=k) for k in range(4)]), 1)[0]
    with pytest.raises(ValueError, match="4 classes .at most 3."):
        Grouped(part, np.float64, 0, {}, 1 << 30)


def test_width_rule_widens_only_when_the_steps_fall():
    chain = rt.chain(300, rng=1)  # depth-bound: more lanes do not cut the steps
    assert SharedTiles.preferred(chain)[0] == (8, 8)
    bushy = rt.random_tree(1600, rng=2, branch_probability=0.5)
    steps = {w: tiled_schedule(bushy, w).n_batches for w in (8, 16, 32)}
    assert steps[16] < SharedTiles.WIDEN * steps[8] and steps[32] < SharedTiles.WIDEN * steps[16]
    assert SharedTiles.preferred(bushy)[0] == (32, 32)
    assert tiled_variants(None, None, bushy) == SharedTiles.preferred(bushy)
    assert tiled_variants(16, None, bushy) == [(16, 16)]  # an option overrides the rule


def test_one_block_rule_needs_32_lanes_and_a_batch_that_fills_the_device():
    bushy = rt.random_tree(1600, rng=2, branch_probability=0.5)
    plan = lambda n, variants=((32, 32),): SharedTiles.plan(  # noqa: E731
        bushy, list(variants), 1, None, 8, H200, n)
    small, large = plan(100), plan(100000)
    assert small.tile_cells == SharedTiles.THREADS // 32  # default: few cells, more SMs
    assert large.tile_cells > small.tile_cells and large.smem <= H200["smem_per_block_optin"]
    assert plan(100000, ((16, 16),)).tile_cells == SharedTiles.THREADS // 16  # 16 lanes: default
