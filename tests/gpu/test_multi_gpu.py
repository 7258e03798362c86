"""The multi-morphology GPU strategies ``levels``, ``fine`` and ``dhs`` on the device.

Every strategy (plain and balanced) in float32 and float64, on per-cell batches mixing all
repository morphologies with random trees (branching 0.1-0.9, chains of 700 nodes and a
sparse 900-node tree hundreds of levels deep, a 5,000-tip star: 4,999 branches on one
level), single- and two-node cells, a non-symmetric batch, and mono-morphology batches;
against the serial CPU solver (relative 1e-12 / 1e-5 per cell). Before each checked solve
the plan solves an all-NaN batch (which must fail), so its scratch buffers hold NaN: a value
the kernels fail to write shows up. Also: bitwise determinism, the native slot layout, two
parts on one device, singular pivots named by cell and node like the serial solver, options.

``python tests/gpu/test_multi_gpu.py [OUT_DIR]`` prints (and writes) a small timing table.
"""
from __future__ import annotations

import functools
import json
import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import hinesbatch
from hinesbatch.errors import SingularSystemError
from hinesbatch.tree import random_trees as rt
from hinesbatch.tree.structure import HinesStructure, MonoBatch

from gpu_cases import (poisoned_solve, REAL, TOLERANCE, cell_rel_error, hines_values, record_error,
                       serial_reference)

pytestmark = pytest.mark.gpu

CONFIGS = [
    ("levels", {}),
    ("levels", {"reroot": True, "split": "cost", "threads": 64}),
    ("fine", {}),
    ("fine", {"block_size": 256, "reroot": True, "split": "mean"}),
    ("dhs", {}),
    ("dhs", {"threads_per_cell": 4, "reroot": True}),
]
CONFIG_IDS = [s + "".join(f"-{k}{v}" for k, v in o.items()) for s, o in CONFIGS]
DTYPES = [np.float32, np.float64]
NAMES = ("levels", "fine", "dhs")


@functools.lru_cache(maxsize=None)
def real_cells(nseg: int = 1) -> tuple[HinesStructure, ...]:
    """Every repository morphology (min_radius 0.01 µm: one has a zero radius)."""
    from hinesbatch.discretize import discretize

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tuple(discretize(p, nseg=nseg, min_radius=0.01).hines_structure()
                     for p in sorted(REAL.glob("*.swc")))


def stress_cells(rng, symmetric: bool) -> list[HinesStructure]:
    cells = [rt.random_tree(int(rng.integers(50, 2000)), rng=rng, branch_probability=p,
                            symmetric=symmetric) for p in (0.1, 0.3, 0.5, 0.7, 0.9)]
    cells += [rt.star(5000, rng=rng, symmetric=symmetric),
              rt.chain(700, rng=rng, symmetric=symmetric),
              rt.random_tree(900, rng=rng, branch_probability=0.02, symmetric=symmetric)]
    cells += [rt.chain(1 + i % 2, rng=rng, symmetric=symmetric) for i in range(6)]
    return cells


@functools.lru_cache(maxsize=None)
def batch(kind: str):
    rng = np.random.default_rng(7)
    if kind == "multi":
        pool = list(real_cells()) * 2 + stress_cells(rng, True)
        return HinesStructure.concatenate([pool[i] for i in rng.permutation(len(pool))])
    if kind == "nonsymmetric":
        cells = stress_cells(rng, False)
        return HinesStructure.concatenate([cells[i] for i in rng.permutation(len(cells))])
    if kind == "mono-real":
        names = [p.name for p in sorted(REAL.glob("*.swc"))]
        return MonoBatch(real_cells()[names.index("morph_ca1_n120.swc")], 300)
    return MonoBatch(rt.random_tree(500, rng=rng, branch_probability=0.5), 257)


KINDS = ("multi", "nonsymmetric", "mono-real", "mono-random")


@functools.lru_cache(maxsize=None)
def values(kind: str, dtype):
    structure = batch(kind)
    d, rhs = hines_values(structure, np.random.default_rng(11), dtype)
    return d, rhs, serial_reference(structure, d, rhs)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("strategy,options", CONFIGS, ids=CONFIG_IDS)
def test_against_serial(strategy, options, dtype, kind, cp):
    structure = batch(kind)
    d, rhs, ref = values(kind, dtype)
    plan = hinesbatch.plan(structure, backend="gpu", strategy=strategy, **options)
    assert f"strategy {strategy} (requested)" in plan.describe()
    err = cell_rel_error(structure, poisoned_solve(plan, structure, d, rhs, dtype, cp), ref)
    label = "mono" if isinstance(structure, MonoBatch) else "multi"
    record_error(f"{np.dtype(dtype).name} {label} {strategy}", err, f"{kind} {options}")
    assert err <= TOLERANCE[np.dtype(dtype)], f"{strategy} {options} {kind}: {err:.3e}"


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("strategy", NAMES)
def test_bitwise_deterministic_and_native_layout(strategy, dtype, cp):
    from hinesbatch.solvers.gpu import layout_solver

    for kind in ("multi", "mono-real"):
        structure = batch(kind)
        d, rhs, _ = values(kind, dtype)
        plan = hinesbatch.plan(structure, backend="gpu", strategy=strategy)
        first = plan.solve(cp.asarray(d), cp.asarray(rhs)).get()
        again = plan.solve(cp.asarray(d), cp.asarray(rhs), overwrite=True).get()
        assert np.array_equal(first, again), f"{strategy} {kind}: two solves differ"
        impl = layout_solver(plan, dtype)
        dn, rn = impl.to_layout(cp.asarray(d)), impl.to_layout(cp.asarray(rhs))
        assert tuple(rn.shape) == impl.layout_shapes()[0]
        assert impl.solve_layout(dn, rn) is rn
        assert np.array_equal(impl.from_layout(rn).get(), first), f"{strategy} {kind} native"


@pytest.mark.parametrize("strategy", NAMES)
def test_two_parts_on_one_device(strategy, cp):
    structure = batch("multi")
    d, rhs, ref = values("multi", np.float64)
    plan = hinesbatch.plan(structure, backend="gpu", strategy=strategy, devices=[0, 0])
    x = plan.solve(cp.asarray(d), cp.asarray(rhs)).get()
    assert cell_rel_error(structure, x, ref) <= TOLERANCE[np.dtype(np.float64)]
    bad = d.copy()
    c = structure.n_cells - 3  # in the second part
    leaf = int(_leaves(structure.cell(c).parent)[-1])
    bad[structure.cell_offsets[c] + leaf] = 0.0
    with pytest.raises(SingularSystemError) as err:
        plan.solve(cp.asarray(bad), cp.asarray(rhs))
    assert (err.value.cell, err.value.node) == (c, leaf)


def _leaves(parent):
    return np.setdiff1d(np.arange(parent.size), parent[parent >= 0])


@pytest.mark.parametrize("strategy,options", CONFIGS, ids=CONFIG_IDS)
def test_singular_pivots_name_cell_and_node_like_serial(strategy, options, seed, cp):
    rng = np.random.default_rng(seed)
    for kind in ("multi", "mono-real"):
        structure = batch(kind)
        d, rhs, _ = values(kind, np.float64)
        d = d.copy()
        cells = np.sort(rng.choice(structure.n_cells, 3, replace=False))
        for c in cells:  # a leaf's pivot is its d
            if isinstance(structure, MonoBatch):
                d[c, rng.choice(_leaves(structure.cell.parent))] = 0.0
            else:
                leaves = _leaves(structure.cell(int(c)).parent)
                d[structure.cell_offsets[c] + rng.choice(leaves)] = 0.0
        with pytest.raises(SingularSystemError) as cpu:
            hinesbatch.plan(structure, backend="serial").solve(d, rhs)
        plan = hinesbatch.plan(structure, backend="gpu", strategy=strategy, **options)
        with pytest.raises(SingularSystemError) as gpu:
            plan.solve(cp.asarray(d), cp.asarray(rhs))
        assert (gpu.value.cell, gpu.value.node) == (cpu.value.cell, cpu.value.node), \
            f"{kind} seed {seed}"
        assert gpu.value.cell == cells[0] and "pivot 0.0" in str(gpu.value)
        x = plan.solve(*(cp.asarray(a) for a in values(kind, np.float64)[:2]))  # recovers
        assert np.all(np.isfinite(x.get()))


@pytest.mark.parametrize("strategy", NAMES)
def test_infinite_pivot_is_reported_where_it_is(strategy, cp):
    structure = batch("multi")
    d, rhs, _ = values("multi", np.float64)
    d = d.copy()
    c = 5
    leaf = int(_leaves(structure.cell(c).parent)[-1])
    d[structure.cell_offsets[c] + leaf] = np.inf  # its factor is 0: nothing else fails
    plan = hinesbatch.plan(structure, backend="gpu", strategy=strategy)
    with pytest.raises(SingularSystemError) as err:
        plan.solve(cp.asarray(d), cp.asarray(rhs), check_finite=False)
    assert (err.value.cell, err.value.node) == (c, leaf)


def test_options(cp):
    structure = batch("mono-random")
    with pytest.raises(TypeError, match="do not apply"):
        hinesbatch.plan(structure, backend="gpu", strategy="levels", threads_per_cell=4)
    with pytest.raises(ValueError, match="multiple of 32"):
        hinesbatch.plan(structure, backend="gpu", strategy="fine", block_size=100)
    with pytest.raises(ValueError, match="threads_per_cell"):
        hinesbatch.plan(structure, backend="gpu", strategy="dhs", threads_per_cell=3)
    text = hinesbatch.plan(structure, backend="gpu", strategy="dhs", threads_per_cell=8).describe()
    assert "dhs schedule" in text and "k=8" in text


# -- timing (not a test) -------------------------------------------------------------------------
def _time(cp, structure, strategy, options, d, rhs, reps: int = 10) -> float:
    """Median of ``reps`` solves in ms (CUDA events; values refreshed outside the timed span)."""
    plan = hinesbatch.plan(structure, backend="gpu", strategy=strategy, check_pivots=False,
                           **options)
    d0, r0 = cp.asarray(d), cp.asarray(rhs)
    dw, rw = d0.copy(), r0.copy()
    plan.solve(dw, rw, overwrite=True, check_finite=False)  # compile, upload, scratch
    start, end = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(reps):
        dw[...] = d0
        rw[...] = r0
        start.record()
        plan.solve(dw, rw, overwrite=True, check_finite=False)
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    return float(np.median(times))


def timing_table(out_dir: str | None = None) -> str:
    import cupy as cp

    cells = real_cells()
    rows, table = [], {}
    runs = [("levels", {}), ("fine", {}), ("dhs", {}), ("interleaved", {}), ("tiled", {})]
    for n_cells in (100, 25600):
        pick = np.random.default_rng(n_cells).integers(0, len(cells), n_cells)
        structure = HinesStructure.concatenate([cells[i] for i in pick])
        d, rhs = hines_values(structure, np.random.default_rng(1), np.float64)
        for name, opts in runs:
            ms = _time(cp, structure, name, opts, d, rhs)
            table[f"{n_cells} {name}"] = ms
            rows.append(f"| {n_cells} | {structure.n_nodes} | {name} | {ms:.3f} |")
    text = ("fp64, cells drawn from the 17 repository morphologies (nseg=1), median of 10 solves "
            "(CUDA events, canonical order in and out, pivots not checked)\n\n"
            "| cells | nodes | strategy | ms |\n|---|---|---|---|\n" + "\n".join(rows))
    if out_dir:
        Path(out_dir, "multi_timing.md").write_text(text + "\n")
        Path(out_dir, "multi_timing.json").write_text(json.dumps(table, indent=1))
    return text


if __name__ == "__main__":
    print(timing_table(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OUT")))
