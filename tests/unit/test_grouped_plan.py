"""The host side of the ``grouped`` strategy and of ``tiled``'s shared-structure plan, without
a GPU: the classes' member lists, launch order and schedules, and the width and cells-per-block
rules (with the H200's shared-memory figures standing in for a device)."""
from __future__ import annotations

import numpy as np
import pytest

from hinesbatch.solvers.gpu.strategies import grouped as grouped_module
from hinesbatch.solvers.gpu.strategies.grouped import Grouped
from hinesbatch.solvers.gpu.device_parts import split
from hinesbatch.tree.schedules.tiled import tiled_schedule
from hinesbatch.solvers.gpu.strategies.shared_tiles import SharedTiles, tiled_variants
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
        assert np.array_equal(tiles.schedule.u, tiled_schedule(
            cell, tiles.batch, lanes=tiles.lanes, item=8, stage_cells=tiles.schedule.stage_cells,
            reroot=SharedTiles.rerooted(cell, tiles.batch)).u)
    assert sorted(g.members.tolist()) == list(range(batch.n_cells))
    work = [t.schedule.n_batches * c for t, c in zip(g.tiles, g.counts)]
    assert [work[k] for k in g.order] == sorted(work, reverse=True)
    arrays = g._host_arrays()
    assert arrays["members"] is g.members  # where each member's values start: one load
    assert arrays["starts"].dtype == np.int64
    assert np.array_equal(arrays["starts"], part.offsets[g.members])
    assert all(t.listed and t.buffers == 1 for t in g.tiles)
    assert all(t.template.endswith(", true>") for t in g.tiles)  # the member-list kernel
    assert "4 classes of cells with the same matrix" in g.describe()


def test_a_shared_structure_is_one_class_in_row_order(h200):
    part = split(MonoBatch(rt.random_tree(90, rng=4), 50), 1)[0]
    g = Grouped(part, np.float32, 0, {}, 1 << 30)
    assert len(g.tiles) == 1 and np.array_equal(g.members, np.arange(50))
    assert np.array_equal(g._host_arrays()["starts"], np.arange(50) * 90)


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


def test_centre_or_own_root_by_steps_and_reroot_option(h200):
    """By default a class's schedule eliminates the cell from its centre when that takes
    fewer steps (a chain: about half), else from its own root (a star: the centre is the root);
    ``reroot`` forces either, for ``tiled`` and every class of ``grouped``."""
    chain, star = rt.chain(40, rng=2), rt.star(30, rng=3)
    auto = SharedTiles.plan(chain, [(8, 8)], 1, None, 8, H200, 1000)
    own = SharedTiles.plan(chain, [(8, 8)], 1, None, 8, H200, 1000, reroot=False)
    assert auto.schedule.rerooted and not own.schedule.rerooted
    assert (auto.schedule.n_batches, own.schedule.n_batches) == (21, 40)  # 19 + 1 + 20 nodes
    assert "40 nodes from the centre" in auto.describe() and "centre" not in own.describe()
    assert not SharedTiles.plan(star, [(8, 8)], 1, None, 8, H200, 1000).schedule.rerooted
    assert SharedTiles.rerooted(star, 8, True) and not SharedTiles.rerooted(chain, 8, False)
    part = split(HinesStructure.concatenate([chain, star] * 3), 1)[0]
    kinds = lambda options: [t.schedule.rerooted  # noqa: E731
                             for t in Grouped(part, np.float64, 0, options, 1 << 30).tiles]
    assert sorted(kinds({})) == [False, True]
    assert kinds({"reroot": False}) == [False, False]
    with pytest.raises(TypeError, match="reroot must be a bool, got str"):
        Grouped(part, np.float64, 0, {"reroot": "yes"}, 1 << 30)


def test_tiled_reroot_option_is_for_shared_structures(monkeypatch):
    from hinesbatch.solvers.gpu.strategies import tiled as strategies

    monkeypatch.setattr(strategies, "device_properties", lambda device: H200)
    chain = rt.chain(40, rng=2)
    tiled = strategies.Tiled(split(MonoBatch(chain, 100), 1)[0], np.float64, 0,
                             {"reroot": False}, 1 << 30)
    assert not tiled.tiles.schedule.rerooted and tiled.tiles.schedule.n_batches == 40
    with pytest.raises(ValueError, match="reroot is for shared structures"):
        strategies.Tiled(split(HinesStructure.concatenate([chain, rt.star(9)]), 1)[0],
                         np.float64, 0, {"reroot": True}, 1 << 30)


def _tiled(monkeypatch, structure, **options):
    from hinesbatch.solvers.gpu.strategies import tiled as strategies

    monkeypatch.setattr(strategies, "device_properties", lambda device: H200)
    return strategies.Tiled(split(structure, 1)[0], np.float64, 0, dict(options), 1 << 30)


def test_tiled_listed_reads_the_cells_through_an_identity_member_list(monkeypatch):
    """``listed=True``: the same arrangement as planned without it, the kernel's listed
    variant, every cell in order with its values at ``c * n``, 12 bytes per cell counted;
    the launch passes the member list and the starts (a recording kernel, NumPy for CuPy)."""
    import contextlib

    from hinesbatch.solvers.gpu.strategies import tiled as strategies

    cell = rt.random_tree(300, rng=3, branch_probability=0.3)
    batch = MonoBatch(cell, 100)
    plain = _tiled(monkeypatch, batch, listed=False)
    listed = _tiled(monkeypatch, batch, listed=True)
    t, u = plain.tiles, listed.tiles
    assert u.listed and not t.listed and u.template.endswith(", true>")
    assert (u.batch, u.lanes, u.tile_cells, u.groups, u.buffers) == (
        t.batch, t.lanes, t.tile_cells, t.groups, t.buffers)
    assert np.array_equal(u.schedule.jp, t.schedule.jp)
    arrays = listed._host_arrays()
    assert np.array_equal(arrays["members"], np.arange(100)) and arrays["members"].dtype == np.int32
    assert np.array_equal(arrays["starts"], np.arange(100) * 300)
    assert "members" not in plain._host_arrays()
    assert listed.structure_bytes() - plain.structure_bytes() == 12 * 100
    assert "member list" in listed.describe() and "member list" not in plain.describe()

    launched = []

    class Fn:
        max_dynamic_shared_size_bytes, preferred_shared_memory_carveout = 1 << 20, 100

        def __call__(self, grid, block, args, shared_mem=0):
            launched.append(args)

    class FakeCupy:
        asarray = staticmethod(np.ascontiguousarray)

        class cuda:  # noqa: N801
            Device = staticmethod(lambda device=0: contextlib.nullcontext())

    from hinesbatch.solvers.gpu.strategies import base

    monkeypatch.setattr(base, "cupy_module", lambda: FakeCupy)
    monkeypatch.setattr(strategies, "kernel", lambda device, source, template, dtype: Fn())
    d, rhs = np.ones((100, 300)), np.zeros((100, 300))
    pivots = (np.zeros(1, np.uint64), np.zeros(100))
    for tiled in (listed, plain):
        tiled.solve_canonical(d, rhs, pivots, contextlib.nullcontext())
    dev = listed._arrays()  # the listed launch passes its member list and starts, the plain
    assert any(a is dev["members"] for a in launched[0])  # one neither (two null pointers)
    assert any(a is dev["starts"] for a in launched[0])
    assert np.array_equal(dev["members"], np.arange(100))
    assert np.array_equal(dev["starts"], np.arange(100) * 300)
    assert sum(a is strategies.NULL for a in launched[0]) == 0
    assert sum(a is strategies.NULL for a in launched[1]) == 2


def test_tiled_listed_by_default_only_on_one_group_blocks(monkeypatch):
    """With :data:`SharedTiles.LISTED_ONE_GROUP` on, ``tiled`` takes the listed variant where
    its arrangement has one group and one buffer, and keeps it as planned otherwise; off,
    never unless asked."""
    from hinesbatch.solvers.gpu.strategies import tiled as strategies

    one = MonoBatch(rt.binary_tree(2, branch_length=170, rng=2), 256)  # 32 one-group blocks
    several = MonoBatch(one.cell, 2560)  # 3 groups per block
    monkeypatch.setattr(strategies.SharedTiles, "LISTED_ONE_GROUP", False)
    assert not _tiled(monkeypatch, one).tiles.listed
    monkeypatch.setattr(strategies.SharedTiles, "LISTED_ONE_GROUP", True)
    t = _tiled(monkeypatch, one).tiles
    assert t.listed and t.groups == 1
    t = _tiled(monkeypatch, several).tiles
    assert not t.listed and t.groups > 1
    assert not _tiled(monkeypatch, one, listed=False).tiles.listed
    assert not _tiled(monkeypatch, one, buffers=2).tiles.listed


def test_tiled_listed_refusals(monkeypatch):
    cell = rt.random_tree(120, rng=4, branch_probability=0.3)
    with pytest.raises(ValueError, match="one tile buffer; got buffers=2"):
        _tiled(monkeypatch, MonoBatch(cell, 50), listed=True, buffers=2)
    with pytest.raises(ValueError, match="listed is for shared structures"):
        _tiled(monkeypatch, HinesStructure.concatenate([cell, rt.star(9)]), listed=True)
    with pytest.raises(TypeError, match="listed must be a bool"):
        _tiled(monkeypatch, MonoBatch(cell, 50), listed=1)


def test_listed_tiles_count_two_cell_starts_per_cell():
    """Cells from a member list (``grouped``): each group keeps its tile's cell starts and the
    next tile's in shared memory, 16 bytes per cell of a tile, counted in the block's bytes;
    refused with two tile buffers or values in slot order."""
    cell = rt.random_tree(300, rng=3, branch_probability=0.3)
    for tc, groups in ((8, 1), (8, 4), (16, 2)):
        plain = SharedTiles.plan(cell, [(8, 8)], 1, tc, 8, H200, 20000, groups=groups)
        listed = SharedTiles.plan(cell, [(8, 8)], 1, tc, 8, H200, 20000, groups=groups,
                                  listed=True)
        assert listed.listed and not plain.listed
        assert listed.smem - plain.smem == 16 * tc * groups
        assert (SharedTiles.per_cell_bytes(listed.schedule, 8, listed=True)
                == 2 * listed.schedule.slot_stride * 8 + 16)
    with pytest.raises(ValueError, match="member list are solved with one tile buffer"):
        SharedTiles.plan(cell, [(8, 8)], 2, None, 8, H200, 20000, listed=True)


def test_groups_for_large_cells_when_the_batch_fills_the_device():
    bushy = rt.random_tree(1600, rng=2, branch_probability=0.5)
    plan = lambda n, groups=None: SharedTiles.plan(  # noqa: E731
        bushy, [(32, 32)], 1, None, 8, H200, n, groups=groups)
    small, large, one = plan(100), plan(100000), plan(100000, groups=1)
    assert small.tile_cells == SharedTiles.THREADS // 32
    assert small.groups == 1  # 50 tiles: one per block, spread over the SMs
    # tiles of one cell: 7 groups share the schedule's 47 KB (2 x 3 with tiles of two)
    assert large.tile_cells == 1 and large.groups == 7
    assert large.smem <= H200["smem_per_block_optin"]
    per_sm = lambda t: (  # noqa: E731
        H200["smem_per_sm"] // (t.smem + 1024) * t.groups * t.tile_cells)
    assert per_sm(large) == 7 > per_sm(one)
    assert large.threads == large.groups * 32 <= 512
    assert large.blocks(100000) == -(-100000 // large.groups)
    assert plan(101, groups=1).blocks(101) == 51  # a partial last tile
    most = (H200["smem_per_block_optin"] - one.smem) // (one.smem - SharedTiles.schedule_smem(
        one.schedule, 8)) + 1
    with pytest.raises(ValueError, match=f"groups={most + 1} must be at most {most}"):
        plan(100000, groups=most + 1)


class _Kernel:
    """Stands in for a compiled kernel's attributes (``blocks_per_sm`` reads them)."""
    num_regs = 64
    shared_size_bytes = 0


def test_grid_is_persistent_for_several_groups_or_two_buffers():
    cell = rt.random_tree(60, rng=4, branch_probability=0.3)
    plan = lambda n, **kw: SharedTiles.plan(  # noqa: E731  (the sizes below: its own root)
        cell, [(8, 8)], kw.pop("buffers", 1), 4, 8, H200, n, reroot=False, **kw)
    one = plan(20000, groups=1)
    assert one.grid(_Kernel, H200, 20000) == one.blocks(20000) == 5000  # a block per tile
    three = plan(20000, groups=3)
    # shared memory would hold 11 such blocks per SM, registers 10, the barriers only 4
    assert H200["smem_per_sm"] // (three.smem + 1024) == 11
    assert three.grid(_Kernel, H200, 20000) == 4 * 132 < three.blocks(20000)
    assert three.grid(_Kernel, H200, 20) == three.blocks(20) == 2  # fewer tiles than room
    two = plan(20000, groups=1, buffers=2)
    assert two.grid(_Kernel, H200, 20000) == min(H200["smem_per_sm"] // (two.smem + 1024),
                                                 32) * 132


def test_groups_rule_most_tiles_in_blocks_of_at_most_256_threads():
    # 313-node ca1-like cell at 8 lanes (tiles of 8 cells, 64 threads): one-group blocks and
    # blocks of 2 or 4 groups all hold 4 tiles per SM, 3 groups only 3, 5 groups 5 but in
    # 320 threads: 4 groups (measured 0.96 ms for 256000 cells; one group 1.03, 5 groups 0.94)
    cell = rt.random_tree(313, rng=5, branch_probability=0.1)
    t = SharedTiles.plan(cell, [(8, 8)], 1, 8, 8, H200, 256000)
    assert (t.groups, t.tile_cells) == (4, 8) and t.threads == SharedTiles.GROUP_BLOCK_THREADS
    props = dict(H200)
    # a schedule as large as two tiles: 3 groups per block hold 1.5x the tiles of one
    assert SharedTiles.default_groups(58_000, 55_000, 64, 3, props, 10**5) == 3
    assert SharedTiles.default_groups(58_000, 55_000, 64, 3, props, 2 * 132) == 2  # few tiles
    # a 59-node cell: 17 one-group blocks per SM, but blocks of groups (at most 4 per SM, by
    # the barriers) of at most 4 tiles hold 16: one group
    assert SharedTiles.default_groups(3_300, 9_100, 64, 15, props, 10**5) == 1
    # tiles of 256 threads or more leave no room for a second group
    assert SharedTiles.default_groups(58_000, 55_000, 256, 3, props, 10**5) == 1


def test_groups_rule_counts_rounds_of_resident_blocks():
    """Leaving every SM a block must not cost a partial last round that more groups would
    not need: 2560 copies of Fig. 14's 510-node cell in tiles of 8 took 0.066 ms with 2 groups
    (160 blocks of one per SM: two rounds), 0.045 with 3 (107 blocks: one round; H100, same
    run; docs/decisions/003-tiles-in-groups.md)."""
    from hinesbatch.bench._multi_cases import binary_cells

    cell = binary_cells(2, 1).cell
    arranged = [SharedTiles.plan(cell, [(8, 8)], 1, None, 8, H200, n) for n in (256, 2560, 25600)]
    assert [(t.tile_cells, t.groups) for t in arranged] == [(8, 1), (8, 3), (8, 3)]
    props = dict(H200)
    # a schedule as large as a tile: 320 tiles in blocks of 2 groups (one block per SM) take
    # two rounds, in blocks of 3 one; 264 tiles take one round either way: 2, one per SM
    assert SharedTiles.default_groups(58_000, 55_000, 64, 3, props, 320) == 3
    assert SharedTiles.default_groups(58_000, 55_000, 64, 3, props, 264) == 2
    # 32 tiles: one-group blocks on 32 SMs, one round as with more groups
    assert SharedTiles.default_groups(58_000, 55_000, 64, 3, props, 32) == 1


def test_tile_cells_rule_puts_the_most_cells_on_an_sm():
    """Tiles of half a group (4 cells of 8 lanes, one warp) let two blocks of 5 groups share
    an SM: 40 cells of 313 nodes instead of 32 in one block of 4 groups of 8 (measured on the
    H200, 256000 cells: 0.868 -> 0.818 ms; docs/decisions/004-shared-memory-traffic.md). A batch
    that does not fill the device, and a given ``groups``, keep tiles of THREADS // lanes."""
    from hinesbatch.bench._multi_cases import FOCUS, real_cells

    cell = real_cells()[FOCUS]
    cells_per_sm = lambda t: t.tile_cells * t.groups * (  # noqa: E731
        H200["smem_per_sm"] // (t.smem + 1024))
    default = SharedTiles.plan(cell, [(8, 8)], 1, 8, 8, H200, 256000)
    chosen = SharedTiles.plan(cell, [(8, 8)], 1, None, 8, H200, 256000)
    assert (default.tile_cells, cells_per_sm(default)) == (8, 32)
    assert (chosen.tile_cells, chosen.groups, cells_per_sm(chosen)) == (4, 5, 40)
    assert chosen.threads <= SharedTiles.GROUP_BLOCK_THREADS
    bushy = rt.random_tree(313, rng=5, branch_probability=0.1)  # a larger schedule: 36
    assert cells_per_sm(SharedTiles.plan(bushy, [(8, 8)], 1, None, 8, H200, 256000)) > 32
    assert SharedTiles.plan(cell, [(8, 8)], 1, None, 8, H200, 1000).tile_cells == 8
    assert SharedTiles.plan(cell, [(8, 8)], 1, None, 8, H200, 256000, groups=2).tile_cells == 8
    # a large cell: tiles of 1 cell hold 7 cells (7 groups), tiles of 2 only 6 (3 groups)
    big = rt.random_tree(1600, rng=2, branch_probability=0.5)
    t = SharedTiles.plan(big, [(32, 32)], 1, None, 8, H200, 100000)
    assert (t.tile_cells, t.groups, cells_per_sm(t)) == (1, 7, 7)
    assert cells_per_sm(SharedTiles.plan(big, [(32, 32)], 1, 2, 8, H200, 100000)) == 6


def test_groups_option_is_checked(h200):
    part = split(HinesStructure.concatenate(_pool() * 3), 1)[0]
    with pytest.raises(ValueError, match="groups must be a positive int"):
        Grouped(part, np.float64, 0, {"groups": 0}, 1 << 30)
    g = Grouped(part, np.float64, 0, {"groups": 2}, 1 << 30)
    assert {t.groups for t in g.tiles} == {2} and "2-2 tiles per block" in g.describe()


def test_prefetch_for_tiled_but_not_for_grouped_classes(h200):
    """One-buffer groups of ``tiled`` ask L2 for their next tile; ``grouped``'s classes do not
    (each measured faster so on the H200: docs/decisions/006-l2-prefetch.md); the same kernel
    serves both (a run-time flag)."""
    cell = rt.random_tree(100, rng=4, branch_probability=0.3)
    tiles = SharedTiles.plan(cell, [(8, 8)], 1, None, 8, H200, 20000)
    assert tiles.prefetch and "next tile prefetched into L2" in tiles.describe()
    off = SharedTiles.plan(cell, [(8, 8)], 1, None, 8, H200, 20000, prefetch=False)
    two = SharedTiles.plan(cell, [(8, 8)], 2, None, 8, H200, 20000)
    assert "prefetched" not in off.describe() and "prefetched" not in two.describe()
    one = SharedTiles.plan(cell, [(8, 8)], 1, None, 8, H200, 100)  # a block per tile
    assert tiles.groups > 1 and one.groups == 1 and one.prefetch
    assert not one.prefetches and "prefetched" not in one.describe()
    part = split(HinesStructure.concatenate(_pool() * 3), 1)[0]
    assert not any(t.prefetch for t in Grouped(part, np.float64, 0, {}, 1 << 30).tiles)
    assert [t.prefetches for t in (tiles, off, two, one)] == [True, False, False, False]
    assert off.template == tiles.template  # a run-time flag: one kernel for both


def test_one_launch_arrangements_fill_a_block_per_sm(h200):
    """Every class goes into one launch (the default for several classes): each class
    arranged for a block with the SM to itself (its schedule once, the most cells in tiles of
    up to THREADS // lanes cells, the most groups at a tie), within the kernel's bounds; the
    launch is sized for the largest class."""
    from hinesbatch.solvers.gpu.strategies import classes_launch as one_launch

    pool = _pool() + [rt.random_tree(1600, rng=6, branch_probability=0.5)]
    pick = np.random.default_rng(7).integers(0, len(pool), 2000)
    part = split(HinesStructure.concatenate([pool[i] for i in pick]), 1)[0]
    assert Grouped(part, np.float64, 0, {"one_launch": False}, 1 << 30).one is None
    g = Grouped(part, np.float64, 0, {}, 1 << 30)
    one = g.one
    assert one is not None and "one launch for all classes" in g.describe()
    limit = H200["smem_per_block_optin"]
    for t, per_class in zip(one.tiles, g.tiles):
        s = t.schedule
        assert (t.lanes, t.batch) == (per_class.lanes, per_class.batch)  # the same sweeps
        assert t.lanes in one_launch.LANES and t.buffers == 1
        assert t.groups <= SharedTiles.MAX_GROUPS and t.threads <= one_launch.MAX_THREADS
        # two cell starts (int64) per cell of a tile besides its planes: a member list
        fixed, per_cell = SharedTiles.schedule_smem(s, 8), 2 * s.slot_stride * 8 + 16
        assert t.listed
        room = limit - one_launch.EXTRA_SMEM - one_launch.STATIC_SMEM  # dynamic + static
        assert t.smem <= room
        best = max(size * g  # every (tile size, groups) within the kernel's bounds
                   for size in range(32 // t.lanes, max(32 // t.lanes, 64 // t.lanes) + 1,
                                     32 // t.lanes)
                   for g in range(1, SharedTiles.MAX_GROUPS + 1)
                   if fixed + g * size * per_cell <= room
                   and g * size * t.lanes <= one_launch.MAX_THREADS == 768)
        assert t.tile_cells * t.groups == best
    assert one.smem == max(t.smem for t in one.tiles) + one_launch.EXTRA_SMEM
    assert one.smem + one_launch.STATIC_SMEM <= limit
    assert one.threads == max(t.threads for t in one.tiles)


def test_one_launch_table_and_first_classes(h200):
    from hinesbatch.solvers.gpu.strategies import classes_launch as one_launch

    pool = _pool()
    counts = [600, 30, 5, 1]  # work very unequal: the last class has less than a block's share
    cells = [pool[k] for k, c in enumerate(counts) for _ in range(c)]
    order = np.random.default_rng(8).permutation(len(cells))
    part = split(HinesStructure.concatenate([cells[i] for i in order]), 1)[0]
    g = Grouped(part, np.float64, 0, {"one_launch": True}, 1 << 30)
    one, arrays = g.one, g._host_arrays()
    table = arrays["classes"]
    assert table.shape == (4, one_launch.FIELDS) and arrays["counters"].tolist() == [0] * 4
    entry = lu_at = 0
    for k, t in enumerate(one.tiles):
        row, s = table[k], t.schedule
        assert np.array_equal(arrays["jp"][row[0]:row[0] + s.jp.size],
                              t.host_arrays(np.float64)["jp"])
        lu = t.host_arrays(np.float64)["lu"]
        assert row[13] == lu_at and np.array_equal(arrays["lu"][lu_at:lu_at + len(lu)], lu)
        lu_at += len(lu)
        assert np.array_equal(arrays["stage"][row[1]:row[1] + s.n_nodes],
                              t.host_arrays(np.float64)["stage"])
        assert row[0] == entry and row[2] == g.first[k] and row[3] == g.counts[k]
        assert list(row[4:12]) == [s.n_batches, s.n_nodes, s.slot_stride,
                                   s.stage_cells.bit_length() - 1, t.tile_cells, t.groups,
                                   t.lanes, int(t.prefetches)]
        assert row[12] == t.tile_cells * s.n_nodes
        entry += s.jp.size
    homes = one.homes(132)
    work = g.counts * np.array([t.schedule.n_nodes for t in one.tiles])
    share = np.bincount(homes, minlength=4)
    assert share.sum() == 132 and np.all(np.abs(share - 132 * work / work.sum()) <= 1)
    rank = np.argsort(one.order)  # blocks take the classes in order of work, most first
    assert np.all(np.diff(rank[homes]) >= 0) and homes[0] == one.order[0]


def test_one_launch_is_the_default_for_several_classes(h200):
    part = split(HinesStructure.concatenate(_pool() * 3), 1)[0]
    assert Grouped(part, np.float64, 0, {}, 1 << 30).one is not None
    single = split(HinesStructure.concatenate([_pool()[0]] * 5), 1)[0]  # one class
    assert Grouped(single, np.float64, 0, {}, 1 << 30).one is None
    assert Grouped(single, np.float64, 0, {"one_launch": True}, 1 << 30).one is not None


def test_one_launch_is_left_for_given_tiles_or_widths_it_lacks(h200):
    part = split(HinesStructure.concatenate(_pool() * 3), 1)[0]
    assert Grouped(part, np.float64, 0, {"tile_cells": 8}, 1 << 30).one is None
    assert Grouped(part, np.float64, 0, {"one_launch": False}, 1 << 30).one is None
    assert Grouped(part, np.float64, 0, {"lanes": 4, "batch": 4}, 1 << 30).one is None
    assert "one launch per class on 4 streams" in Grouped(
        part, np.float64, 0, {"one_launch": False}, 1 << 30).describe()
    forced = Grouped(part, np.float64, 0, {"one_launch": True, "tile_cells": 8}, 1 << 30)
    assert {t.tile_cells for t in forced.one.tiles} == {8}
    with pytest.raises(ValueError, match="one_launch=True: class 0 .120 nodes. is solved 4 "
                                         "lanes per cell and 4 nodes per step"):
        Grouped(part, np.float64, 0, {"lanes": 4, "batch": 4, "one_launch": True}, 1 << 30)
    with pytest.raises(TypeError, match="one_launch must be a bool, got int"):
        Grouped(part, np.float64, 0, {"one_launch": 1}, 1 << 30)


def test_slot_order_plan_pitch_barriers_and_widths():
    """``tiled``'s native slot order: the same arrangement with room for the groups'
    mbarriers, 16-byte planes and pitch, and a ValueError for widths without its kernel."""
    cell = rt.random_tree(313, rng=5, branch_probability=0.3)  # 313 nodes: an odd count
    for item in (8, 4):
        canonical = SharedTiles.plan(cell, [(8, 8)], 1, 4, item, H200, 256000, groups=5)
        slots = SharedTiles.plan(cell, [(8, 8)], 1, 4, item, H200, 256000, groups=5,
                                 slots=True)
        assert slots.slots and not canonical.slots
        assert slots.template == "hines_tiled_slots<{T}, 8, 1, true>"
        assert slots.smem == canonical.smem + 8 * (SharedTiles.MAX_GROUPS + 1)
        pitch = slots.pitch(item)
        assert pitch * item % 16 == 0 and 313 <= pitch < 313 + 16 // item
        assert slots.schedule.slot_stride * item % 16 == 0  # every plane on 16 bytes
        assert pitch <= slots.schedule.slot_stride  # a copy stays in its cell's slots
        # real nodes fill slots 0 .. n - 1: the native layout is a permutation plus padding
        assert sorted(slots.schedule.slot[:313].tolist()) == list(range(313))
    for variant, buffers in (((2, 2), 1), ((8, 8), 2), ((32, 8), 1)):  # (8, 4): 4 nodes per lane
        with pytest.raises(ValueError, match="slot order"):
            SharedTiles.plan(cell, [variant], buffers, None, 8, H200, 1000, slots=True)
