"""The GPU tridiagonal backends (``gpu``: chunked, thomas CP / NCP; ``cusparse``) against the
serial CPU solver in float64, on fresh random systems (diagonally dominant, weakly dominant,
sign-mixed), every variant x dtype, sizes 1, 2, 3 up to segmented 4096-row systems, empty
batches and variable sizes 1..4096 in one batch. Outputs are poisoned with NaN before each run
(rows past a system's length must come back untouched). Errors go to the end-of-run summary.
"""
from __future__ import annotations

import numpy as np
import pytest
from gpu_cases import record_error

from hinesbatch import SingularSystemError
from hinesbatch.solvers.gpu.tridiagonal import native_solver
from hinesbatch.solvers.tridiagonal import plan_tridiagonal, solve_tridiagonal

pytestmark = pytest.mark.gpu

DTYPES = (np.float32, np.float64)
#: max over systems of max|x - ref| / max|ref| against the serial float64 solve of the same
#: (rounded) inputs; "weak" systems (dominance margin 1e-3) are worse conditioned.
TOL = {("dominant", 4): 2e-5, ("dominant", 8): 1e-12, ("mixed", 4): 5e-5, ("mixed", 8): 1e-12,
       ("weak", 4): 2e-3, ("weak", 8): 1e-10}
VARIANTS = (("chunked", {}), ("thomas-cp", {"variant": "thomas", "padding": "cp"}),
            ("thomas-ncp", {"variant": "thomas", "padding": "ncp"}))
SHAPES = ((1, 1), (5, 2), (7, 3), (33, 16), (100, 64), (50, 100), (40, 512), (9, 513),
          (6, 1500), (3, 4096), (0, 8), (5, 0))


def systems(rng, batch, n, dtype, kind="dominant"):
    """Random ``(batch, n)`` dl, d, du, rhs. dominant: |d| = (|dl|+|du|)(1.05..2); mixed: the
    same with random signs on d; weak: |d| = (|dl|+|du|)(1 + 1e-3 U) + 1e-6."""
    a = rng.uniform(-1, 1, (batch, n))
    c = rng.uniform(-1, 1, (batch, n))
    s = np.abs(a) + np.abs(c)
    if kind == "weak":
        b = s * (1 + 1e-3 * rng.random((batch, n))) + 1e-6
    else:
        b = s * rng.uniform(1.05, 2.0, (batch, n)) + 1e-3
        if kind == "mixed":
            b *= np.where(rng.random((batch, n)) < 0.5, -1.0, 1.0)
    y = rng.standard_normal((batch, n)) * 10.0 ** rng.uniform(-3, 3, (batch, 1))
    return [v.astype(dtype) for v in (a, b, c, y)]


def reference(dl, d, du, rhs, lengths=None):
    """The serial CPU solve in float64 of the given (rounded) values."""
    f = [np.asarray(v, np.float64) for v in (dl, d, du, rhs)]
    return solve_tridiagonal(*f, lengths=lengths, backend="serial", check_finite=False)


def forward_error(x, ref, lengths) -> float:
    x = np.asarray(x, np.float64)
    worst = 0.0
    for k, m in enumerate(lengths):
        if m:
            scale = np.max(np.abs(ref[k, :m]))
            worst = max(worst, float(np.max(np.abs(x[k, :m] - ref[k, :m])) / scale))
    return worst


def poison_padding(arrays, lengths):
    for a in arrays:
        for k, m in enumerate(lengths):
            a[k, m:] = np.nan


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize(("batch", "n"), SHAPES, ids=lambda v: str(v))
@pytest.mark.parametrize(("variant", "options"), VARIANTS, ids=[v[0] for v in VARIANTS])
def test_both_entry_points_match_serial(cp, seed, variant, options, batch, n, dtype):
    rng = np.random.default_rng(seed)
    kind = ("dominant", "mixed", "weak")[seed % 3]
    dl, d, du, rhs = systems(rng, batch, n, dtype, kind)
    ref = reference(dl, d, du, rhs)
    lengths = [n] * batch
    plan = plan_tridiagonal(n, batch, backend="gpu", **options)
    # canonical entry point, NumPy in and out
    x = plan.solve(dl, d, du, rhs)
    assert x.dtype == np.dtype(dtype) and x.shape == (batch, n)
    err = forward_error(x, ref, lengths)
    record_error(f"tri {variant} {np.dtype(dtype).name}", err, f"{kind} {batch}x{n} seed {seed}")
    assert err <= TOL[kind, np.dtype(dtype).itemsize], f"{kind}: error {err:.3g} (seed {seed})"
    # native interleaved entry point, output poisoned
    impl = native_solver(plan, dtype)
    inter = [cp.asarray(np.ascontiguousarray(a.T)) for a in (dl, d, du, rhs)]
    out = cp.full((n, batch), np.nan, dtype=dtype)
    got = impl.solve_interleaved(*inter, out=out)
    assert got is out
    np.testing.assert_array_equal(out.get().T, x)  # same arithmetic, other loads and stores
    for a, b in zip(inter, (dl, d, du, rhs)):  # inputs untouched
        np.testing.assert_array_equal(a.get().T, b)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize(("variant", "options"), VARIANTS, ids=[v[0] for v in VARIANTS])
def test_variable_sizes_1_to_4096(cp, seed, variant, options, dtype):
    """One batch with lengths 1..4096 (and 0): padding and corner entries hold NaN / inf."""
    rng = np.random.default_rng(seed)
    batch, n = 64, 4096
    lengths = np.concatenate([[0, 1, 2, 3, 4095, 4096, 511, 512, 513],
                              rng.integers(1, n + 1, batch - 9)])
    dl, d, du, rhs = systems(rng, batch, n, dtype, ("dominant", "mixed")[seed % 2])
    poison_padding((dl, d, du, rhs), lengths)
    dl[:, 0] = np.nan
    for k, m in enumerate(lengths):
        if m:
            du[k, m - 1] = np.inf
    clean = [np.nan_to_num(a, nan=0.0, posinf=0.0) for a in (dl, d, du, rhs)]
    ref = reference(*clean, lengths=lengths)
    plan = plan_tridiagonal(n, batch, lengths=lengths, backend="gpu", **options)
    impl = native_solver(plan, dtype)
    canon = [cp.asarray(a) for a in (dl, d, du, rhs)]
    out = cp.full((batch, n), np.nan, dtype=dtype)
    impl.enqueue(*canon, out)
    impl.check_singular()
    x = out.get()
    err = forward_error(x, ref, lengths)
    record_error(f"tri {variant} {np.dtype(dtype).name} variable", err, f"seed {seed}")
    assert err <= TOL["mixed", np.dtype(dtype).itemsize], f"error {err:.3g} (seed {seed})"
    for k, m in enumerate(lengths):
        assert np.all(np.isnan(x[k, m:])), f"system {k}: rows past {m} were written"
        assert np.all(np.isfinite(x[k, :m])), f"system {k}: rows below {m} not all written"
    # the front end returns rhs's padding unchanged
    x2 = plan.solve(dl, d, du, rhs, check_finite=True)
    for k, m in enumerate(lengths):
        np.testing.assert_array_equal(x2[k, m:], rhs[k, m:])
    np.testing.assert_array_equal(np.nan_to_num(x2), np.nan_to_num(np.where(np.isnan(x), rhs, x)))
    # native entry point, interleaved, poisoned output
    inter = [cp.asarray(np.ascontiguousarray(a.T)) for a in (dl, d, du, rhs)]
    out_i = cp.full((n, batch), np.nan, dtype=dtype)
    impl.solve_interleaved(*inter, out=out_i)
    np.testing.assert_array_equal(out_i.get().T, x)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: np.dtype(t).name)
def test_segment_lengths_agree(cp, seed, dtype):
    rng = np.random.default_rng(seed)
    batch, n = 11, 3000
    dl, d, du, rhs = systems(rng, batch, n, dtype, "mixed")
    ref = reference(dl, d, du, rhs)
    for rows in (128, 256, 512):
        plan = plan_tridiagonal(n, batch, backend="gpu", variant="chunked", segment_rows=rows)
        assert f"segments of {rows} rows" in plan.describe()
        err = forward_error(plan.solve(dl, d, du, rhs), ref, [n] * batch)
        record_error(f"tri chunked {np.dtype(dtype).name} segments", err, f"{rows} rows")
        assert err <= TOL["mixed", np.dtype(dtype).itemsize]


def test_plan_reuse_sees_fresh_data_and_internal_buffers_poisoned(cp, seed):
    rng = np.random.default_rng(seed)
    batch, n = 300, 200
    for variant in ("chunked", "thomas"):
        plan = plan_tridiagonal(n, batch, backend="gpu", variant=variant)
        impl = native_solver(plan)
        for _ in range(3):
            dl, d, du, rhs = systems(rng, batch, n, np.float64, "mixed")
            if impl._interleaved is not None:
                for buf in impl._interleaved:
                    buf.fill(np.nan)
            err = forward_error(plan.solve(dl, d, du, rhs), reference(dl, d, du, rhs), [n] * batch)
            assert err <= 1e-12, (variant, err)


def test_auto_describes_its_choice(cp):
    plan = plan_tridiagonal(512, 1000)
    assert plan.backend_name == "gpu"
    assert "variant chunked" in plan.describe() and "auto" in plan.describe()
    assert "thomas (cuThomasBatch" in plan_tridiagonal(64, 10, backend="gpu",
                                                       variant="thomas").describe()


@pytest.mark.parametrize(("variant", "options"), VARIANTS, ids=[v[0] for v in VARIANTS])
@pytest.mark.parametrize("n", [6, 700])
def test_singular_systems_raise_report_or_pivot(cp, seed, variant, options, n):
    rng = np.random.default_rng(seed)
    batch = 8
    dl, d, du, rhs = systems(rng, batch, n, np.float64)
    d[3, 0] = 0.0      # nonsingular, but the first pivot is zero: needs pivoting
    d[5, n - 1] = 0.0  # singular: the last row is zero
    dl[5, n - 1] = 0.0
    with pytest.raises(SingularSystemError) as info:
        solve_tridiagonal(dl, d, du, rhs, backend="gpu", **options)
    assert info.value.cell == 3
    if variant != "chunked":  # Thomas order: the zero pivot is row 0 (chunked: its own order)
        assert info.value.node == 0
    # report: NaN for the flagged systems, the others solved
    plan = plan_tridiagonal(n, batch, backend="gpu", on_singular="report", **options)
    x = plan.solve(dl, d, du, rhs)
    flagged = native_solver(plan).last_singular
    assert list(flagged) == [3, 5]
    assert np.all(np.isnan(x[[3, 5]]))
    good = [k for k in range(batch) if k not in (3, 5)]
    ref = reference(dl[good], d[good], du[good], rhs[good])
    assert forward_error(x[good], ref, [n] * len(good)) <= 1e-12
    # pivot: system 3 solved with partial pivoting, system 5 is singular and raises
    plan = plan_tridiagonal(n, batch, backend="gpu", on_singular="pivot", **options)
    with pytest.raises(SingularSystemError) as info:
        plan.solve(dl, d, du, rhs)
    assert info.value.cell == 5
    keep = [k for k in range(batch) if k != 5]
    plan = plan_tridiagonal(n, len(keep), backend="gpu", on_singular="pivot", **options)
    x = plan.solve(dl[keep], d[keep], du[keep], rhs[keep])
    assert list(native_solver(plan).last_singular) == [3]
    A = np.diag(d[3]) + np.diag(dl[3, 1:], -1) + np.diag(du[3, :-1], 1)
    exact = np.linalg.solve(A, rhs[3])
    err = np.max(np.abs(x[3] - exact)) / np.max(np.abs(exact))
    record_error("tri pivot fallback", err, f"{variant} n={n}")
    assert err <= 1e-10


def test_tiny_pivot_is_flagged_in_the_order_that_meets_it(cp):
    """The leading 2x2 block is singular to rounding, the matrix is not. Thomas meets a pivot of
    one ulp (lost in rounding: reported, where the serial CPU solver would return values of
    order 1e16); the chunked order eliminates differently, meets no such pivot, and is right."""
    ulp = np.finfo(np.float64).eps
    dl = np.array([[0.0, 1.0, 0.5]])
    du = np.array([[1.0, 0.5, 0.0]])
    d = np.array([[1.0, 1.0 + ulp, 2.0]])  # second Thomas pivot: 1 + ulp - 1 * 1 = ulp
    rhs = np.array([[1.0, 2.0, 3.0]])
    with pytest.raises(SingularSystemError) as info:
        solve_tridiagonal(dl, d, du, rhs, backend="gpu", variant="thomas")
    assert (info.value.cell, info.value.node) == (0, 1)
    x = solve_tridiagonal(dl, d, du, rhs, backend="gpu", variant="chunked")
    A = np.diag(d[0]) + np.diag(dl[0, 1:], -1) + np.diag(du[0, :-1], 1)
    np.testing.assert_allclose(x[0], np.linalg.solve(A, rhs[0]), rtol=1e-12)


def test_auto_on_interleaved_values_of_a_large_batch(cp, seed):
    """auto runs cuThomasBatch on interleaved values of >= 100000 systems; same answers."""
    rng = np.random.default_rng(seed)
    batch, n = 100_000, 128
    dl, d, du, rhs = systems(rng, batch, n, np.float64, "mixed")
    plan = plan_tridiagonal(n, batch)
    assert "interleaved values (solve_interleaved): thomas" in plan.describe()
    impl = native_solver(plan)
    out = cp.full((n, batch), np.nan)
    impl.solve_interleaved(*(cp.asarray(np.ascontiguousarray(a.T)) for a in (dl, d, du, rhs)), out=out)
    err = forward_error(out.get().T, reference(dl, d, du, rhs), [n] * batch)
    record_error("tri auto native (thomas) float64", err, f"{batch}x{n}")
    assert err <= 1e-12


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("options", [{"routine": "strided"}, {"algorithm": 0}, {"algorithm": 1},
                                     {"algorithm": 2}], ids=["strided", "algo0", "algo1", "algo2"])
def test_cusparse_reference_backend(cp, seed, options, dtype):
    rng = np.random.default_rng(seed)
    batch, n = 40, 300
    lengths = rng.integers(0, n + 1, batch)
    dl, d, du, rhs = systems(rng, batch, n, dtype, "dominant")
    poison_padding((dl, d, du, rhs), lengths)
    x = solve_tridiagonal(dl, d, du, rhs, lengths=lengths, backend="cusparse", **options)
    clean = [np.nan_to_num(a) for a in (dl, d, du, rhs)]
    err = forward_error(x, reference(*clean, lengths=lengths), lengths)
    record_error(f"tri cusparse {np.dtype(dtype).name}", err, str(options))
    assert err <= 10 * TOL["dominant", np.dtype(dtype).itemsize]
    for k, m in enumerate(lengths):
        np.testing.assert_array_equal(x[k, m:], rhs[k, m:])


def test_native_entry_point_checks_its_arrays(cp):
    plan = plan_tridiagonal(16, 4, backend="gpu")
    impl = native_solver(plan)
    good = [cp.ones((16, 4)) for _ in range(4)]
    with pytest.raises(ValueError, match=r"dl has shape \(4, 16\), expected \(16, 4\)"):
        impl.solve_interleaved(cp.ones((4, 16)), *good[1:])
    with pytest.raises(TypeError, match="rhs has dtype float32, expected float64"):
        impl.solve_interleaved(*good[:3], cp.ones((16, 4), np.float32))
    with pytest.raises(TypeError, match="must be a CuPy array"):
        impl.solve_interleaved(np.ones((16, 4)), *good[1:])
