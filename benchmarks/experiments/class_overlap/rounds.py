#!/usr/bin/env python3
"""Per-launch cost of each class, from a ``run.py`` result (CPU only, H200 figures):
(4 t - t_4x) / 3 from the class alone at its count and at 4x, and the part of it that the
last, partial round of tiles costs (tiles / groups resident on the device, rounded up;
registers not counted).

    PYTHONPATH=src python3 benchmarks/experiments/class_overlap/rounds.py shares.json
"""
from __future__ import annotations

import json
import math
import sys

from hinesbatch.bench._multi_cases import real_cells
from hinesbatch.solvers.gpu.device import resident_blocks
from hinesbatch.solvers.gpu.strategies import SharedTiles, tiled_variants

H200 = {"smem_per_block_optin": 232448, "smem_per_sm": 233472, "sm_count": 132}


def main(path):
    cells = {c.n_nodes: c for c in real_cells().values()}
    launch = partial = 0.0
    for row in json.load(open(path))["classes"]:
        cell, n, ms = cells[row["nodes"]], row["cells"], row["ms"]
        t = SharedTiles.plan(cell, tiled_variants(None, None, cell), 1, None, 8, H200, n)
        slots = resident_blocks(t.threads, t.smem, H200, barriers=t.GROUP_BARRIERS
                                if t.groups > 1 else 1) * t.groups * H200["sm_count"]
        rounds = -(-n // t.tile_cells) / slots
        launch += (4 * ms - row["ms_4x"]) / 3
        partial += (math.ceil(rounds) - rounds) * ms / math.ceil(rounds)
        print(f"{row['nodes']:5d} nodes x {n}: {rounds:5.2f} rounds of tiles", flush=True)
    print(f"per-launch cost {launch:.3f} ms, of which the last partial rounds {partial:.3f} ms")


if __name__ == "__main__":
    main(sys.argv[1])
