"""The GPU backend's plumbing: chunks under max_bytes (the plan's memory, and NumPy values
streamed through the device), several devices, array kinds, the native
layout entry points, singular pivots, the auto choice and option errors."""
from __future__ import annotations

import numpy as np
import pytest

import hinesbatch
from hinesbatch.errors import SingularSystemError
from hinesbatch.solvers.gpu import layout_solver
from hinesbatch.tree import random_trees as rt
from hinesbatch.tree.structure import MonoBatch

from gpu_cases import TOLERANCE, cell_rel_error, hines_values, real_cell, serial_reference

pytestmark = pytest.mark.gpu

STRATEGIES = ("flat", "interleaved", "block-interleaved", "block-shared", "block-shared-factors",
              "block-shared-factors-lanes", "tiled", "grouped")


def _named(strategy: str, kind: str) -> dict:
    """plan options of a STRATEGIES entry for a batch of ``kind`` ("block-shared-factors":
    keep="factors"; "-lanes": with 8 lanes per cell, which only shared structures take)."""
    if strategy.startswith("block-shared-factors"):
        lanes = {"lanes": 8} if strategy.endswith("-lanes") and kind == "mono" else {}
        return {"strategy": "block-shared", "keep": "factors", **lanes}
    return {"strategy": strategy}


def batches(rng):
    cell = rt.random_tree(int(rng.integers(40, 120)), rng=rng)
    yield "mono", MonoBatch(cell, int(rng.integers(300, 600)))
    yield "multi", rt.random_batch(int(rng.integers(300, 600)), rng=rng, max_nodes=70)


def solve(structure, d, rhs, cp, **options):
    plan = hinesbatch.plan(structure, backend="gpu", **options)
    return plan, plan.solve(cp.asarray(d), cp.asarray(rhs)).get()


@pytest.mark.parametrize("strategy,keep", (("interleaved", None), ("block-interleaved", None),
                                           ("block-shared", "rhs"), ("block-shared", "factors")))
def test_chunks_under_max_bytes_match_one_pass(strategy, keep, seed, cp):
    rng = np.random.default_rng(seed)
    for kind, structure in batches(rng):
        d, rhs = hines_values(structure, rng, np.float64)
        opts = {"bs": 32} if strategy != "interleaved" else {}
        if keep is not None:
            opts["keep"] = keep
        whole_plan, whole = solve(structure, d, rhs, cp, strategy=strategy, **opts)
        s = layout_solver(whole_plan).strategies[0]
        per_cell = 2 * s.part.n * 8
        cap = s.structure_bytes() + per_cell * 96  # room for 96 cells (3 blocks of 32)
        plan, chunked = solve(structure, d, rhs, cp, strategy=strategy, max_bytes=cap, **opts)
        assert "chunks of" in plan.describe(), plan.describe()
        assert np.array_equal(chunked, whole), f"{kind} seed {seed}"
        assert cell_rel_error(structure, chunked, serial_reference(structure, d, rhs)) < 1e-12


def test_max_bytes_too_small_is_a_clear_error(cp):
    structure = MonoBatch(rt.chain(100, rng=0), 50)
    with pytest.raises(ValueError, match="max_bytes"):
        hinesbatch.plan(structure, backend="gpu", strategy="block-interleaved", bs=64, max_bytes=1000)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_device_lists_give_the_single_device_result(strategy, seed, cp):
    rng = np.random.default_rng(seed)
    for kind, structure in batches(rng):
        d, rhs = hines_values(structure, rng, np.float64)
        _, one = solve(structure, d, rhs, cp, **_named(strategy, kind))
        for devices in ([0], [0, 0], "all"):
            plan, many = solve(structure, d, rhs, cp, devices=devices, **_named(strategy, kind))
            assert np.array_equal(many, one), f"{kind} devices={devices} seed {seed}"
            assert "devices" in plan.describe()


def test_multi_device_native_layout_and_singular(seed, cp):
    rng = np.random.default_rng(seed)
    structure = MonoBatch(rt.random_tree(60, rng=rng), 301)
    d, rhs = hines_values(structure, rng, np.float64)
    plan = hinesbatch.plan(structure, backend="gpu", strategy="interleaved", devices=[0, 0])
    dn, rn = plan.to_layout(cp.asarray(d)), plan.to_layout(cp.asarray(rhs))
    assert isinstance(dn, list) and len(dn) == 2
    x = plan.from_layout(plan.solve_layout(dn, rn)).get()
    assert cell_rel_error(structure, x, serial_reference(structure, d, rhs)) < 1e-12
    d[250, 59] = 0.0  # the last node has no children: its pivot is its d
    with pytest.raises(SingularSystemError) as err:
        plan.solve(d, rhs)
    assert (err.value.cell, err.value.node) == (250, 59)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_native_layout_round_trip(strategy, seed, cp):
    rng = np.random.default_rng(seed)
    for kind, structure in batches(rng):
        for dtype in (np.float32, np.float64):
            d, rhs = hines_values(structure, rng, dtype)
            plan, x = solve(structure, d, rhs, cp, **_named(strategy, kind))
            impl = layout_solver(plan, dtype)
            dn, rn = plan.to_layout(cp.asarray(d)), plan.to_layout(rhs)  # CuPy or NumPy in
            assert tuple(rn.shape) == impl.layout_shapes()[0] and rn.dtype == dtype
            assert np.array_equal(rn.get(), impl.to_layout(cp.asarray(rhs)).get())
            out = plan.solve_layout(dn, rn)
            assert out is rn
            assert np.array_equal(plan.from_layout(rn).get(), x), f"{kind} {dtype} seed {seed}"


def test_numpy_in_numpy_out_and_cupy_in_cupy_out(seed, cp):
    rng = np.random.default_rng(seed)
    structure = MonoBatch(real_cell("morph_ca1_n120.swc", 1), 100)
    d, rhs = hines_values(structure, rng, np.float64)
    d0, rhs0 = d.copy(), rhs.copy()
    plan = hinesbatch.plan(structure, backend="gpu")
    x = plan.solve(d, rhs)
    assert type(x) is np.ndarray
    assert np.array_equal(d, d0) and np.array_equal(rhs, rhs0)
    xc = plan.solve(cp.asarray(d), cp.asarray(rhs))
    assert isinstance(xc, cp.ndarray)
    assert np.array_equal(xc.get(), x)
    assert cell_rel_error(structure, x, serial_reference(structure, d, rhs)) < 1e-12


def _leaves(parent):
    return np.setdiff1d(np.arange(parent.size), parent[parent >= 0])


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_singular_pivot_names_the_lowest_cell_like_serial(strategy, seed, cp):
    rng = np.random.default_rng(seed)
    for kind, structure in batches(rng):
        d, rhs = hines_values(structure, rng, np.float64)
        cells = np.sort(rng.choice(structure.n_cells, 3, replace=False))
        for c in cells:  # zero the pivot of a random leaf (a leaf's pivot is its d)
            if kind == "mono":
                d[c, rng.choice(_leaves(structure.cell.parent))] = 0.0
            else:
                d[structure.cell_offsets[c] + rng.choice(_leaves(structure.cell(int(c)).parent))] = 0.0
        with pytest.raises(SingularSystemError) as cpu:
            hinesbatch.plan(structure, backend="serial").solve(d, rhs)
        plan = hinesbatch.plan(structure, backend="gpu", **_named(strategy, kind))
        with pytest.raises(SingularSystemError) as gpu:
            plan.solve(cp.asarray(d), cp.asarray(rhs))
        assert (gpu.value.cell, gpu.value.node) == (cpu.value.cell, cpu.value.node)
        assert gpu.value.cell == cells[0], f"{kind} seed {seed}"
        unchecked = hinesbatch.plan(structure, backend="gpu", check_pivots=False, **_named(strategy, kind))
        x = unchecked.solve(cp.asarray(d), cp.asarray(rhs)).get()
        assert not np.all(np.isfinite(x))
        assert "pivots not checked" in unchecked.describe()


def test_infinite_pivot_is_reported(cp):
    structure = MonoBatch(rt.chain(10, rng=3), 8)
    d, rhs = hines_values(structure, np.random.default_rng(3), np.float64)
    d[5, 9] = np.inf
    with pytest.raises(SingularSystemError) as err:
        hinesbatch.plan(structure, backend="gpu").solve(cp.asarray(d), cp.asarray(rhs),
                                                        check_finite=False)
    assert (err.value.cell, err.value.node) == (5, 9)


def test_auto_prefers_tiled_and_falls_back_when_a_cell_does_not_fit(seed, cp):
    rng = np.random.default_rng(seed)
    small = MonoBatch(rt.random_tree(100, rng=rng), 64)
    assert "strategy tiled (auto" in hinesbatch.plan(small, backend="gpu").describe()
    big = MonoBatch(rt.chain(20000, rng=rng), 40)  # 2 * 20009 * 8 bytes > a block's smem
    plan = hinesbatch.plan(big, backend="gpu")
    assert "strategy interleaved (auto" in plan.describe(), plan.describe()
    d, rhs = hines_values(big, rng, np.float64)
    x = plan.solve(cp.asarray(d), cp.asarray(rhs)).get()
    assert cell_rel_error(big, x, serial_reference(big, d, rhs)) < TOLERANCE[np.dtype(np.float64)]
    with pytest.raises(ValueError, match="shared memory"):
        hinesbatch.plan(big, backend="gpu", strategy="tiled")


def test_option_errors(cp):
    structure = MonoBatch(rt.chain(10, rng=0), 4)
    with pytest.raises(ValueError, match="valid strategies"):
        hinesbatch.plan(structure, backend="gpu", strategy="fast")
    with pytest.raises(TypeError, match="unknown option"):
        hinesbatch.plan(structure, backend="gpu", blocksize=3)
    with pytest.raises(TypeError, match="do not apply"):
        hinesbatch.plan(structure, backend="gpu", strategy="flat", bs=32)
    with pytest.raises(ValueError, match="does not exist"):
        hinesbatch.plan(structure, backend="gpu", devices=[99])
    with pytest.raises(ValueError, match="batch"):
        hinesbatch.plan(structure, backend="gpu", strategy="tiled", batch=3)
    with pytest.raises(ValueError, match=r"buffers must be one of \(1, 2\)"):
        hinesbatch.plan(structure, backend="gpu", strategy="tiled", buffers=3)
    with pytest.raises(ValueError, match="MonoBatch"):
        hinesbatch.plan(structure.expand(), backend="gpu", strategy="tiled", buffers=2)
    with pytest.raises(ValueError, match="keep must be one of 'rhs', 'factors'"):
        hinesbatch.plan(structure, backend="gpu", strategy="block-shared", keep="d")
    with pytest.raises(ValueError, match="slots applies to keep='factors' only"):
        hinesbatch.plan(structure, backend="gpu", strategy="block-shared", slots=2)
    with pytest.raises(ValueError, match=r"slots must be one of \(1, 2, 4, 8\)"):
        hinesbatch.plan(structure, backend="gpu", strategy="block-shared", keep="factors", slots=3)
    with pytest.raises(ValueError, match=r"one of \(1,\) for per-cell structures"):
        hinesbatch.plan(structure.expand(), backend="gpu", strategy="block-shared",
                        keep="factors", slots=4)
    with pytest.raises(ValueError, match="runs at most 256"):
        hinesbatch.plan(structure, backend="gpu", strategy="block-shared", keep="factors",
                        bs=512)
    with pytest.raises(ValueError, match="lanes applies to keep='factors' only"):
        hinesbatch.plan(structure, backend="gpu", strategy="block-shared", lanes=2)
    with pytest.raises(ValueError, match=r"lanes must be one of \(1, 2, 4, 8\)"):
        hinesbatch.plan(structure, backend="gpu", strategy="block-shared", keep="factors",
                        lanes=3)
    with pytest.raises(ValueError, match=r"lanes must be one of \(1,\) for per-cell"):
        hinesbatch.plan(structure.expand(), backend="gpu", strategy="block-shared",
                        keep="factors", lanes=2)
    with pytest.raises(ValueError, match=r"slots must be one of \(8, 16\) .* lanes=8"):
        hinesbatch.plan(structure, backend="gpu", strategy="block-shared", keep="factors",
                        lanes=8, slots=4)
    with pytest.raises(ValueError, match="must be a multiple of 4 with lanes=8"):
        hinesbatch.plan(structure, backend="gpu", strategy="block-shared", keep="factors",
                        lanes=8, bs=6)
    with pytest.raises(ValueError, match="runs at most 512"):
        hinesbatch.plan(structure, backend="gpu", strategy="block-shared", keep="factors",
                        lanes=8, bs=128)


def test_empty_batch(cp):
    structure = MonoBatch(rt.chain(5, rng=0), 0)
    x = hinesbatch.plan(structure, backend="gpu").solve(cp.zeros((0, 5)), cp.zeros((0, 5)))
    assert x.shape == (0, 5)


def test_overwrite_solves_in_rhs_for_cupy_and_numpy(seed, cp):
    """``overwrite=True`` leaves the solution in ``rhs`` on the GPU as on the CPU: in place for
    CuPy (the time loop's fast path, with ``check_finite=False``), copied back for NumPy."""
    rng = np.random.default_rng(seed)
    structure = MonoBatch(real_cell("c91662.swc", 1), 256)
    d, rhs = hines_values(structure, rng, np.float64)
    ref = serial_reference(structure, d, rhs)
    plan = hinesbatch.plan(structure, backend="gpu")
    dc, rc = cp.asarray(d), cp.asarray(rhs)
    x = plan.solve(dc, rc, overwrite=True, check_finite=False)
    assert x is rc
    assert cell_rel_error(structure, x.get(), ref) < 1e-12
    r_host = rhs.copy()
    y = plan.solve(d.copy(), r_host, overwrite=True)
    assert y is r_host and cell_rel_error(structure, y, ref) < 1e-12


def _streaming_cap(structure, dtype, strategy):
    """A ``max_bytes`` that fits the plan but leaves room for about a fifth of the values."""
    whole = layout_solver(hinesbatch.plan(structure, backend="gpu", strategy=strategy), dtype)
    own = sum(s.structure_bytes() + s.scratch_bytes() for s in whole.strategies)
    return own + 2 * structure.n_nodes * np.dtype(dtype).itemsize // 5


# A plan always builds its float64 backend (option checks), so the cap must fit that one's
# structure too: for tiled in float32 that leaves no room for >= 4 chunks of a per-cell batch.
STREAM_CASES = (("tiled", np.float64), ("interleaved", np.float32), ("interleaved", np.float64))


@pytest.mark.parametrize("strategy, dtype", STREAM_CASES)
def test_numpy_batches_over_max_bytes_stream_in_chunks(strategy, dtype, seed, cp):
    """NumPy values larger than ``max_bytes`` go through the device in chunks of whole cells:
    bitwise the uncapped result, the serial one within tolerance, inputs untouched."""
    rng = np.random.default_rng(seed)
    for kind, structure in batches(rng):
        d, rhs = hines_values(structure, rng, dtype)
        d0, rhs0 = d.copy(), rhs.copy()
        whole = hinesbatch.plan(structure, backend="gpu", strategy=strategy).solve(d, rhs)
        cap = _streaming_cap(structure, dtype, strategy)
        plan = hinesbatch.plan(structure, backend="gpu", strategy=strategy, max_bytes=cap)
        impl = layout_solver(plan, dtype)
        assert impl.streams_host()
        assert len(impl.host_chunks()) >= 4, kind
        x = plan.solve(d, rhs)
        assert type(x) is np.ndarray and x.dtype == dtype
        assert np.array_equal(d, d0) and np.array_equal(rhs, rhs0)
        assert np.array_equal(x, whole), f"{kind} {strategy} seed {seed}"
        ref = serial_reference(structure, d, rhs)
        assert cell_rel_error(structure, x, ref) < TOLERANCE[np.dtype(dtype)]
        r = rhs.copy()
        y = plan.solve(d, r, overwrite=True)
        assert y is r and np.array_equal(r, whole)


@pytest.mark.parametrize("strategy, dtype", (("tiled", np.float64), ("interleaved", np.float32)))
def test_streamed_singular_pivot_names_the_global_cell(strategy, dtype, seed, cp):
    rng = np.random.default_rng(seed)
    for kind, structure in batches(rng):
        d, rhs = hines_values(structure, rng, dtype)
        plan = hinesbatch.plan(structure, backend="gpu", strategy=strategy,
                               max_bytes=_streaming_cap(structure, dtype, strategy))
        ranges = layout_solver(plan, dtype).host_chunks()
        assert len(ranges) >= 4, kind
        a, b = ranges[-1]
        c = int(rng.integers(a, b))  # a cell of the last chunk
        if kind == "mono":
            d[c, rng.choice(_leaves(structure.cell.parent))] = 0.0
        else:
            d[structure.cell_offsets[c] + rng.choice(_leaves(structure.cell(c).parent))] = 0.0
        with pytest.raises(SingularSystemError) as cpu:
            hinesbatch.plan(structure, backend="serial").solve(d, rhs)
        with pytest.raises(SingularSystemError) as gpu:
            plan.solve(d, rhs)
        assert (gpu.value.cell, gpu.value.node) == (cpu.value.cell, cpu.value.node)
        assert gpu.value.cell == c and f"at cell {c}, node {cpu.value.node}" in str(gpu.value)
        d[...] = np.nan  # a non-finite input is named at its global place before any transfer
        with pytest.raises(ValueError, match="d must be finite"):
            plan.solve(d, rhs)
