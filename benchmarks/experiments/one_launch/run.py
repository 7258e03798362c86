#!/usr/bin/env python3
"""``grouped``'s classes in one launch (``hines_tiled_classes``) against one launch per class
on 4 streams: A/B on the device, in one run.

Times, fp64 from canonical values, median of 7 with L2 rotated (``grouped_classes/sweep.timed``),
the real mixes of ``bench multi`` (256000, 25600 and 2560 cells; 17 classes) and the mono
reference of goal (a) (ca1 x 435920, ``tiled``), in each arrangement: one launch with the
next tile prefetched into L2 (``one_launch.PREFETCH``) and without, and one launch per class;
twice each, alternating. Every arrangement's solution of the 256000 cells is compared with
the first's bit for bit (``same_x``).

    PYTHONPATH=src python3 benchmarks/experiments/one_launch/run.py OUT.json LABEL
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import cupy
import numpy as np

import hinesbatch
from hinesbatch.bench._multi_cases import FOCUS, real_cells, real_mix, values
from hinesbatch.solvers.gpu import grouped, one_launch
from hinesbatch.tree.structure import MonoBatch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "grouped_classes"))
from sweep import timed  # noqa: E402

ARRANGEMENTS = (("one launch", True, True), ("one launch, no prefetch", True, False),
                ("one launch per class", False, None))


def solution(structure):
    d, rhs = values(structure)
    plan = hinesbatch.plan(structure, backend="gpu", strategy="grouped")
    return plan.solve(cupy.asarray(d), cupy.asarray(rhs)).get()


def main(path: str, label: str):
    l2 = int(cupy.cuda.runtime.getDeviceProperties(0)["l2CacheSize"])
    cells = real_cells(1)
    mixes = {f"{n} real cells": real_mix(cells, n, seed=n) for n in (256000, 25600, 2560)}
    big = mixes["256000 real cells"]
    mono = MonoBatch(cells[FOCUS], round(big.n_nodes / cells[FOCUS].n_nodes))
    out = json.loads(Path(path).read_text()) if Path(path).exists() else {"rows": []}
    reference = None
    for _ in range(2):
        ms, desc = timed(mono, "tiled", {}, l2)
        out["rows"].append({"code": label, "mode": "tiled", "case": "ca1 x 435920 (mono "
                            "reference)", "nodes": mono.n_nodes, "ms": ms, "describe": desc})
        print(f"{label} mono reference: {ms and round(ms, 4)}", flush=True)
        for mode, one, prefetch in ARRANGEMENTS:
            grouped.ONE_LAUNCH = one
            if prefetch is not None:
                one_launch.PREFETCH = prefetch
            x = solution(big)
            reference = x if reference is None else reference
            same = bool(np.array_equal(x, reference))
            del x
            for name, structure in mixes.items():
                ms, desc = timed(structure, "grouped", {}, l2)
                out["rows"].append({"code": label, "mode": mode, "case": name,
                                    "nodes": structure.n_nodes, "ms": ms, "describe": desc,
                                    "same_x": same})
                print(f"{label} [{mode}] {name}: {ms and round(ms, 4)} same_x={same} "
                      f"{desc[-160:]}", flush=True)
    out.setdefault("source", {})[label] = str(Path(hinesbatch.__file__).parent)
    Path(path).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
