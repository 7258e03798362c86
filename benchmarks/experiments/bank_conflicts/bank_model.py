#!/usr/bin/env python3
"""Shared-memory wavefronts of one warp's share of a tile in ``hines_tiled_mono`` (fp64), with
the plain schedule and with steps ordered for the banks: a model of the kernel's accesses
(CPU only; the dummy-slot fill and the schedule's own staging are left out).

A warp access of w bytes per lane is served in phases of 128 / w lanes (16 B: 8 lanes, 8 B:
16); a phase takes as many wavefronts as the most distinct 4-byte words on one bank.

    PYTHONPATH=src python3 benchmarks/experiments/bank_conflicts/bank_model.py
"""
from __future__ import annotations

import numpy as np

from hinesbatch.bench._multi_cases import real_cells
from hinesbatch.solvers.gpu.schedule import tiled_schedule

CELLS = (("morph_ca1_n120.swc", 8), ("EC3-80604.CNG.swc", 16), ("v_e_purk2.CNG.swc", 32))


def wavefronts(addresses, width: int) -> int:
    """Wavefronts of one warp access: 32 lane byte addresses, ``width`` bytes each."""
    total = 0
    lanes = 128 // width
    for first in range(0, 32, lanes):
        banks: dict[int, set] = {}
        for a in addresses[first:first + lanes]:
            for w in range(0, width, 4):
                word = (int(a) + w) // 4
                banks.setdefault(word % 32, set()).add(word)
        total += max(len(words) for words in banks.values())
    return total


def tile_wavefronts(cell, lanes: int, ordered: bool) -> dict:
    """Per kind of access, the wavefronts of one warp (32 // lanes cells) solving one tile."""
    s = tiled_schedule(cell, lanes, lanes=lanes) if ordered else tiled_schedule(cell, lanes)
    cw = 32 // lanes
    own, par = (s.jp & 0xFFFF).astype(np.int64), (s.jp >> 16).astype(np.int64)
    lane_entry, lane_cell = np.arange(32) // cw, np.arange(32) % cw
    out = dict.fromkeys(("schedule", "own", "parents", "staging"), 0)
    for b in range(s.n_batches):
        e = b * lanes + lane_entry
        o, p = (own[e] * cw + lane_cell) * 16, (par[e] * cw + lane_cell) * 16
        out["schedule"] += 4 * wavefronts(e * 8, 8)  # jp, l, u backward; jp forward: 8 B
        out["own"] += 3 * wavefronts(o, 16) + wavefronts(o + 8, 8)  # load, store; load; x
        out["parents"] += 2 * wavefronts(p, 16) + wavefronts(p + 8, 8)  # load, store; x load
    slot = s.slot.astype(np.int64)
    for first in range(0, s.n_nodes, lanes):  # staging (d, rhs) and the write-back of x
        nodes = s.stage[np.minimum(first + lane_entry, s.n_nodes - 1)]
        a = (slot[nodes] * cw + lane_cell) * 16
        out["staging"] += 3 * wavefronts(a, 8)
    out["total"] = sum(out.values())
    return out


def main():
    cells = real_cells()
    for name, lanes in CELLS:
        plain = tile_wavefronts(cells[name], lanes, False)
        ordered = tile_wavefronts(cells[name], lanes, True)
        print(f"{name} ({cells[name].n_nodes} nodes, {lanes} lanes): plain {plain}, "
              f"ordered {ordered}: {1 - ordered['total'] / plain['total']:.0%} fewer")


if __name__ == "__main__":
    main()
