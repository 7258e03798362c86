"""The measurements of ``hinesbatch bench hines`` (see :mod:`.hines` for what and why)."""
from __future__ import annotations

import statistics

import numpy as np

from ._gpu_timing import event_times, free_memory, rotation_sets

__all__ = ["Runner"]

CHECK_CELLS = 64  # cells compared with the serial solver after each GPU case


def hines_values(cell, n_cells: int, *, seed: int = 0, distinct: int = 1024):
    """``(d, rhs)`` float64 ``(n_cells, n)``: ``distinct`` random diagonally dominant cells
    (``d = sum|offdiag| (1 + U(0.1, 1)) + U(0.1, 1)``, like a Hines step) repeated."""
    rng = np.random.default_rng(seed)
    parent = cell.parent
    child = np.flatnonzero(parent >= 0)
    sums = np.zeros(parent.size)
    sums[child] += np.abs(cell.lower[child])
    sums += np.bincount(parent[child], weights=np.abs(cell.u[child]), minlength=parent.size)
    k = min(distinct, n_cells)
    d = sums * (1 + rng.uniform(0.1, 1.0, (k, parent.size))) + rng.uniform(0.1, 1.0, (k, parent.size))
    rhs = rng.standard_normal((k, parent.size)) * (1 + sums)
    reps = -(-n_cells // k)
    return np.tile(d, (reps, 1))[:n_cells].copy(), np.tile(rhs, (reps, 1))[:n_cells].copy()


def per_cell_copies(cell, n_cells: int):
    """``n_cells`` copies of ``cell`` as a per-cell-structure batch (built without a loop)."""
    from ..tree.structure import HinesStructure

    n = cell.n_nodes
    base = (np.arange(n_cells, dtype=np.int64) * n)[:, None]
    parent = np.tile(cell.parent.astype(np.int64), (n_cells, 1)) + base
    parent[:, 0] = -1
    return HinesStructure(parent.reshape(-1), np.tile(cell.u, n_cells), None,
                          np.arange(n_cells + 1, dtype=np.int64) * n)


class Runner:
    """Times the contenders; builds the result tables."""

    def __init__(self, cupy, *, repeats: int, cpu_repeats: int, copy_tbs: float,
                 no_serial_above: int | None):
        import numba

        self.cupy = cupy
        self.repeats = repeats
        self.cpu_repeats = cpu_repeats
        self.copy_tbs = copy_tbs
        self.no_serial_above = no_serial_above
        self.cpu_threads = numba.get_num_threads()
        dev = cupy.cuda.runtime.getDeviceProperties(0)
        self.l2 = int(dev["l2CacheSize"])
        self.n_devices = cupy.cuda.runtime.getDeviceCount()

    # -- one GPU case ------------------------------------------------------------------------
    def gpu_case(self, batch, d_host, rhs_host, strategy: str, options: dict, *,
                 dtype=np.float64, devices=None, native: bool = True, canonical: bool = True,
                 reference=None) -> dict:
        """Median event times [ms] of one plan: native layout and canonical order."""
        import hinesbatch
        from hinesbatch.solvers.gpu import layout_solver

        cupy = self.cupy
        plan = hinesbatch.plan(batch, backend="gpu", strategy=strategy, check_pivots=False,
                               devices=devices, **options)
        impl = layout_solver(plan, dtype)
        row = {"describe": impl.describe()}
        d0 = cupy.asarray(d_host, dtype=dtype)
        r0 = cupy.asarray(rhs_host, dtype=dtype)
        sets = rotation_sets(2 * d0.nbytes, self.l2)
        if canonical:
            work = [(cupy.empty_like(d0), cupy.empty_like(r0)) for _ in range(sets)]

            def restore(i):
                cupy.copyto(work[i][0], d0)
                cupy.copyto(work[i][1], r0)

            row["canonical_ms"] = statistics.median(event_times(
                cupy, lambda i: plan.solve(*work[i], overwrite=True, check_finite=False),
                restore, sets=sets, repeats=self.repeats))
            if reference is not None:
                x = work[-1][1].get().reshape(batch.n_cells, -1)[:CHECK_CELLS]
                row["max_rel_err"] = float(np.max(np.linalg.norm(x - reference, axis=1)
                                                  / np.linalg.norm(reference, axis=1)))
            del work
        if native:
            if impl.native_is_canonical and canonical and len(impl.layout_shapes()) <= 1:
                row["native_ms"] = row["canonical_ms"]
            else:
                row["native_ms"] = self._native_ms(plan, impl, d0, r0, sets)
        del d0, r0
        free_memory(cupy)
        return row

    def _native_ms(self, plan, impl, d0, r0, sets: int) -> float:
        cupy = self.cupy
        dn0, rn0 = _listed(plan.to_layout(d0)), _listed(plan.to_layout(r0))
        streams = impl.layout_streams()
        work = []
        for _ in range(sets):
            work.append(([_copy(cupy, a) for a in dn0], [_copy(cupy, a) for a in rn0]))

        def restore(i):
            for (dev, stream), wd, wr, a, b in zip(streams, work[i][0], work[i][1], dn0, rn0):
                with cupy.cuda.Device(dev), stream:
                    cupy.copyto(wd, a)
                    cupy.copyto(wr, b)

        def solve(i):
            d, r = work[i]
            plan.solve_layout(d if len(d) > 1 else d[0], r if len(r) > 1 else r[0])

        ms = statistics.median(event_times(cupy, solve, restore, sets=sets, repeats=self.repeats))
        del work, dn0, rn0
        return ms

    # -- the tables ----------------------------------------------------------------------------
    def all_tables(self, stand_ins, cells, *, quick: bool, focus: str):
        from ._hines_setup import BANDWIDTH_STRATEGIES, BS_SWEEP, GPU_STRATEGIES, TILE_THREADS, \
            stand_in_structure

        tables, notes = {}, []
        structures = {s[0]: stand_in_structure(s[0]) for s in stand_ins}
        fig_rows = self.figure_rows(stand_ins, structures, cells, GPU_STRATEGIES)
        tables.update(_figure_tables(fig_rows, GPU_STRATEGIES))
        top = max(cells)
        if focus in structures and not quick:
            cell = structures[focus][0]
            tables["Fig. 4 (left): Block-Interleaved BS sweep and Block-Shared, medium-high, "
                   f"{top} cells, fp64"] = self.bs_rows(cell, top, BS_SWEEP, fig_rows, focus)
            tables[f"Bandwidth: medium-high, {top} cells (copy ceiling {self.copy_tbs:.3f} TB/s)"] = \
                self.bandwidth_rows(cell, top, BANDWIDTH_STRATEGIES)
            tables[f"Block-shared keep=factors variants: medium-high, {top} cells, fp64, native "
                   "layout"] = self.factor_rows(cell, top)
            tables[f"Tiled variants: medium-high, {top} cells, fp64, shared structure"] = \
                self.tiled_rows(cell, top, TILE_THREADS)
            tables[f"End to end: Plan.solve on medium-high, {top} cells, fp64"] = \
                self.end_to_end_rows(cell, top)
            if self.n_devices > 1:
                tables[f"Several GPUs: medium-high, fp64 ({self.n_devices} devices)"] = \
                    self.multi_gpu_rows(cell, cells, fig_rows, focus)
            else:
                notes.append("Several GPUs: not run (one device on this machine).")
        notes += _goal_notes(tables, self.copy_tbs)
        return tables, notes

    def tiled_tables(self, cells, *, focus: str):
        """Only the bandwidth table and the tiled sweeps: the focus cell at the largest batch,
        and the large-cell case (3000 copies of ca1 at nseg=8, 1405 nodes)."""
        from ._multi_cases import large_cell
        from ._hines_setup import BANDWIDTH_STRATEGIES, TILE_THREADS, stand_in_structure

        cell = stand_in_structure(focus)[0]
        top = max(cells)
        tables = {
            f"Bandwidth: medium-high, {top} cells (copy ceiling {self.copy_tbs:.3f} TB/s)":
                self.bandwidth_rows(cell, top, BANDWIDTH_STRATEGIES),
            f"Block-shared keep=factors variants: medium-high, {top} cells, fp64, native layout":
                self.factor_rows(cell, top),
            f"Tiled variants: medium-high, {top} cells, fp64, shared structure":
                self.tiled_rows(cell, top, (32, *TILE_THREADS)),
        }
        big = large_cell()
        tables[f"Tiled variants: ca1 nseg=8 ({big.n_nodes} nodes), 3000 cells, fp64, shared "
               "structure (target <= 0.15 ms)"] = self.tiled_rows(big, 3000,
                                                                          (32, *TILE_THREADS))
        tables[f"Block-shared keep=factors variants: ca1 nseg=8 ({big.n_nodes} nodes), 3000 "
               "cells, fp64, native layout"] = self.factor_rows(big, 3000)
        return tables, _goal_notes(tables, self.copy_tbs)

    def multi_gpu_tables(self, cells, *, focus: str):
        """Only the several-GPUs table (no CPU runs: speedups over serial are left empty)."""
        from ._hines_setup import stand_in_structure

        cell = stand_in_structure(focus)[0]
        if self.n_devices < 2:
            return {}, ["Several GPUs: not run (one device on this machine)."]
        title = f"Several GPUs: medium-high, fp64 ({self.n_devices} devices)"
        tables = {title: self.multi_gpu_rows(cell, cells, [], focus)}
        return tables, _goal_notes(tables, self.copy_tbs)

    def figure_rows(self, stand_ins, structures, cells, strategies) -> list[dict]:
        from ..tree.structure import MonoBatch
        from ._hines_setup import cpu_times

        rows = []
        for category, name, nseg, paper_nodes, paper_branches in stand_ins:
            cell, sections, _, _ = structures[category]
            for n in cells:
                batch = MonoBatch(cell, n)
                d, rhs = hines_values(cell, n)
                serial = self.no_serial_above is None or n <= self.no_serial_above
                cpu = cpu_times(batch, d, rhs, repeats=self.cpu_repeats,
                                backends=("serial", "multicore") if serial else ("multicore",))
                ref = _reference(cell, d, rhs)
                row = {"category": category, "file": name, "nseg": nseg, "nodes": cell.n_nodes,
                       "sections": sections, "cells": n, "serial_ms": cpu.get("serial"),
                       "multicore_ms": cpu["multicore"]}
                for strategy, options in strategies:
                    r = self.gpu_case(batch, d, rhs, strategy, options, reference=ref)
                    row[f"{strategy}_native_ms"] = r["native_ms"]
                    row[f"{strategy}_canonical_ms"] = r["canonical_ms"]
                    row[f"{strategy}_err"] = r["max_rel_err"]
                rows.append(row)
                print(_short(row, strategies), flush=True)
                del d, rhs
        return rows

    def bs_rows(self, cell, n, sweep, fig_rows, focus) -> list[dict]:
        from ..tree.structure import MonoBatch

        batch = MonoBatch(cell, n)
        d, rhs = hines_values(cell, n)
        serial = _serial_ms(fig_rows, focus, n)
        rows = []
        configs = [("block-interleaved", {"bs": bs}) for bs in sweep]
        configs += [("block-shared", {"bs": bs}) for bs in (8, 16, 32, 64)]
        configs += [("interleaved", {}), ("tiled", {})]
        for strategy, options in configs:
            try:
                r = self.gpu_case(batch, d, rhs, strategy, options)
            except ValueError as exc:  # a BS whose shared memory does not fit
                rows.append({"strategy": strategy, "bs": options.get("bs"), "native_ms": None,
                             "canonical_ms": None, "speedup_native": None, "note": str(exc)[:80]})
                continue
            rows.append({"strategy": strategy, "bs": options.get("bs"), "native_ms": r["native_ms"],
                         "canonical_ms": r["canonical_ms"],
                         "speedup_native": None if serial is None else serial / r["native_ms"],
                         "note": ""})
            print(rows[-1], flush=True)
        return rows

    def bandwidth_rows(self, cell, n, strategies) -> list[dict]:
        from ..tree.structure import MonoBatch
        from ._hines_setup import BYTES_PER_NODE

        d, rhs = hines_values(cell, n)
        ref = _reference(cell, d, rhs)
        rows = []
        for kind, batch in (("mono", MonoBatch(cell, n)), ("multi", per_cell_copies(cell, n))):
            dv, rv = (d, rhs) if kind == "mono" else (d.reshape(-1), rhs.reshape(-1))
            for dtype in (np.float64, np.float32):
                per_node = BYTES_PER_NODE[(kind, np.dtype(dtype).itemsize)]
                for strategy, options in strategies:
                    if kind == "multi" and "lanes" in options:  # shared structures only
                        continue
                    r = self.gpu_case(batch, dv, rv, strategy, options, dtype=dtype,
                                      reference=ref if dtype == np.float64 else None)
                    nodes = n * cell.n_nodes
                    label = strategy + (" (" + ", ".join(f"{k}={v}" for k, v in options.items())
                                        + ")" if options else "")
                    row = {"structure": kind, "dtype": np.dtype(dtype).name, "strategy": label,
                           "bytes_per_node": per_node, "native_ms": r["native_ms"],
                           "canonical_ms": r["canonical_ms"]}
                    for path in ("native", "canonical"):
                        tbs = per_node * nodes / (r[f"{path}_ms"] * 1e-3) / 1e12
                        row[f"{path}_TB_s"] = tbs
                        row[f"{path}_ratio"] = tbs / self.copy_tbs
                    row["max_rel_err"] = r.get("max_rel_err")
                    rows.append(row)
                    print(rows[-1], flush=True)
            del batch
        return rows

    def tiled_rows(self, cell, n, threads, dtype=np.float64, buffers=(1, 2)) -> list[dict]:
        from ..solvers.gpu.kernel_build import TILED_VARIANTS
        from ..tree.structure import MonoBatch

        batch = MonoBatch(cell, n)
        d, rhs = hines_values(cell, n)
        rows = []
        grid = [(lanes, v, nt, bufs) for lanes, v in TILED_VARIANTS for nt in threads
                for bufs in buffers]
        for lanes, v, nt, bufs in grid:
            opts = {"tile_cells": max(32 // lanes, nt // lanes), "batch": lanes * v,
                    "lanes": lanes, "buffers": bufs}
            row = {"threads": opts["tile_cells"] * lanes, "lanes": lanes, "batch": lanes * v,
                   "buffers": bufs, "tile_cells": opts["tile_cells"]}
            rows.append(self._sweep_row(batch, d, rhs, "tiled", opts, row, dtype=dtype,
                                        path="canonical"))
        return rows

    def _sweep_row(self, batch, d, rhs, strategy, opts, row, *, dtype, path) -> dict:
        """``row`` with the time of one configuration (``path``: "canonical" or "native"), its
        effective bandwidth of a shared structure and ratio to the copy; a configuration whose
        plan is refused (shared memory) gets the reason instead."""
        try:
            r = self.gpu_case(batch, d, rhs, strategy, opts, dtype=dtype,
                              native=path == "native", canonical=path == "canonical")
        except ValueError as exc:  # too much shared memory for this configuration
            return {**row, "ms": None, "TB_s": None, "ratio": None, "describe": str(exc)[:90]}
        ms = r[f"{path}_ms"]
        tbs = 3 * np.dtype(dtype).itemsize * batch.n_nodes / (ms * 1e-3) / 1e12
        out = {**row, "ms": ms, "TB_s": tbs, "ratio": tbs / self.copy_tbs,
               "describe": r["describe"]}
        print({**row, "ms": ms, "ratio": out["ratio"]}, flush=True)
        return out

    def factor_rows(self, cell, n, dtype=np.float64) -> list[dict]:
        """block-shared with keep="factors": lanes per cell x nodes per step x cells per block,
        native layout (values already Block-Interleaved), effective bandwidth of a shared
        structure. Several lanes: the cells per block that fill whole warps."""
        from ..solvers.gpu.kernel_build import FACTOR_VARIANTS
        from ..tree.structure import MonoBatch
        from ._hines_setup import FACTOR_BS

        batch = MonoBatch(cell, n)
        d, rhs = hines_values(cell, n)
        rows = []
        for lanes, per_lane, _ in FACTOR_VARIANTS:
            slots = lanes * per_lane
            sizes = FACTOR_BS if lanes == 1 else \
                [b for b in FACTOR_BS if b >= 16 and b % (32 // lanes) == 0]
            for bs in (None, *sizes):
                opts = {"keep": "factors", "lanes": lanes, "slots": slots,
                        **({} if bs is None else {"bs": bs})}
                row = {"lanes": lanes, "slots": slots, "bs": "default" if bs is None else bs}
                rows.append(self._sweep_row(batch, d, rhs, "block-shared", opts, row,
                                            dtype=dtype, path="native"))
        return rows

    def end_to_end_rows(self, cell, n) -> list[dict]:
        import hinesbatch

        from ..tree.structure import MonoBatch
        from ._hines_setup import wall_ms

        cupy = self.cupy
        batch = MonoBatch(cell, n)
        d, rhs = hines_values(cell, n)
        plan = hinesbatch.plan(batch, backend="gpu")
        dc, rc = cupy.asarray(d), cupy.asarray(rhs)
        wd, wr = cupy.empty_like(dc), cupy.empty_like(rc)
        sync = cupy.cuda.get_current_stream().synchronize

        def restored(fn):
            def call():
                cupy.copyto(wd, dc)
                cupy.copyto(wr, rc)
                sync()
                return fn()
            return call

        rows = []
        cases = {
            "CuPy in, defaults (copies inputs, checks finiteness and pivots)":
                lambda: plan.solve(dc, rc),
            "CuPy in, overwrite=True, check_finite=False (pivots checked)":
                restored(lambda: plan.solve(wd, wr, overwrite=True, check_finite=False)),
            "NumPy in and out (host-device copies included)": lambda: plan.solve(d, rhs),
        }
        restore_ms = wall_ms(restored(lambda: None), repeats=5, sync=sync)
        for label, fn in cases.items():
            # wall_ms times fn() + sync; a refill inside `restored` is included: subtract it
            try:
                ms = wall_ms(fn, repeats=5, sync=sync)
            except Exception as exc:  # report the failure in the table, keep benchmarking
                rows.append({"call": label, "wall_ms": None, "describe": f"failed: {exc!r}"[:200]})
                print(rows[-1], flush=True)
                continue
            if "overwrite=True" in label:
                ms -= restore_ms
                label += f" (input refill of {restore_ms:.3f} ms subtracted)"
            rows.append({"call": label, "wall_ms": ms, "describe": plan.describe()})
            print(rows[-1], flush=True)
        del dc, rc, wd, wr
        free_memory(cupy)
        return rows

    def multi_gpu_rows(self, cell, cells, fig_rows, focus) -> list[dict]:
        from ..tree.structure import MonoBatch

        rows = []
        for n in cells:
            batch = MonoBatch(cell, n)
            d, rhs = hines_values(cell, n)
            serial = _serial_ms(fig_rows, focus, n)
            ref = _reference(cell, d, rhs)
            for strategy in ("interleaved", "tiled"):
                one = self.gpu_case(batch, d, rhs, strategy, {}, canonical=False)
                many = self.gpu_case(batch, d, rhs, strategy, {}, devices="all", reference=ref)
                rows.append({"cells": n, "strategy": strategy, "one_gpu_native_ms": one["native_ms"],
                             "all_gpus_native_ms": many["native_ms"],
                             "scaling": one["native_ms"] / many["native_ms"],
                             "all_gpus_canonical_from_gpu0_ms": many["canonical_ms"],
                             "speedup_all_gpus_native": None if serial is None
                             else serial / many["native_ms"],
                             "max_rel_err_all_gpus": many["max_rel_err"]})
                print(rows[-1], flush=True)
        return rows


def _listed(a):
    return a if isinstance(a, list) else [a]


def _copy(cupy, a):
    with cupy.cuda.Device(a.device.id):
        return a.copy()


def _reference(cell, d, rhs):
    """The serial CPU solution of the first CHECK_CELLS cells."""
    import hinesbatch

    from ..tree.structure import MonoBatch

    k = min(CHECK_CELLS, d.shape[0])
    return hinesbatch.plan(MonoBatch(cell, k), backend="serial").solve(d[:k], rhs[:k])


def _serial_ms(rows, category, n):
    for r in rows:
        if r["category"] == category and r["cells"] == n:
            return r["serial_ms"]
    return None


def _short(row, strategies) -> str:
    gpu = " ".join(f"{s}={row[f'{s}_native_ms']:.3g}/{row[f'{s}_canonical_ms']:.3g}"
                   for s, _ in strategies)
    serial = "–" if row["serial_ms"] is None else f"{row['serial_ms']:.3g}"
    return (f"{row['category']:11s} {row['cells']:7d} cells: serial {serial} ms, multicore "
            f"{row['multicore_ms']:.3g} ms; GPU native/canonical ms {gpu}")


def _figure_tables(rows, strategies) -> dict:
    keys = ("category", "nodes", "sections", "cells")
    native, canonical, speed = [], [], []
    for r in rows:
        base = {k: r[k] for k in keys}
        native.append({**base, "serial": r["serial_ms"], "multicore": r["multicore_ms"],
                       **{s: r[f"{s}_native_ms"] for s, _ in strategies}})
        canonical.append({**base, **{s: r[f"{s}_canonical_ms"] for s, _ in strategies},
                          "max_rel_err": max(r[f"{s}_err"] for s, _ in strategies)})
        serial = r["serial_ms"]
        speed.append({**base, "multicore": None if serial is None else serial / r["multicore_ms"],
                      **{s: None if serial is None else serial / r[f"{s}_native_ms"]
                         for s, _ in strategies},
                      "tiled (canonical)": None if serial is None
                      else serial / r["tiled_canonical_ms"]})
    return {
        "Figs. 3 and 5: ms per solve, fp64, shared structure, values in each strategy's layout":
            native,
        "Figs. 3 and 5: ms per solve from the canonical (n_cells, n) order (Plan.solve's input)":
            canonical,
        "Figs. 3 and 5: speedup over serial CPU (GPU in its layout, as in the papers)": speed,
        "Figs. 3 and 5 (all numbers, long form)": rows,
    }


def _goal_notes(tables, copy_tbs) -> list[str]:
    notes = []
    for title, rows in tables.items():
        if title.startswith("Bandwidth"):
            for kind in ("mono", "multi"):
                for path, where in (("native", "values in the strategy's layout"),
                                    ("canonical", "from the canonical order")):
                    best = max((r for r in rows
                                if r["structure"] == kind and r["dtype"] == "float64"),
                               key=lambda r: r[f"{path}_ratio"], default=None)
                    if best is None:
                        continue
                    ratio = best[f"{path}_ratio"]
                    goal = (" (goal >= 0.60: " + ("met" if ratio >= 0.6 else "NOT met") + ")"
                            if kind == "mono" else "")
                    notes.append(f"{kind} fp64 best, {where}: {best['strategy']} at "
                                 f"{best[f'{path}_TB_s']:.3f} TB/s = {ratio:.2f} of the copy "
                                 f"bandwidth {copy_tbs:.3f} TB/s ({best['bytes_per_node']} "
                                 f"B/node){goal}")
        if title.startswith("Several GPUs"):
            top = max(r["cells"] for r in rows)
            for r in rows:
                if r["cells"] == top:
                    notes.append(f"Several GPUs at {top} cells: {r['strategy']} scales "
                                 f"{r['scaling']:.2f}x (goal >= 1.9x for 2 GPUs, data resident "
                                 "on each device)")
    return notes
