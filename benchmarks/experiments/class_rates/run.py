#!/usr/bin/env python3
"""Per-class rates of ``tiled``'s sweeps on the real mix, and A/Bs of changes to the sweeps
(run once per source tree): times on the device, fp64, canonical values, median of 7 with L2
rotated (``grouped_classes/sweep.timed``).

Cases: the mono reference of goal (a) (ca1 x 435920, ``tiled``), ca1 x 256000, the bench's
256000 real cells with ``grouped`` (one launch per class, and ``one_launch=True``), and each
of its 17 classes alone as a MonoBatch of as many copies (``tiled`` with its defaults, and with
``--widths`` each (batch, lanes) of WIDTHS as well). ``--scale``: each class alone also at 4x
its copies, with ``tiled`` and with ``grouped`` in one launch (the class then is the launch's
only class), to see how much of a class's time is its ramp and its last round. Run once per
source tree (PYTHONPATH) with its LABEL; rows accumulate in OUT.json.

    PYTHONPATH=src python3 benchmarks/experiments/class_rates/run.py OUT.json LABEL [--widths]
        [--scale]
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import cupy

import hinesbatch
from hinesbatch.bench._multi_cases import FOCUS, real_cells, real_mix
from hinesbatch.tree.schedules import cell_shapes
from hinesbatch.tree.structure import MonoBatch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "grouped_classes"))
from sweep import timed  # noqa: E402

WIDTHS = ((8, 8), (16, 16), (32, 32), (32, 16))


def main(path: str, label: str, widths: bool, scale: bool):
    l2 = int(cupy.cuda.runtime.getDeviceProperties(0)["l2CacheSize"])
    out = json.loads(Path(path).read_text()) if Path(path).exists() else {"rows": []}
    rows = out["rows"]

    def row(case, structure, strategy, options):
        ms, desc = timed(structure, strategy, options, l2)
        rows.append({"code": label, "case": case, "strategy": strategy, "options": options,
                     "nodes": structure.n_nodes, "cells": structure.n_cells, "ms": ms,
                     "describe": desc})
        rate = ms and structure.n_nodes / ms / 1e6
        print(f"{label} {case} {strategy} {options}: {ms and round(ms, 4)} ms "
              f"{rate and round(rate, 1)} Gnodes/s", flush=True)

    cells = real_cells(1)
    mix = real_mix(cells, 256000, seed=256000)
    ca1 = cells[FOCUS]
    row("mono reference", MonoBatch(ca1, round(mix.n_nodes / ca1.n_nodes)), "tiled", {})
    row("ca1 x 256000", MonoBatch(ca1, 256000), "tiled", {})
    row("256000 real cells", mix, "grouped", {})
    row("256000 real cells", mix, "grouped", {"one_launch": True})
    classes = cell_shapes(mix, couplings=True)
    for k in range(classes.n_shapes):
        cell = classes.representatives.cell(k)
        batch = MonoBatch(cell, int(classes.counts[k]))
        case = f"class {cell.n_nodes} nodes"
        row(case, batch, "tiled", {})
        for b, lanes in WIDTHS if widths else ():
            row(case, batch, "tiled", {"batch": b, "lanes": lanes})
        if scale:
            big = MonoBatch(cell, 4 * int(classes.counts[k]))
            row(case + ", 4x cells", big, "tiled", {})
            row(case + ", 4x cells", big, "grouped", {"one_launch": True})
    out.setdefault("source", {})[label] = str(Path(hinesbatch.__file__).parent)
    Path(path).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], "--widths" in sys.argv[3:], "--scale" in sys.argv[3:])
