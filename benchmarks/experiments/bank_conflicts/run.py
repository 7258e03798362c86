#!/usr/bin/env python3
"""Steps ordered for the shared-memory banks, and tiles taken from a counter: A/B on the device.

``hines_tiled_mono`` reads and writes each node's parent slot, which the plain schedule
order scatters over the banks, and stages nodes in index order, whose slots are scattered
too. ``tiled_schedule(..., lanes, item)`` now orders each step's nodes and the staging so
that the lanes one wavefront serves hit distinct banks where it can. Separately, a launch
may let its groups take tiles from a counter instead of a fixed share.

This times, fp64 from canonical values, median of 7 with L2 rotated
(``grouped_classes/sweep.timed``), each case with the plain schedule (``tiled_schedule``
without ``lanes``: steps in list-scheduling order, staging in node order) and the ordered
one, each with fixed tile shares and, where the code has them (``../class_overlap/
take_tiles.patch`` applied), with tiles taken from a counter (``SharedTiles.launch`` wrapped
here).

    PYTHONPATH=src python3 benchmarks/experiments/bank_conflicts/run.py OUT.json
"""
from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path

import cupy

from hinesbatch.solvers.gpu import schedule as schedule_module
from hinesbatch.solvers.gpu import strategies
from hinesbatch.solvers.gpu.strategies import SharedTiles

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "grouped_classes"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "split_planes"))
# The cases of split_planes/run.py, the same seven; it labels ca1 x 256000 "(issue 3)",
# which bank.json and bank_repeat.json (run with the list that used to be here) do not.
from run import cases  # noqa: E402
from sweep import timed  # noqa: E402

ORDERED = schedule_module.tiled_schedule
LAUNCH = SharedTiles.launch
COUNTERS: dict = {}
TAKE = "taken" in inspect.signature(LAUNCH).parameters  # take_tiles.patch applied


def plain_schedule(cell, batch, **_):
    return ORDERED(cell, batch)


def set_mode(ordered: bool, take: bool):
    strategies.tiled_schedule = ORDERED if ordered else plain_schedule

    def launch(self, fn, grid, d, rhs, arrays, members, offsets, n_cells, cell_base, pivots,
               stream):
        extra = ()
        if take:  # a counter per schedule (per class in grouped)
            extra = (COUNTERS.setdefault(id(arrays["jp"]), cupy.zeros(2, "int32")),)
        LAUNCH(self, fn, grid, d, rhs, arrays, members, offsets, n_cells, cell_base, pivots,
               stream, *extra)

    SharedTiles.launch = launch


def main(path):
    l2 = int(cupy.cuda.runtime.getDeviceProperties(0)["l2CacheSize"])
    rows = []
    for ordered in (False, True):
        for take in (False, True) if TAKE else (False,):
            set_mode(ordered, take)
            for name, (structure, strategy) in cases().items():
                ms, desc = timed(structure, strategy, {}, l2)
                rows.append({"case": name, "ordered steps": ordered, "taken tiles": take,
                             "ms": ms, "describe": desc})
                print(f"ordered={ordered} take={take} {name}: {ms and round(ms, 4)}", flush=True)
    with open(path, "w") as f:
        json.dump({"rows": rows}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
