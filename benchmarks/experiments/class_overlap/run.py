#!/usr/bin/env python3
"""Can ``grouped``'s classes share the device instead of following one another?

Since every class's persistent kernel fills the device, bench multi's 256000 real cells
(17 classes) take about the sum of the classes alone. This times, fp64 from canonical
values, median of 7 with L2 rotated (``grouped_classes/sweep.timed``'s method):

1. every class alone (``tiled`` on a MonoBatch of its cell, as many cells as in the mix: the
   plan ``grouped`` makes for it), and at 4x the cells (the fixed cost per launch: ramp-up
   and tail);
2. the mix with ``grouped``'s launches rearranged (the same kernels and plans; only grids,
   streams and the tile assignment change): as committed (4 streams); one stream; S streams
   with classes assigned longest first to the least loaded stream, each with 1/S of its
   resident grid; all classes at once on their own streams, each with a share of its
   resident grid in proportion to its time alone (measured, or a model); and, with
   ``take_tiles.patch`` applied, tiles taken from a counter per class on 1-17 streams;
3. with the patch, ``tiled`` alone with fixed tile shares and with tiles taken from a counter;
4. the mono reference (ca1 x 435920, ``tiled``).

    PYTHONPATH=src python3 benchmarks/experiments/class_overlap/run.py OUT.json
"""
from __future__ import annotations

import inspect
import json
import statistics
import sys
from pathlib import Path

import cupy
import numpy as np

from hinesbatch import plan as make_plan
from hinesbatch.bench._gpu_timing import event_times, free_memory, rotation_sets
from hinesbatch.bench._multi_cases import FOCUS, real_cells, real_mix, values
from hinesbatch.solvers.gpu import layout_solver
from hinesbatch.solvers.gpu.compile import kernel
from hinesbatch.solvers.gpu.device import blocks_per_sm, device_properties
from hinesbatch.solvers.gpu.strategies import NULL, SharedTiles
from hinesbatch.tree.schedules import cell_shapes
from hinesbatch.tree.structure import MonoBatch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "grouped_classes"))
from sweep import timed  # noqa: E402

TAKE = "taken" in inspect.signature(SharedTiles.launch).parameters  # take_tiles.patch applied


def resident_grid(t, fn, props, count):
    """Blocks of class plan ``t`` resident on the whole device at once (at most its tiles)."""
    barriers = t.GROUP_BARRIERS if t.groups > 1 else 1
    return min(t.blocks(count), blocks_per_sm(fn, t.threads, t.smem, props, barriers)
               * props["sm_count"])


class Prepared:
    """A plan of ``strategy`` on ``structure`` solved once (so its launches are built), with
    input sets in rotation: :meth:`median_ms` times a solve function of the set index."""

    def __init__(self, structure, strategy: str, l2: int):
        d, rhs = values(structure)
        self.d0, self.r0 = cupy.asarray(d), cupy.asarray(rhs)
        self.impl = layout_solver(make_plan(structure, backend="gpu", strategy=strategy,
                                            check_pivots=False), np.float64)
        self.strategy = self.impl._parts[0].strategy
        self.pivots = self.impl._parts[0].pivots
        self.sets = rotation_sets(2 * self.d0.nbytes, l2, cap=8)
        self.work = [(cupy.empty_like(self.d0), cupy.empty_like(self.r0))
                     for _ in range(self.sets)]
        self.impl.solve(*self.work[0])

    def _restore(self, i):
        cupy.copyto(self.work[i][0], self.d0)
        cupy.copyto(self.work[i][1], self.r0)

    def median_ms(self, solve) -> float:
        return statistics.median(event_times(cupy, solve, self._restore, sets=self.sets,
                                             repeats=7))

    def x_sum(self) -> float:
        """A checksum of the last timed solution (arrangements must agree bit for bit)."""
        return float(np.nansum(cupy.asnumpy(self.work[-1][1])))

    def close(self):
        del self.d0, self.r0, self.work
        free_memory(cupy)


def mix_times(mix, arrangements, l2):
    """Median ms of ``grouped`` on ``mix`` for each arrangement: name -> function(launches,
    props) returning [(launch index, grid, stream index, take tiles)] in launch order."""
    run = Prepared(mix, "grouped", l2)
    g = run.strategy
    launches, props, dev = g._launches, g.props, g._arrays()
    taken = cupy.zeros(2 * len(launches), np.int32)
    out = {}
    for name, arrange in arrangements.items():
        order = arrange(launches, props)
        streams = [cupy.cuda.Stream(non_blocking=True)
                   for _ in range(1 + max(s for _, _, s, _ in order))]
        joins = [cupy.cuda.Event(block=False, disable_timing=True) for _ in streams]
        fork = cupy.cuda.Event(block=False, disable_timing=True)

        def solve(i, order=order, streams=streams, joins=joins, fork=fork):
            dd, rr = run.work[i]
            stream = cupy.cuda.get_current_stream()
            fork.record(stream)
            for s in streams:
                s.wait_event(fork)
            for k, grid, s, take in order:
                t, fn, _, arrays, members, count = launches[k]
                extra = (taken[2 * k:],) if take else ()
                t.launch(fn, grid, dd, rr, arrays, members, dev["offsets"], count, 0,
                         run.pivots, streams[s], *extra)
            for s, e in zip(streams, joins):
                e.record(s)
                stream.wait_event(e)

        ms = run.median_ms(solve)
        out[name] = {"ms": ms, "launches": [(int(k), int(gr), int(s), bool(t))
                                            for k, gr, s, t in order],
                     "x_sum": run.x_sum(), "counters_left_zero": not bool(taken.any())}
        print("mix", name, round(ms, 4), flush=True)
    run.close()
    return out


def tiled_times(batch, l2):
    """Median ms of ``tiled`` on a MonoBatch with fixed tile shares and taking tiles."""
    run = Prepared(batch, "tiled", l2)
    st = run.strategy
    t, dev, grid = st.tiles, st._arrays(), st._grid
    fn = kernel(0, "hines_tiled.cu", t.template, np.float64)
    taken = cupy.zeros(2, np.int32)
    out = {"describe": run.impl.describe()}
    for name, extra in (("fixed shares", ()), ("taking tiles", (taken,))):
        def solve(i, extra=extra):
            t.launch(fn, grid, run.work[i][0], run.work[i][1], dev, NULL, NULL, batch.n_cells,
                     0, run.pivots, cupy.cuda.get_current_stream(), *extra)
        out[name] = run.median_ms(solve)
        out[name + " x_sum"] = run.x_sum()
    out["counter_left_zero"] = not bool(taken.any())
    run.close()
    return out


def main(path):
    l2 = int(cupy.cuda.runtime.getDeviceProperties(0)["l2CacheSize"])
    cells = real_cells(1)
    mix = real_mix(cells, 256000, seed=256000)
    classes = cell_shapes(mix, couplings=True)
    out = {"classes": [], "tiled": {}}
    if TAKE:
        for name, batch in (("ca1 x 435920", MonoBatch(cells[FOCUS], 435920)),
                            ("1681 nodes x 15015", MonoBatch(cells["v_e_purk2.CNG.swc"], 15015)),
                            ("881 nodes x 15006", MonoBatch(cells["EC3-80604.CNG.swc"], 15006)),
                            ("59 nodes x 15034",
                             MonoBatch(cells["Gad1-F-600000.CNG.swc"], 15034))):
            out["tiled"][name] = tiled_times(batch, l2)
            print("tiled", name, out["tiled"][name], flush=True)
    alone = {}
    for k in range(classes.n_shapes):
        cell = classes.representatives.cell(k)
        count = int(classes.counts[k])
        row = {"nodes": cell.n_nodes, "cells": count}
        row["ms"], row["describe"] = timed(MonoBatch(cell, count), "tiled", {}, l2)
        row["ms_4x"], _ = timed(MonoBatch(cell, 4 * count), "tiled", {}, l2)
        alone[(cell.n_nodes, count)] = row["ms"]  # a class: its cell's size and count
        out["classes"].append(row)
        print(row["nodes"], count, round(row["ms"], 4), round(row["ms_4x"], 4), flush=True)
    out["sum alone"] = sum(alone.values())
    props = device_properties(0)

    def measured(launches):
        return [alone[(t.schedule.n_nodes, count)] for t, *_, count in launches]

    def model(launches):  # steps x cells per resident cell: latency-bound sweeps
        out = []
        for t, fn, _, _, _, count in launches:
            per_sm = blocks_per_sm(fn, t.threads, t.smem, props, t.GROUP_BARRIERS
                                   if t.groups > 1 else 1) * t.groups * t.tile_cells
            out.append(count * (2 * t.schedule.n_batches + t.schedule.n_nodes / 32) / per_sm)
        return out

    def streams(S, take=False):
        return lambda launches, props: [(k, launches[k][2], k % S, take)
                                        for k in range(len(launches))]

    def lpt(S, cost):
        def arrange(launches, props):
            c, load, order = cost(launches), [0.0] * S, []
            for k in np.argsort(-np.array(c), kind="stable").tolist():
                s = int(np.argmin(load))
                load[s] += c[k]
                t, fn, _, _, _, count = launches[k]
                order.append((k, max(1, resident_grid(t, fn, props, count) // S), s, False))
            return order
        return arrange

    def shares(cost):
        def arrange(launches, props):
            c = np.array(cost(launches))
            f = c / c.sum()
            by_smem = np.argsort([-t.smem for t, *_ in launches], kind="stable").tolist()
            return [(k, max(1, int(round(resident_grid(launches[k][0], launches[k][1], props,
                                                       launches[k][5]) * f[k]))), s, False)
                    for s, k in enumerate(by_smem)]
        return arrange

    arrangements = {"as committed (4 streams)": streams(4), "one stream": streams(1),
                    "lpt 2 measured": lpt(2, measured), "lpt 4 measured": lpt(4, measured),
                    "lpt 4 model": lpt(4, model), "lpt 8 measured": lpt(8, measured),
                    "shares measured": shares(measured), "shares model": shares(model)}
    if TAKE:
        arrangements.update({f"taking tiles, {S} streams": streams(S, True)
                             for S in (1, 2, 4, 8, 17)})
    out["mix"] = mix_times(mix, arrangements, l2)
    ref = out["mix"]["as committed (4 streams)"]["x_sum"]
    for row in out["mix"].values():
        row["same_x_as_committed"] = row["x_sum"] == ref
    out["mono"] = dict(zip(("ms", "describe"),
                           timed(MonoBatch(cells[FOCUS], 435920), "tiled", {}, l2)))
    print("mono", out["mono"]["ms"], flush=True)
    with open(path, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
