#!/usr/bin/env python3
"""Where does ``grouped``'s one launch lose to one launch per class? (fifteenth session)

Times on the device, fp64, canonical values, median of 7 with L2 rotated
(``../grouped_classes/sweep.timed``). Cases: the mono reference of goal (a) (ca1 x 435920,
``tiled``); the bench's 256000 real cells with ``grouped`` per class and in one launch; and
five classes alone at 4x their copies in the mix (so that the ramp and the last round weigh
little), each solved as ``tiled`` (prefetch as planned), ``grouped`` per class (a member
list, no prefetch), ``grouped`` per class with prefetch, and ``grouped`` in one launch.

    PYTHONPATH=src python3 benchmarks/experiments/one_launch_gap/run.py OUT.json LABEL [--one]

``--one``: only the rows of the one launch (and the mix per class, for reference).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import cupy

import hinesbatch
from hinesbatch.bench._multi_cases import FOCUS, real_cells, real_mix
from hinesbatch.solvers.gpu import grouped
from hinesbatch.tree.schedules import cell_shapes
from hinesbatch.tree.structure import MonoBatch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "grouped_classes"))
from sweep import timed  # noqa: E402

NODES = (1681, 1569, 881, 441, 313)


def main(path: str, label: str, one_only: bool):
    l2 = int(cupy.cuda.runtime.getDeviceProperties(0)["l2CacheSize"])
    out = json.loads(Path(path).read_text()) if Path(path).exists() else {"rows": []}
    rows = out["rows"]

    def row(case, structure, strategy, options, prefetch=False):
        grouped.PREFETCH = prefetch
        ms, desc = timed(structure, strategy, options, l2)
        grouped.PREFETCH = False
        rows.append({"code": label, "case": case, "strategy": strategy, "options": options,
                     "grouped_prefetch": prefetch, "nodes": structure.n_nodes,
                     "cells": structure.n_cells, "ms": ms, "describe": desc})
        rate = ms and structure.n_nodes / ms / 1e6
        print(f"{label} {case} {strategy} {options} prefetch={prefetch}: {ms and round(ms, 4)} "
              f"ms {rate and round(rate, 1)} Gnodes/s", flush=True)

    cells = real_cells(1)
    mix = real_mix(cells, 256000, seed=256000)
    ca1 = cells[FOCUS]
    row("mono reference", MonoBatch(ca1, round(mix.n_nodes / ca1.n_nodes)), "tiled", {})
    row("256000 real cells", mix, "grouped", {})
    row("256000 real cells", mix, "grouped", {"one_launch": True})
    classes = cell_shapes(mix, couplings=True)
    for k in range(classes.n_shapes):
        cell = classes.representatives.cell(k)
        if cell.n_nodes not in NODES:
            continue
        big = MonoBatch(cell, 4 * int(classes.counts[k]))
        case = f"class {cell.n_nodes} nodes, 4x cells"
        if not one_only:
            row(case, big, "tiled", {})
            row(case, big, "grouped", {})
            row(case, big, "grouped", {}, prefetch=True)
        row(case, big, "grouped", {"one_launch": True})
    row("256000 real cells", mix, "grouped", {})
    row("256000 real cells", mix, "grouped", {"one_launch": True})
    out.setdefault("source", {})[label] = str(Path(hinesbatch.__file__).parent)
    Path(path).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], "--one" in sys.argv[3:])
