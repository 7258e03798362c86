"""Every GPU strategy, in float32 and float64, on shared and per-cell structures, against the
serial CPU solver, on fresh random structures and on the repository's real morphologies.

Before each checked solve the plan solves an all-NaN batch, so every scratch buffer it uses
(layout copies, chunks) is poisoned: an element the kernels fail to write shows up as NaN.
In-place strategies write x over rhs, where an unwritten entry keeps its rhs value and fails
the comparison. Error: max over cells of ||x_c - ref_c|| / ||ref_c||.
"""
from __future__ import annotations

import numpy as np
import pytest

import hinesbatch
from hinesbatch.tree import random_trees as rt
from hinesbatch.tree.structure import HinesStructure, MonoBatch

from gpu_cases import (poisoned_solve, REAL_CELLS, TOLERANCE, cell_rel_error, hines_values, real_cell,
                       record_error, serial_reference)

pytestmark = pytest.mark.gpu

CONFIGS = [
    ("flat", {}),
    ("interleaved", {}),
    ("block-interleaved", {"bs": 32}),
    ("block-interleaved", {}),
    ("block-shared", {}),
    ("block-shared", {"keep": "factors"}),
    ("block-shared", {"keep": "factors", "bs": 12}),  # a partial last block, rows not 32-B aligned
    ("tiled", {}),
    ("tiled", {"batch": 2}),
    ("tiled", {"batch": 4, "tile_cells": 8}),
    ("tiled", {"batch": 16, "tile_cells": 2}),
    ("tiled", {"batch": 16, "lanes": 4, "tile_cells": 8}),  # 16 does not fit chains of 400
    ("tiled", {"buffers": 1}),
    ("grouped", {}),  # every class in one launch (one launch per class for a single class)
    ("grouped", {"one_launch": False}),  # one launch per class
    ("grouped", {"one_launch": True}),  # every class in one launch, a single class too
    ("grouped", {"batch": 4, "lanes": 4, "tile_cells": 8}),
    ("grouped", {"groups": 2}),
    ("grouped", {"reroot": True}),  # every class eliminated from its centre
    ("grouped", {"reroot": False}),  # every class from its own root
    ("auto", {}),
]
#: Shared structures only: two tiles side by side in a block, one staged schedule; the cell
#: eliminated from its centre, or from its own root (the default: whichever takes fewer steps).
MONO_CONFIGS = CONFIGS + [("tiled", {"groups": 2}), ("tiled", {"reroot": True}),
                          ("tiled", {"reroot": False}),
                          ("tiled", {"listed": True})]  # cells through an identity member list
CONFIG_IDS, MONO_CONFIG_IDS = ([s + "".join(f"-{k}{v}" for k, v in o.items()) for s, o in c]
                               for c in (CONFIGS, MONO_CONFIGS))
DTYPES = [np.float32, np.float64]

MONO_RANDOM = ("bushy", "sparse", "chain", "single")
MULTI = ("random-batch", "random-asymmetric", "real-mix", "real-rescaled", "real-copies")


def mono_random(kind: str, rng) -> MonoBatch:
    n = int(rng.integers(50, 400))
    cell = {
        "bushy": lambda: rt.random_tree(n, rng=rng, branch_probability=0.6),
        "sparse": lambda: rt.random_tree(n, rng=rng, branch_probability=0.05, symmetric=False),
        "chain": lambda: rt.chain(n, rng=rng),
        "single": lambda: rt.chain(1, rng=rng),
    }[kind]()
    return MonoBatch(cell, int(rng.integers(200, 400)))


def multi(kind: str, rng) -> HinesStructure:
    if kind == "random-batch":
        return rt.random_batch(int(rng.integers(200, 400)), rng=rng, max_nodes=80)
    if kind == "random-asymmetric":
        return rt.random_batch(int(rng.integers(50, 150)), rng=rng, max_nodes=300, symmetric=False)
    if kind in ("real-mix", "real-rescaled"):
        cells = [real_cell(*c) for c in REAL_CELLS for _ in range(6)]
        if kind == "real-rescaled":  # same trees, two matrices each (u and l of half scaled)
            cells = [c if k % 2 else HinesStructure(c.parent, c.u * 1.25, c.lower * 0.75)
                     for k, c in enumerate(cells)]
        order = rng.permutation(len(cells))
        return HinesStructure.concatenate([cells[i] for i in order])
    return real_cell("morph_ca1_n120.swc", 1).tile(int(rng.integers(100, 200)))


def check(structure, strategy, options, dtype, seed, cp, label):
    rng = np.random.default_rng(seed)
    d, rhs = hines_values(structure, rng, dtype)
    ref = serial_reference(structure, d, rhs)
    plan = hinesbatch.plan(structure, backend="gpu", strategy=strategy, **options)
    err = cell_rel_error(structure, poisoned_solve(plan, structure, d, rhs, dtype, cp), ref)
    key = f"{np.dtype(dtype).name} {'mono' if isinstance(structure, MonoBatch) else 'multi'}"
    record_error(key, err, f"{label} {strategy} {options} seed {seed}")
    assert err <= TOLERANCE[np.dtype(dtype)], (
        f"{strategy} {options} {label}: relative error {err:.3e} (seed {seed}); {plan.describe()}")


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("strategy,options", MONO_CONFIGS, ids=MONO_CONFIG_IDS)
@pytest.mark.parametrize("kind", MONO_RANDOM)
def test_mono_random(kind, strategy, options, dtype, seed, cp):
    structure = mono_random(kind, np.random.default_rng(seed))
    check(structure, strategy, options, dtype, seed, cp, f"mono {kind} n={structure.nodes_per_cell}")


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("strategy,options", MONO_CONFIGS, ids=MONO_CONFIG_IDS)
@pytest.mark.parametrize("name,nseg", REAL_CELLS, ids=[c[0].split(".")[0] for c in REAL_CELLS])
def test_mono_real(name, nseg, strategy, options, dtype, seed, cp):
    structure = MonoBatch(real_cell(name, nseg), 257)
    check(structure, strategy, options, dtype, seed, cp, f"mono {name} nseg={nseg}")


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("strategy,options", CONFIGS, ids=CONFIG_IDS)
@pytest.mark.parametrize("kind", MULTI)
def test_per_cell_structure(kind, strategy, options, dtype, seed, cp):
    structure = multi(kind, np.random.default_rng(seed))
    check(structure, strategy, options, dtype, seed, cp, f"multi {kind} cells={structure.n_cells}")


#: block-shared keep="factors" with other nodes per step than the default 4, and with several
#: lanes per cell (shared structures only); bs that leave a partial last block.
FACTOR_SLOTS = ({"keep": "factors", "slots": 1}, {"keep": "factors", "slots": 2, "bs": 8},
                {"keep": "factors", "slots": 8}, {"keep": "factors", "lanes": 8},
                {"keep": "factors", "lanes": 8, "slots": 16, "bs": 12},
                {"keep": "factors", "lanes": 4, "slots": 8, "bs": 16},
                {"keep": "factors", "lanes": 2, "bs": 16})
FACTOR_SLOT_IDS = ["slots1", "slots2-bs8", "slots8", "lanes8", "lanes8-slots16-bs12",
                   "lanes4-slots8-bs16", "lanes2-bs16"]


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("options", FACTOR_SLOTS, ids=FACTOR_SLOT_IDS)
@pytest.mark.parametrize("kind", (*MONO_RANDOM, "real"))
def test_block_shared_factor_slots(kind, options, dtype, seed, cp):
    rng = np.random.default_rng(seed)
    if kind == "real":
        name, nseg = REAL_CELLS[int(rng.integers(len(REAL_CELLS)))]
        structure = MonoBatch(real_cell(name, nseg), 300)
    else:
        structure = mono_random(kind, rng)
    check(structure, "block-shared", options, dtype, seed, cp, f"mono {kind}")


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("buffers", (1, 2))
@pytest.mark.parametrize("groups", (1, 3))
def test_tiled_blocks_solving_many_tiles_each(groups, buffers, dtype, seed, cp):
    # 20000 cells of 300 nodes in tiles of 4: 5000 tiles. With buffers=2 a group holds two
    # tiles of 4 * 2 * 309 * itemsize bytes (>= 2 * 9.9 KB), so at most 11 one-group blocks
    # (3 three-group blocks) fit an SM's 228 KB: the persistent grid (<= 11 * 132 groups on an
    # H200) has every group ping-pong through 3 or more tiles; with groups=3 and buffers=1 the
    # grid is persistent too (<= 4 three-group blocks per SM), each group solving 4-5 tiles
    # after a staggered start.
    rng = np.random.default_rng(seed)
    structure = MonoBatch(rt.random_tree(300, rng=rng), 20000)
    check(structure, "tiled", {"buffers": buffers, "batch": 8, "lanes": 8, "tile_cells": 4,
                               "groups": groups},
          dtype, seed, cp, "mono 20000 x 300 nodes")


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("n_cells", (26, 30))
def test_tiled_groups_left_without_a_tile(n_cells, dtype, seed, cp):
    # 7 or 8 tiles of 4 cells (the last one partial) in blocks of 3 groups: the last block's
    # groups 1-2 (or 2) have no tile, so they must neither wait for a group before them in the
    # staggered start nor stage anything.
    rng = np.random.default_rng(seed)
    structure = MonoBatch(rt.random_tree(120, rng=rng), n_cells)
    check(structure, "tiled", {"batch": 8, "lanes": 8, "tile_cells": 4, "groups": 3},
          dtype, seed, cp, f"mono {n_cells} x 120 nodes")
