#!/usr/bin/env python3
"""One-word accesses (two planes per tile) against (d, rhs) pairs, and two staging patterns:
A/B on the device, in one run.

``hines_tiled_mono`` used to keep each slot's two values side by side (16 bytes per cell),
interleaved cell by cell within a warp: every 8-byte access (staging, x, a parent's x) then
filled only half of each wavefront. It now keeps two planes per tile (d then m; rhs then y
then x), one word per access, with each cell's plane padded so that the cells of a warp fall
on distinct banks (``schedule.bank_geometry``); a warp stages either the 32 // lanes cells of
a sweep's warp side by side (``SharedTiles.STAGE_WARP_CELLS = True``) or 32 consecutive
nodes of one cell (``False``).

This times, fp64 from canonical values, median of 7 with L2 rotated
(``grouped_classes/sweep.timed``), the cases of ``../bank_conflicts/run.py`` and the copy
bandwidth, with whatever ``hinesbatch`` is on ``PYTHONPATH`` (run it once with the code
before the change, labelled ``base``), in each arrangement that code offers (``modes``:
with ``STAGE_WARP_CELLS``, one cell staged per warp as well; with ``default_tile_cells``,
tiles of ``THREADS // lanes`` cells as well):

    git archive 64d1f40 src | tar -x -C BASE   # the pair layout
    PYTHONPATH=BASE/src python3 benchmarks/experiments/split_planes/run.py OUT.json base
    PYTHONPATH=src python3 benchmarks/experiments/split_planes/run.py OUT.json planes
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import cupy

import hinesbatch
from hinesbatch.bench._gpu_timing import copy_bandwidth
from hinesbatch.bench._multi_cases import FOCUS, goal_c_cell, real_cells, real_mix
from hinesbatch.solvers.gpu.strategies import SharedTiles
from hinesbatch.tree.structure import MonoBatch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "grouped_classes"))
from sweep import timed  # noqa: E402


def cases() -> dict:
    cells = real_cells(1)
    return {"ca1 x 256000 (issue 3)": (MonoBatch(cells[FOCUS], 256000), "tiled"),
            "ca1 x 435920 (mono reference)": (MonoBatch(cells[FOCUS], 435920), "tiled"),
            "256000 real cells": (real_mix(cells, 256000, seed=256000), "grouped"),
            "1681 nodes x 15015": (MonoBatch(cells["v_e_purk2.CNG.swc"], 15015), "tiled"),
            "881 nodes x 15006": (MonoBatch(cells["EC3-80604.CNG.swc"], 15006), "tiled"),
            "59 nodes x 15034": (MonoBatch(cells["Gad1-F-600000.CNG.swc"], 15034), "tiled"),
            "ca1 nseg=8 (1405 nodes) x 3000": (MonoBatch(goal_c_cell(), 3000), "tiled")}


def modes() -> list:
    """(name, set-up) of each arrangement the code on PYTHONPATH offers."""
    out = [("default", lambda: None)]
    if hasattr(SharedTiles, "STAGE_WARP_CELLS") and not hasattr(SharedTiles,
                                                                "default_tile_cells"):
        def one_cell():
            SharedTiles.STAGE_WARP_CELLS = False
        out.append(("one cell staged per warp", one_cell))
    if hasattr(SharedTiles, "default_tile_cells"):
        rule = SharedTiles.default_tile_cells

        def threads_rule():  # tiles of THREADS // lanes cells, as before the rule
            SharedTiles.default_tile_cells = classmethod(
                lambda cls, *args, **kw: rule.__func__(cls, *args[:-1], False))
        out.append(("tiles of THREADS // lanes cells", threads_rule))
    return out


def main(path: str, label: str, arrangements=modes):
    """Time :func:`cases` in each of ``arrangements()`` ((name, set-up) pairs), appending to
    the JSON at ``path`` under ``label``."""
    l2 = int(cupy.cuda.runtime.getDeviceProperties(0)["l2CacheSize"])
    out = json.loads(Path(path).read_text()) if Path(path).exists() else {"rows": []}
    out.setdefault("copy", []).append({"code": label, **copy_bandwidth(cupy)})
    for mode, setup in arrangements():
        setup()
        for name, (structure, strategy) in cases().items():
            ms, desc = timed(structure, strategy, {}, l2)
            out["rows"].append({"code": label, "mode": mode, "case": name,
                                "nodes": structure.n_nodes, "ms": ms, "describe": desc})
            print(f"{label} [{mode}] {name}: {ms and round(ms, 4)} {desc[:150]}", flush=True)
    out.setdefault("source", {})[label] = str(Path(hinesbatch.__file__).parent)
    Path(path).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
