"""The multi-morphology GPU strategies (levels, fine, dhs) run on the CPU, without a GPU.

``multi_kernels_emulator.cpp`` stands in for the CUDA features of ``kernels/hines_multi.cu``
(threads, ``__syncthreads``, ``__syncwarp(mask)``, shared memory); the CUDA source itself is
compiled as host C++ by g++ (C++20) into a shared library. The launches come from the
strategy classes of :mod:`hinesbatch.solvers.gpu.strategies.multi_morphology` exactly as the
GPU backend makes them (templates, grids, blocks, argument kinds checked against each kernel's
signature), so these tests cover the planning, the launch sequences and the kernels together.

Checks: float64 results bit-identical to the schedule's Numba emulator (hence to the serial
solver on the schedule's tree) and within 1e-12 of the serial solve of the batch; float32
within 1e-5; kernels without barriers run with their threads in order and reversed (same
bits); scratch buffers poisoned with NaN, padding slots never written; two runs identical;
zero and non-finite pivots reported with the serial solver's cell and node.
"""
from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest
from solver_cases import REAL_DIR, real_names

import hinesbatch
from hinesbatch import HinesStructure, MonoBatch
from schedule_emulator import emulate
from hinesbatch.solvers.gpu import kernel_build
from hinesbatch.solvers.gpu.strategies import STRATEGIES
from hinesbatch.solvers.gpu.strategies import multi_morphology as multi
from hinesbatch.solvers.gpu.device_parts import split
from hinesbatch.tree import random_trees as rt

HERE = Path(__file__).resolve().parent
#: Kernels with barriers run as concurrent threads; the others in order and reversed.
BARRIERS = ("multi_fine", "multi_dhs", "multi_failure")
NO_FAILURE = 2**64 - 1


# -- the emulator ------------------------------------------------------------------------------
def _host_source() -> str:
    """kernels/hines_multi.cu as host C++ for multi_kernels_emulator.cpp."""
    text = (kernel_build.KERNEL_DIR / multi.SOURCE).read_text()
    text = text.replace('#include "hines_common.cuh"', "")
    text = re.sub(r"__launch_bounds__\(\w+\)", "", text)
    counter = iter(range(1000))
    text = re.sub(r"__shared__ ([\w ]+?) (\w+)\[(\w+)\];",
                  lambda m: f"{m[1]}* {m[2]} = emu_shared<{m[1]}>({m[3]}, {next(counter)});", text)
    text = re.sub(r"__shared__ ([\w ]+?) (\w+);",
                  lambda m: f"{m[1]}& {m[2]} = *emu_shared<{m[1]}>(1, {next(counter)});", text)
    for cuda, host in (("__global__", ""), ("__device__", ""), ("__forceinline__", "inline"),
                       ("__restrict__", "__restrict")):
        text = text.replace(cuda, host)
    assert "__shared__" not in text and "asm" not in text
    return text


class Emulator:
    """Runs launch lists ``(template, grid, block, args)`` of host arrays on the CPU."""

    def __init__(self, path: Path):
        self.lib = ctypes.CDLL(str(path))
        self.lib.emu_launch.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int,
                                        ctypes.POINTER(ctypes.c_longlong), ctypes.c_char_p,
                                        ctypes.c_int]
        self.lib.emu_launch.restype = ctypes.c_int

    @staticmethod
    def _encode(args, dtype):
        codes, values = [], []
        for a in args:
            if isinstance(a, np.ndarray):
                assert a.flags.c_contiguous
                kinds = {np.dtype(dtype): "T", np.dtype(np.int32): "i", np.dtype(np.int64): "q",
                         np.dtype(np.uint64): "Q"}
                codes.append(kinds.get(a.dtype, "?"))
                values.append(a.ctypes.data)
            elif type(a) is np.uint64 and a == 0:
                codes.append("0")
                values.append(0)
            elif type(a) in (np.int32, np.int64):
                codes.append("n" if type(a) is np.int32 else "N")
                values.append(int(a))
            else:
                raise TypeError(f"argument {a!r}: CuPy would not pass it as the kernel expects")
        return "".join(codes), (ctypes.c_longlong * len(values))(*values)

    def run(self, launches, dtype, *, reverse: bool = False) -> None:
        ctype = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}[np.dtype(dtype)]
        for template, grid, block, args in launches:
            assert len(grid) == 1 and len(block) == 1 and block[0] % 32 == 0
            name = template.format(T=ctype)
            mode = 0 if name.startswith(BARRIERS) else (2 if reverse else 1)
            codes, argv = self._encode(args, dtype)
            rc = self.lib.emu_launch(name.encode(), grid[0], block[0], argv, codes.encode(),
                                     mode)
            assert rc == 0, f"{name}: {'unknown kernel' if rc == 1 else 'bad arguments ' + codes}"


@pytest.fixture(scope="module")
def emulator(tmp_path_factory) -> Emulator:
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ is not on the PATH")
    work = tmp_path_factory.mktemp("multi_emulator")
    (work / "multi_emu.h").write_text(_host_source())
    lib = work / "multi_emulator.so"
    out = subprocess.run([gxx, "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", "-w",
                          f"-I{work}", str(HERE / "multi_kernels_emulator.cpp"), "-o", str(lib)],
                         capture_output=True, text=True, timeout=300)
    if out.returncode != 0 and "barrier" in out.stderr and "No such file" in out.stderr:
        pytest.skip("g++ has no C++20 <barrier>")
    assert out.returncode == 0, out.stderr
    return Emulator(lib)


# -- running a strategy ----------------------------------------------------------------------
@pytest.fixture(autouse=True)
def _no_device(monkeypatch):
    """DHS asks the device for its resident threads: an H200's (132 SMs)."""
    monkeypatch.setattr(multi, "_resident_threads", lambda device: 132 * multi.THREADS_PER_SM)


def make(name: str, structure, dtype, **options):
    part = split(structure, 1)[0]
    opts = dict(options)
    strategy = STRATEGIES[name](part, np.dtype(dtype), 0, opts, 1 << 62)
    assert not opts, f"options left over: {opts}"
    return strategy


class Run:
    """One strategy's device state on the host: arrays, scratch, failure records."""

    def __init__(self, emulator: Emulator, strategy):
        self.em, self.s = emulator, strategy
        self.dev = {k: np.ascontiguousarray(v) for k, v in strategy._host_arrays().items()}
        n, dt = strategy.n_slots, strategy.dtype
        self.scratch = (np.full(n, np.nan, dt), np.full(n, np.nan, dt))
        self.flag = np.full(1, NO_FAILURE, np.uint64)
        self.values = np.full(strategy.part.n_cells, np.nan, dt)

    def solve(self, d, rhs, *, reverse: bool = False) -> np.ndarray:
        """Canonical path; returns x (``d`` must stay as given)."""
        dt = self.s.dtype
        d, x = np.array(d, dt), np.array(rhs, dt)
        d0 = d.copy()
        self.flag[0] = NO_FAILURE  # as the backend does before a checked solve
        self.em.run(self.s.canonical_launches(self.dev, d, x, (self.flag, self.values),
                                              self.scratch), dt, reverse=reverse)
        assert np.array_equal(d, d0, equal_nan=True), "the canonical d was written"
        return x

    def failure(self):
        key = int(self.flag[0])
        if key == NO_FAILURE:
            return None
        cell = key >> 32
        return cell, key & 0xFFFFFFFF, float(self.values[cell])


# -- batches -----------------------------------------------------------------------------------
def real_cells() -> list[HinesStructure]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [hinesbatch.discretize(os.path.join(REAL_DIR, n), nseg=1,
                                      min_radius=0.01).hines_structure() for n in real_names()]


def stress_cells(symmetric: bool) -> list[HinesStructure]:
    rng = np.random.default_rng(50)
    cells = [rt.random_tree(int(n), rng=rng, branch_probability=p, symmetric=symmetric)
             for p in (0.1, 0.5, 0.9) for n in rng.integers(50, 500, 2)]
    return cells + [rt.star(5000, rng=51, symmetric=symmetric),  # 4999 branches on one level
                    rt.chain(1, rng=52, symmetric=symmetric),
                    rt.chain(2, rng=53, symmetric=symmetric),
                    rt.chain(700, rng=54, symmetric=symmetric),
                    rt.random_tree(900, rng=55, branch_probability=0.02, symmetric=symmetric)]


@pytest.fixture(scope="module")
def batches() -> dict:
    real = real_cells()
    pool = real + stress_cells(True)
    order = np.random.default_rng(56).permutation(len(pool))
    return {
        "mixed": HinesStructure.concatenate([pool[i] for i in order]),
        "nonsymmetric": HinesStructure.concatenate(stress_cells(False)[::-1]),
        "mono": MonoBatch(real[real_names().index("morph_ca1_n120.swc")], 5),
        "tiny": HinesStructure.concatenate([rt.chain(1 + i % 2, rng=i) for i in range(7)]),
    }


def serial(structure, d, rhs) -> np.ndarray:
    return hinesbatch.plan(structure, backend="serial").solve(
        np.asarray(d, np.float64), np.asarray(rhs, np.float64), check_finite=False)


CONFIGS = {
    "levels": ("levels", {}),
    "levels-reroot-split-cost": ("levels", {"reroot": True, "split": "cost", "threads": 64}),
    "fine": ("fine", {}),
    "fine-32-reroot": ("fine", {"block_size": 32, "reroot": True}),
    "fine-256-split-mean": ("fine", {"block_size": 256, "split": "mean"}),
    "dhs": ("dhs", {}),
    "dhs-1": ("dhs", {"threads_per_cell": 1}),
    "dhs-32-reroot": ("dhs", {"threads_per_cell": 32, "reroot": True, "threads": 64}),
}


@pytest.mark.nvcc
@pytest.mark.parametrize("batch", ["mixed", "nonsymmetric", "mono", "tiny"])
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_float64_is_the_schedule_bit_for_bit(emulator, batches, config, batch):
    name, options = CONFIGS[config]
    structure = batches[batch]
    strategy = make(name, structure, np.float64, **options)
    d, rhs = rt.diagonally_dominant(structure, rng=60)
    run = Run(emulator, strategy)
    x = run.solve(d, rhs)
    assert run.failure() is None
    np.testing.assert_array_equal(x, emulate(strategy.schedule, d, rhs))
    ref = serial(structure, d, rhs)
    assert np.max(np.abs(x - ref)) <= 1e-12 * np.max(np.abs(ref))
    np.testing.assert_array_equal(run.solve(d, rhs, reverse=True), x)  # threads reversed
    np.testing.assert_array_equal(run.solve(d, rhs), x)  # run after run


@pytest.mark.nvcc
@pytest.mark.parametrize("config", ["levels", "fine", "dhs", "dhs-32-reroot"])
def test_float32(emulator, batches, config):
    name, options = CONFIGS[config]
    structure = batches["mixed"]
    d, rhs = rt.diagonally_dominant(structure, rng=61, dtype=np.float32)
    x = Run(emulator, make(name, structure, np.float32, **options)).solve(d, rhs)
    assert x.dtype == np.float32
    ref = serial(structure, d, rhs)
    idx = structure.cell_offsets[:-1]
    err = np.sqrt(np.add.reduceat((x - ref) ** 2, idx) / np.add.reduceat(ref ** 2, idx))
    assert np.max(err) <= 1e-5, f"relative error {np.max(err):.2e}"


@pytest.mark.nvcc
@pytest.mark.parametrize("config", ["levels", "fine-32-reroot", "dhs"])
def test_native_slots_leave_padding_alone(emulator, batches, config):
    name, options = CONFIGS[config]
    structure = batches["mixed"]
    strategy = make(name, structure, np.float64, **options)
    s = strategy.schedule
    d, rhs = rt.diagonally_dominant(structure, rng=62)
    run = Run(emulator, strategy)
    pd, pr = s.pack(d, fill=np.nan), s.pack(rhs, fill=np.nan)
    padding = s.slot_node < 0
    emulator.run(strategy.solve_launches(run.dev, pd, pr, (run.flag, run.values)), np.float64)
    assert np.all(np.isnan(pd[padding])) and np.all(np.isnan(pr[padding]))
    np.testing.assert_array_equal(s.unpack(pr), emulate(s, d, rhs))
    assert run.failure() is None


def _leaf(structure, cell: int) -> int:
    """A leaf of ``cell`` (local index): its pivot is its own d."""
    c = structure.cell(cell) if isinstance(structure, HinesStructure) else structure.cell
    has_child = np.zeros(c.n_nodes, bool)
    has_child[c.parent[c.parent >= 0]] = True
    return int(np.flatnonzero(~has_child)[-1])


@pytest.mark.nvcc
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_singular_pivots_name_cell_and_node(emulator, batches, config):
    """Zero leaf pivots in two cells: the lower cell is reported with the leaf, as by the
    serial solver; NaN inputs fail too; an infinite leaf pivot (which does not spread: its
    factor is 0) is caught where it is; the next good solve reports nothing."""
    name, options = CONFIGS[config]
    for structure in (batches["mixed"], batches["mono"]):
        strategy = make(name, structure, np.float64, **options)
        run = Run(emulator, strategy)
        d, rhs = rt.diagonally_dominant(structure, rng=63)
        flat = d.reshape(-1)
        offsets = (structure.cell_offsets if isinstance(structure, HinesStructure)
                   else np.arange(structure.n_cells + 1) * structure.nodes_per_cell)
        cells = (structure.n_cells - 1, 2)
        for c in cells:
            flat[offsets[c] + _leaf(structure, c)] = 0.0
        run.solve(d, rhs)
        with pytest.raises(hinesbatch.SingularSystemError) as info:
            serial(structure, d, rhs)
        assert run.failure() == (info.value.cell, info.value.node, 0.0) == (
            2, _leaf(structure, 2), 0.0)
        run.solve(np.full_like(d, np.nan), rhs)
        assert run.failure()[0] == 0
        d, rhs = rt.diagonally_dominant(structure, rng=65)
        d.reshape(-1)[offsets[1] + _leaf(structure, 1)] = np.inf  # caught at the leaf only
        run.solve(d, rhs)
        with pytest.raises(hinesbatch.SingularSystemError) as info:
            serial(structure, d, rhs)
        assert run.failure() == (info.value.cell, info.value.node, np.inf) == (
            1, _leaf(structure, 1), np.inf)
        run.solve(*rt.diagonally_dominant(structure, rng=64))
        assert run.failure() is None


def test_launch_sequences():
    """levels: 2 x levels - 1 launches, deepest level first, the root level's both sweeps
    in one; fine: one launch of whole warps; dhs: one launch per threads-per-cell value."""
    s = HinesStructure(parent=[-1, 0, 1, 1, -1, 4, -1, 6, 6], u=[0, -1, -1, -2, 0, -1, 0, -1, -1])
    lv = make("levels", s, np.float64)
    seq = lv.solve_launches(lv._host_arrays(), None, None, (None, None))
    assert [t for t, *_ in seq] == ["multi_levels<{T}, 0>", "multi_levels<{T}, 2>",
                                    "multi_levels<{T}, 1>", "multi_failure<{T}>"]
    assert [(int(a[7]), int(a[8])) for *_, a in seq[:3]] == [(3, 7), (0, 3), (3, 7)]
    fine = make("fine", s, np.float64, block_size=64)
    seq = fine.solve_launches(fine._host_arrays(), None, None, (None, None))
    assert [(t, g, b) for t, g, b, _ in seq[:1]] == [("multi_fine<{T}>", (1,), (32,))]
    mixed = HinesStructure.concatenate([rt.chain(3), rt.star(200)])
    dhs = make("dhs", mixed, np.float64)
    ks = dhs.schedule.thread_values.tolist()
    seq = dhs.solve_launches(dhs._host_arrays(), None, None, (None, None))
    assert len(ks) == 2 and [int(a[10]) for *_, a in seq[:-1]] == [k.bit_length() - 1 for k in ks]


@pytest.mark.parametrize(("name", "options", "error", "match"), [
    ("levels", {"threads": 100}, ValueError, "multiple of 32"),
    ("fine", {"block_size": 2048}, ValueError, "multiple of 32 from 32 to 1024"),
    ("dhs", {"threads_per_cell": 5}, ValueError,
     r"threads_per_cell must be one of \(1, 2, 4, 8, 16, 32\), got 5"),
    ("dhs", {"reroot": 1}, TypeError, "reroot must be a bool, got int"),
    ("levels", {"split": "median"}, ValueError, "median"),
])
def test_options_are_checked(name, options, error, match):
    with pytest.raises(error, match=match):
        make(name, HinesStructure.concatenate([rt.chain(5), rt.star(4)]), np.float64, **options)


def test_registered_and_instantiated():
    from hinesbatch.solvers.gpu.backend import _STRATEGY_OPTIONS
    
    assert {"levels", "fine", "dhs"} <= set(STRATEGIES)
    assert {"reroot", "split", "threads_per_cell", "block_size"} <= set(_STRATEGY_OPTIONS)
    source = (kernel_build.KERNEL_DIR / multi.SOURCE).read_text()
    assert f"#define HBM_FIND_THREADS {multi.FIND_THREADS}" in source
    assert f"#define HBM_MAX_THREADS {multi.MAX_THREADS}" in source


class _FakeCupy:
    """Just what multi.py's device entry points use of CuPy, on NumPy arrays; fresh arrays
    from ``empty`` hold NaN."""

    class cuda:  # noqa: N801
        class Device:
            def __init__(self, device=0):
                pass

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

    empty = staticmethod(lambda shape, dtype=np.float64: np.full(shape, np.nan, dtype))
    zeros = staticmethod(np.zeros)
    asarray = staticmethod(np.ascontiguousarray)


@pytest.mark.nvcc
@pytest.mark.parametrize("config", ["levels", "fine-32-reroot", "dhs"])
def test_device_entry_points_on_a_fake_cupy(emulator, batches, monkeypatch, config):
    """solve_canonical (cached launches), to_native / solve_native / from_native and the
    kernel lookup of multi.py, with CuPy replaced by NumPy and the kernels by the emulator."""
    import contextlib

    from hinesbatch.solvers.gpu.strategies import base

    class Fn:
        max_threads_per_block = 1024

        def __init__(self, template, dtype):
            self.template, self.dtype = template, dtype

        def __call__(self, grid, block, args, shared_mem=0):
            emulator.run([(self.template, grid, block, args)], self.dtype)

    looked_up = []

    def kernel(device, source, template, dtype):
        assert source == multi.SOURCE and template in kernel_build.KERNELS[source]
        looked_up.append(template)
        return Fn(template, dtype)

    monkeypatch.setattr(multi, "cupy_module", lambda: _FakeCupy)
    monkeypatch.setattr(base, "cupy_module", lambda: _FakeCupy)
    monkeypatch.setattr(multi, "kernel", kernel)
    name, options = CONFIGS[config]
    structure = batches["mixed"]
    strategy = make(name, structure, np.float64, **options)
    d, rhs = rt.diagonally_dominant(structure, rng=66)
    ref = emulate(strategy.schedule, d, rhs)
    pivots = (np.full(1, NO_FAILURE, np.uint64), np.full(structure.n_cells, np.nan))
    stream = contextlib.nullcontext()
    for _ in range(2):  # the second solve reuses the cached launches
        x = rhs.copy()
        strategy.solve_canonical(d.copy(), x, pivots, stream)
        np.testing.assert_array_equal(x, ref)
    assert len(set(looked_up)) == len(looked_up)  # each kernel looked up once
    dn, rn = strategy.to_native(d, stream), strategy.to_native(rhs, stream)
    assert dn.shape == strategy.native_shape() and np.array_equal(strategy.from_native(dn, stream), d)
    strategy.solve_native(dn, rn, pivots, stream)
    np.testing.assert_array_equal(strategy.from_native(rn, stream), ref)
    assert pivots[0][0] == NO_FAILURE
    bad = d.copy()
    bad[structure.cell_offsets[3]] = np.nan  # a root: its own pivot
    strategy.solve_canonical(bad, rhs.copy(), pivots, stream)
    assert (int(pivots[0][0]) >> 32, int(pivots[0][0]) & 0xFFFFFFFF) == (3, 0)
