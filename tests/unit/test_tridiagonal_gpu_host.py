"""Host-side logic of the GPU tridiagonal backends, testable without a GPU or CuPy.

* option checking, ``auto``'s choices, the kernel instantiation lists;
* the cuSPARSE preparation (identity-row padding, corner entries) and the host pivot scan;
* the CUDA kernels themselves, run on the CPU: ``tridiagonal_emulator.cpp`` stands in for the
  CUDA features they use (threads, barriers, warp shuffles and ballots, cp.async) and the
  sources of ``kernels/tridiagonal_*.cu`` are compiled as host C++ with g++ (C++20), then
  checked against dense solves: every chunk configuration in both layouts with a persistent
  grid smaller than the tile count, segmented systems, Thomas with CP / NCP, the transposes,
  and the pivot records. Arithmetic is the host's (IEEE division instead of rcp.approx).
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from hinesbatch.solvers.gpu import kernel_build
from hinesbatch.solvers.gpu import tridiagonal_kernels as tk
from hinesbatch.solvers.gpu.cusparse import CusparseTridiagonal, first_bad_pivot, padded_copies
from hinesbatch.solvers.gpu.tridiagonal import (GpuTridiagonal, auto_native_variant,
                                                auto_segment_rows, auto_variant)
from hinesbatch.solvers.tridiagonal import TridiagonalShape, solve_tridiagonal

HERE = Path(__file__).resolve().parent
SHAPE = TridiagonalShape(64, 10)


@pytest.mark.parametrize(("options", "error", "match"), [
    ({"variant": "pcr"}, ValueError, "variant must be one of 'auto', 'chunked', 'thomas'"),
    ({"on_singular": "ignore"}, ValueError, "on_singular must be one of 'raise', 'report', 'pivot'"),
    ({"padding": "zero"}, ValueError, "padding must be one of 'cp', 'ncp'"),
    ({"padding": "ncp"}, ValueError, "padding applies to variant 'thomas' only"),
    ({"variant": "thomas", "segment_rows": 256}, ValueError, "segment_rows applies to variant 'chunked'"),
    ({"segment_rows": 300}, ValueError, r"segment_rows must be one of \(128, 256, 512\)"),
    ({"threads": 4}, TypeError, r"unknown option\(s\) threads; its options: variant, padding"),
])
def test_gpu_options_are_checked_before_any_device_work(options, error, match):
    with pytest.raises(error, match=match):
        GpuTridiagonal(SHAPE, dtype=np.float64, **options)


@pytest.mark.parametrize(("options", "error", "match"), [
    ({"routine": "dense"}, ValueError, "routine must be one of 'strided', 'interleaved'"),
    ({"routine": "strided", "algorithm": 1}, ValueError, "algorithm applies to routine='interleaved'"),
    ({"algorithm": 3}, ValueError, r"algorithm must be one of \(0, 1, 2\)"),
    ({"algorithm": True}, ValueError, r"algorithm must be one of \(0, 1, 2\)"),
    ({"algo": 1}, TypeError, r"unknown option\(s\) algo"),
])
def test_cusparse_options_are_checked(options, error, match):
    with pytest.raises(error, match=match):
        CusparseTridiagonal(SHAPE, dtype=np.float64, **options)


def test_auto_choices():
    assert auto_variant(512, 256000)[0] == "chunked"
    # interleaved values: cuThomasBatch for very large batches (measured on the H200)
    assert auto_native_variant(512, 256000) == "thomas"
    assert auto_native_variant(512, 25600) == "chunked"
    assert auto_native_variant(64, 256000) == "chunked"
    assert "auto" in auto_variant(8, 1)[1]
    # long systems: the longest segment that still gives ~16 groups per multiprocessor
    assert auto_segment_rows(8192, 20000, 132) == 512
    assert auto_segment_rows(8192, 200, 132) == 512      # 200 * 16 segments >= 16 * 132
    assert auto_segment_rows(8192, 100, 132) == 256      # 100 * 16 < 2112 <= 100 * 32
    assert auto_segment_rows(8192, 20, 132) == 128
    assert auto_segment_rows(1024, 1, 132) == 128        # nothing fills the device: shortest
    assert tk.chunk_config(1) == (16, 4, 4) and tk.chunk_config(17) == (32, 8, 4)
    assert tk.chunk_config(512) == (512, 32, 16)
    with pytest.raises(ValueError, match="need segments"):
        tk.chunk_config(513)


def test_every_configuration_is_instantiated_for_the_compile_cache():
    chunked = kernel_build.KERNELS["tridiagonal_chunked.cu"]
    for q, (g, l) in tk.CHUNK_CONFIGS.items():
        assert g * l == q
        for inter in ("false", "true"):
            assert f"tri_chunked<{{T}}, {g}, {l}, {inter}, false>" in chunked
            assert (f"tri_chunked<{{T}}, {g}, {l}, {inter}, true>" in chunked) == (q in tk.SEGMENT_ROWS)
    assert "tri_segments<{T}>" in chunked
    thomas = kernel_build.KERNELS["tridiagonal_thomas.cu"]
    for template in ("tri_thomas<{T}, true>", "tri_thomas<{T}, false>", "tri_interleave4<{T}>",
                     "tri_deinterleave<{T}>"):
        assert template in thomas
    source = (kernel_build.KERNEL_DIR / "tridiagonal_chunked.cu").read_text()
    assert f"#define TRI_THREADS {tk.THREADS}" in source


def test_padded_copies_solve_the_same_systems():
    """Identity rows past each length and zero corners leave the solution of the rows below
    each length unchanged (checked with dense solves), in both layouts; n < 3 is padded."""
    rng = np.random.default_rng(5)
    batch, n, rows = 6, 2, 5
    a, b, c, y = (rng.uniform(-1, 1, (batch, n)) for _ in range(4))
    b += 3.0
    m = np.array([2, 1, 0, 2, 1, 2])
    for interleaved in (False, True):
        dl, d, du, x = padded_copies(np, a, b, c, y, m[:, None], rows=rows, interleaved=interleaved)
        if interleaved:
            dl, d, du, x = (v.T for v in (dl, d, du, x))
        assert dl.shape == (batch, rows) and np.all(dl[:, 0] == 0)
        for k in range(batch):
            assert du[k, max(m[k], 1) - 1] == 0 and np.all(d[k, m[k]:] == 1)
            full = np.linalg.solve(np.diag(d[k]) + np.diag(dl[k, 1:], -1) + np.diag(du[k, :-1], 1), x[k])
            mk = m[k]
            if mk:
                A = np.diag(b[k, :mk]) + np.diag(a[k, 1:mk], -1) + np.diag(c[k, :mk - 1], 1)
                np.testing.assert_allclose(full[:mk], np.linalg.solve(A, y[k, :mk]), rtol=1e-12)
            np.testing.assert_array_equal(full[mk:], 0.0)


def test_first_bad_pivot_matches_the_serial_solver():
    rng = np.random.default_rng(6)
    for row in (0, 3, 9):
        dl, d, du = (rng.uniform(-1, 1, 10) for _ in range(3))
        d += 4.0
        d[row] = 0.0
        dl[row] = 0.0
        with pytest.raises(np.linalg.LinAlgError) as info:
            solve_tridiagonal(dl, d, du, np.ones(10), backend="serial")
        assert first_bad_pivot(dl, d, du, 10) == info.value.node == row
    assert first_bad_pivot(dl, d + 10.0, du, 10) == -1


# -- the kernels on the CPU --------------------------------------------------------------------
def _drop_function(text: str, signature: str) -> str:
    i = text.index(signature)
    depth = 0
    for k in range(text.index("{", i), len(text)):
        depth += {"{": 1, "}": -1}.get(text[k], 0)
        if depth == 0:
            return text[:i] + text[k + 1:]
    raise ValueError(signature)


def _host_source(name: str, *, with_header: bool) -> str:
    """kernels/<name> as host C++ for tridiagonal_emulator.cpp."""
    text = kernel_build.source_text(name) if with_header else \
        (kernel_build.KERNEL_DIR / name).read_text().replace('#include "tridiagonal_common.cuh"', "")
    for sig in ("__device__ __forceinline__ double hb_rcp(double x)",
                "__device__ __forceinline__ float hb_rcp(float x)",
                "template <typename T> __device__ __forceinline__ void hb_cp_async(",
                "__device__ __forceinline__ void hb_cp_async_commit()",
                "__device__ __forceinline__ void hb_cp_async_wait_all()",
                "__device__ __forceinline__ void hb_cp_async_wait_prior()"):
        if sig in text:
            text = _drop_function(text, sig)
    text = text.replace("extern __shared__ __align__(16) unsigned char tri_smem[];",
                        "unsigned char* tri_smem = emu_dynamic_smem();")
    text = re.sub(r"__shared__ T (\w+)\[32\]\[33\];", r"T (&\1)[32][33] = *emu_static_smem<T[32][33]>();", text)
    while "__launch_bounds__(" in text:  # with its balanced parentheses
        i = text.index("__launch_bounds__(")
        depth, k = 0, i + len("__launch_bounds__")
        while True:
            depth += {"(": 1, ")": -1}.get(text[k], 0)
            k += 1
            if depth == 0:
                break
        text = text[:i] + text[k:]
    for cuda, host in (("__global__", ""), ("__device__", ""), ("__forceinline__", "inline"),
                       ("__restrict__", "__restrict")):
        text = text.replace(cuda, host)
    assert "asm" not in text, "an inline-asm helper the emulator does not know"
    return text


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ is not on the PATH")
    work = tmp_path_factory.mktemp("tri_emulator")
    (work / "thomas_emu.h").write_text(_host_source("tridiagonal_thomas.cu", with_header=True))
    (work / "chunked_emu.h").write_text(_host_source("tridiagonal_chunked.cu", with_header=False))
    exe = work / "emulator"
    out = subprocess.run([gxx, "-std=c++20", "-O1", "-pthread", "-w", f"-I{work}",
                          str(HERE / "tridiagonal_emulator.cpp"), "-o", str(exe)],
                         capture_output=True, text=True, timeout=300)
    if out.returncode != 0 and "barrier" in out.stderr and "No such file" in out.stderr:
        pytest.skip("g++ has no C++20 <barrier>")
    assert out.returncode == 0, out.stderr

    def run(a, b, c, y, lengths, *, mode, q=0, segs=1, grid=1, interleaved=False):
        batch, n = y.shape
        arrays = [np.ascontiguousarray(v.T) if interleaved else v for v in (a, b, c, y)]
        head = np.array([n, batch, 1, int(interleaved), q, segs, grid, mode, y.dtype.itemsize],
                        np.int64)
        (work / "in.bin").write_bytes(head.tobytes() + b"".join(
            np.ascontiguousarray(v).tobytes() for v in arrays + [np.full_like(arrays[3], np.nan)])
            + np.asarray(lengths, np.int32).tobytes())
        r = subprocess.run([str(exe), str(work / "in.bin"), str(work / "out.bin")],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        raw = (work / "out.bin").read_bytes()
        size = n * batch * y.dtype.itemsize
        x = np.frombuffer(raw[:size], y.dtype).reshape(arrays[3].shape)
        status = np.frombuffer(raw[size:size + 4 * batch], np.uint32)
        flag = int(np.frombuffer(raw[size + 4 * batch:], np.uint64)[0])
        return (x.T if interleaved else x), status, flag

    return run


def _systems(rng, batch, n, dtype, lengths):
    a, c = rng.uniform(-1, 1, (2, batch, n))
    b = (np.abs(a) + np.abs(c)) * rng.uniform(1.05, 2, (batch, n)) * rng.choice([-1, 1], (batch, n))
    y = rng.standard_normal((batch, n))
    arrays = [v.astype(dtype) for v in (a, b, c, y)]
    for v in arrays:  # padding and corner entries are never read
        for k, m in enumerate(lengths):
            v[k, m:] = np.nan
    arrays[0][:, 0] = np.nan
    return arrays


def _dense(a, b, c, y, lengths):
    x = np.full(y.shape, np.nan)
    for k, m in enumerate(lengths):
        A = np.diag(b[k, :m].astype(float))
        if m > 1:
            A += np.diag(a[k, 1:m].astype(float), -1) + np.diag(c[k, :m - 1].astype(float), 1)
        x[k, :m] = np.linalg.solve(A, y[k, :m].astype(float)) if m else []
    return x


def _check(x, ref, lengths, tol):
    for k, m in enumerate(lengths):
        assert np.all(np.isnan(x[k, m:])), f"system {k}: rows past its length {m} were written"
        if m:
            err = np.max(np.abs(x[k, :m] - ref[k, :m])) / np.max(np.abs(ref[k, :m]))
            assert err < tol, f"system {k} (length {m}): error {err:.2e}"


TOL = {np.float32: 1e-4, np.float64: 1e-11}


@pytest.mark.nvcc
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float", "double"])
@pytest.mark.parametrize("q", sorted(tk.CHUNK_CONFIGS))
def test_chunked_kernel_on_the_cpu(emulator, q, dtype):
    rng = np.random.default_rng(q)
    n, batch = q - 3 if q > 16 else q, 3 * (128 // tk.CHUNK_CONFIGS[q][0]) + 1  # > 3 tiles
    lengths = rng.integers(0, n + 1, batch)
    lengths[:3] = (n, 1, 2)
    a, b, c, y = _systems(rng, batch, n, dtype, lengths)
    ref = _dense(a, b, c, y, lengths)
    for interleaved in (False, True):
        x, status, flag = emulator(a, b, c, y, lengths, mode=0, q=q, grid=2, interleaved=interleaved)
        _check(x, ref, lengths, TOL[dtype])
        assert flag == 2**64 - 1 and np.all(status == 0xFFFFFFFF)


@pytest.mark.nvcc
@pytest.mark.parametrize("q", [q if q == min(tk.SEGMENT_ROWS) else pytest.param(q, marks=pytest.mark.slow)
                               for q in tk.SEGMENT_ROWS])
def test_segmented_chunked_kernels_on_the_cpu(emulator, q):
    rng = np.random.default_rng(q + 1)
    n = 3 * q + 5
    lengths = np.array([n, q, q + 1, n - 1, 7])
    a, b, c, y = _systems(rng, 5, n, np.float64, lengths)
    ref = _dense(a, b, c, y, lengths)
    for interleaved in (False, True):
        x, _, flag = emulator(a, b, c, y, lengths, mode=0, q=q, segs=4, grid=3,
                              interleaved=interleaved)
        _check(x, ref, lengths, 1e-10)
        assert flag == 2**64 - 1


@pytest.mark.nvcc
@pytest.mark.parametrize("dtype", [np.float32, pytest.param(np.float64, marks=pytest.mark.slow)],
                         ids=["float", "double"])
def test_thomas_kernel_and_transposes_on_the_cpu(emulator, dtype):
    rng = np.random.default_rng(7)
    for n in (1, 2, 3, 40):
        lengths = rng.integers(0, n + 1, 300)
        a, b, c, y = _systems(rng, 300, n, dtype, lengths)
        ref = _dense(a, b, c, y, lengths)
        for mode, interleaved in ((1, True), (2, True), (3, False)):  # CP, NCP, CP flat
            x, _, _ = emulator(a, b, c, y, lengths, mode=mode, interleaved=interleaved)
            _check(x, ref, lengths, TOL[dtype])
        x, _, _ = emulator(a, b, c, y, lengths, mode=4)  # interleave4 then deinterleave of rhs
        for k, m in enumerate(lengths):
            np.testing.assert_array_equal(x[k, :m], y[k, :m])
            assert np.all(np.isnan(x[k, m:]))


@pytest.mark.nvcc
def test_pivot_records_on_the_cpu(emulator):
    """System 3's first pivot and system 4's last are zero: both flagged, the lowest reported
    with its row, their solutions not written; a zero pivot inside a segmented system too."""
    rng = np.random.default_rng(8)
    a, b, c, y = _systems(rng, 6, 6, np.float64, [6] * 6)
    b[3, 0] = 0.0
    b[4, 5] = a[4, 5] = 0.0
    for mode, q, interleaved in ((0, 16, False), (0, 16, True), (1, 0, True), (2, 0, True)):
        x, status, flag = emulator(a, b, c, y, [6] * 6, mode=mode, q=q, interleaved=interleaved)
        assert list(np.flatnonzero(status != 0xFFFFFFFF)) == [3, 4]
        assert list(status[[3, 4]]) == [0, 5] and (flag >> 32, flag & 0xFFFFFFFF) == (3, 0)
        if mode == 0:
            assert np.all(np.isnan(x[[3, 4]]))
    n = 700
    a, b, c, y = _systems(rng, 3, n, np.float64, [n] * 3)
    b[1, 300] = a[1, 300] = 0.0
    x, status, flag = emulator(a, b, c, y, [n] * 3, mode=0, q=256, segs=3, grid=2)
    assert list(status) == [0xFFFFFFFF, 300, 0xFFFFFFFF] and np.all(np.isnan(x[1]))
    _check(x[[0, 2]], _dense(a[[0, 2]], b[[0, 2]], c[[0, 2]], y[[0, 2]], [n, n]), [n, n], 1e-11)
