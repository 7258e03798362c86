#!/usr/bin/env python3
"""Small solves through every shared-memory GPU kernel, for ``compute-sanitizer``.

    compute-sanitizer --tool racecheck --racecheck-report hazard python3 scripts/racecheck.py
    compute-sanitizer --tool memcheck python3 scripts/racecheck.py
    compute-sanitizer --tool racecheck ... python3 scripts/racecheck.py "one launch"

(``scripts/gpu-check racecheck`` runs both; arguments, as in the third line, run only the
cases whose label holds one of them.) Each case is a batch small enough for the sanitizer's
slow replay but with several tiles, several warps per block and, for
``tiled`` with two buffers, blocks that solve more than one tile, and blocks of several
groups (each with its own barrier). Every solution is checked
against the serial CPU solver (fp64, 1e-12), so the run also fails on wrong answers; exit
status 1 on any mismatch.
"""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

import cupy  # noqa: E402

import hinesbatch  # noqa: E402
from hinesbatch.bench._multi_cases import values  # noqa: E402
from hinesbatch.solvers.gpu import layout_solver  # noqa: E402
from hinesbatch.tree import random_trees as rt  # noqa: E402
from hinesbatch.tree.structure import HinesStructure, MonoBatch  # noqa: E402

#: (label, structure builder, strategy, options[, device properties the strategy sees])
CASES = [
    ("tiled mono chain, 1 buffer", lambda r: MonoBatch(rt.chain(60, rng=r), 64), "tiled",
     {"batch": 16, "lanes": 4, "tile_cells": 16, "buffers": 1}),
    ("tiled mono chain, 2 buffers", lambda r: MonoBatch(rt.chain(60, rng=r), 64), "tiled",
     {"batch": 16, "lanes": 4, "tile_cells": 16, "buffers": 2}),
    ("tiled mono bushy, default", lambda r: MonoBatch(rt.random_tree(120, rng=r), 200), "tiled",
     {}),
    ("tiled mono bushy, 8x8, 2 buffers", lambda r: MonoBatch(rt.random_tree(90, rng=r), 300),
     "tiled", {"batch": 8, "lanes": 8, "tile_cells": 8, "buffers": 2}),
    # ~150 KB of shared memory per block: one block per SM, so each solves 2 tiles or more
    ("tiled mono 2000 nodes, 1 cell per tile, 2 buffers",
     lambda r: MonoBatch(rt.random_tree(2000, rng=r), 300), "tiled",
     {"batch": 32, "lanes": 32, "tile_cells": 1, "buffers": 2}),
    # three groups per block, each with its own barrier; 70 tiles: a partial last block
    ("tiled mono bushy, 3 groups per block", lambda r: MonoBatch(rt.random_tree(90, rng=r), 277),
     "tiled", {"batch": 8, "lanes": 8, "tile_cells": 4, "groups": 3}),
    ("tiled mono bushy, 2 groups of 2 buffers",
     lambda r: MonoBatch(rt.random_tree(90, rng=r), 300), "tiled",
     {"batch": 8, "lanes": 8, "tile_cells": 4, "groups": 2, "buffers": 2}),
    ("tiled per-cell", lambda r: rt.random_batch(90, rng=r, max_nodes=80), "tiled", {}),
    # the native layout (slot order, bulk copies): 3 groups, 70 tiles, a partial last one
    ("tiled mono slot order, 3 groups", lambda r: MonoBatch(rt.random_tree(90, rng=r), 277),
     "tiled", {"batch": 8, "lanes": 8, "tile_cells": 4, "groups": 3, "native": True}),
    # three classes of copies, interleaved: cells found through the member lists
    ("grouped copies of 3 cells, 2 groups per block",
     lambda r: HinesStructure.concatenate([[rt.random_tree(70, rng=1), rt.chain(40, rng=2),
                                            rt.random_tree(120, rng=3)][k]
                                           for k in r.integers(0, 3, 150)]), "grouped",
     {"groups": 2}),
    ("grouped copies of 3 cells",
     lambda r: HinesStructure.concatenate([[rt.random_tree(70, rng=1), rt.chain(40, rng=2),
                                            rt.random_tree(120, rng=3)][k]
                                           for k in r.integers(0, 3, 150)]), "grouped", {}),
    # every class in one launch on only 2 SMs' worth of blocks, so that blocks change class
    # and groups take several tiles of the 32-lane class from its counter. racecheck reports
    # hazards in this kernel (hines_tiled_classes); a small kernel correct by construction with
    # the same barriers draws them too (docs/decisions/010-grouped-one-launch.md)
    ("grouped one launch, 2 blocks",
     lambda r: HinesStructure.concatenate([[rt.random_tree(1000, rng=4, branch_probability=0.5),
                                            rt.chain(40, rng=2), rt.random_tree(120, rng=3)][k]
                                           for k in r.integers(0, 3, 90)]), "grouped",
     {"one_launch": True}, {"sm_count": 2}),
    ("block-shared mono", lambda r: MonoBatch(rt.random_tree(70, rng=r), 96), "block-shared",
     {}),
    ("block-shared factors mono, 4 slots", lambda r: MonoBatch(rt.random_tree(70, rng=r), 96),
     "block-shared", {"keep": "factors", "bs": 12}),
    ("block-shared factors mono, 8 lanes per cell",
     lambda r: MonoBatch(rt.random_tree(70, rng=r, branch_probability=0.3), 98),
     "block-shared", {"keep": "factors", "lanes": 8, "bs": 12}),
    ("block-shared factors mono, 4 lanes of 2 nodes",
     lambda r: MonoBatch(rt.random_tree(70, rng=r, branch_probability=0.3), 98),
     "block-shared", {"keep": "factors", "lanes": 4, "slots": 8, "bs": 16}),
    ("block-shared factors per-cell", lambda r: rt.random_batch(60, rng=r, max_nodes=120),
     "block-shared", {"keep": "factors", "bs": 8}),
    ("fine per-cell", lambda r: rt.random_batch(60, rng=r, max_nodes=120), "fine", {}),
    ("fine balanced", lambda r: rt.random_batch(60, rng=r, max_nodes=120), "fine",
     {"reroot": True, "split": "cost"}),
    ("dhs per-cell", lambda r: rt.random_batch(60, rng=r, max_nodes=120), "dhs", {}),
]


def main(only: list[str]) -> int:
    failures = 0
    for i, (label, build, strategy, options, *props) in enumerate(CASES):
        if only and not any(part in label for part in only):
            continue
        rng = np.random.default_rng(100 + i)
        structure = build(rng)
        assert isinstance(structure, (MonoBatch, HinesStructure))
        d, rhs = values(structure, seed=200 + i)
        ref = hinesbatch.plan(structure, backend="serial").solve(d, rhs)
        native = options.get("native", False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            plan = hinesbatch.plan(structure, backend="gpu", strategy=strategy,
                                   **{k: v for k, v in options.items() if k != "native"})
        if props:  # before the first solve, which sizes the grids
            impl = layout_solver(plan, np.float64).strategies[0]
            impl.props = {**impl.props, **props[0]}
        if native:  # solved in the plan's native layout; x is written over rn
            dn, rn = plan.to_layout(cupy.asarray(d)), plan.to_layout(cupy.asarray(rhs))
            plan.solve_layout(dn, rn)
            x = plan.from_layout(rn).get()
        else:
            x = plan.solve(cupy.asarray(d), cupy.asarray(rhs)).get()
        err = float(np.max(np.abs(x - ref)) / np.max(np.abs(ref)))
        ok = err <= 1e-12
        failures += not ok
        print(f"{'ok ' if ok else 'BAD'} {label:36s} error {err:.2e}  {plan.describe()}",
              flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
