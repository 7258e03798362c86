"""Every tridiagonal backend against dense ``np.linalg.solve``; the front end's rules."""
from __future__ import annotations

import numpy as np
import pytest
from solver_cases import DTYPES, TOLERANCES, backend_params, dominant_tridiagonal, tridiagonal_reference

import hinesbatch
from hinesbatch import SingularSystemError
from hinesbatch.solvers.tridiagonal import plan_tridiagonal, solve_tridiagonal

BACKENDS = backend_params("tridiagonal")


def _assert_close(x, ref, dtype):
    tol = TOLERANCES[np.dtype(dtype)]["forward"]
    assert x.dtype == np.dtype(dtype) and np.all(np.isfinite(x))
    if x.size:
        err = np.max(np.abs(x.astype(np.float64) - ref)) / np.max(np.abs(ref))
        assert err <= tol, f"forward error {err:.3g} > {tol:.3g}"


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize(("batch", "n"), [(1, 1), (3, 2), (17, 5), (40, 129), (0, 8), (5, 0)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_matches_dense(backend, batch, n, dtype):
    dl, d, du, rhs = dominant_tridiagonal(batch, n, rng=batch * 1000 + n, dtype=dtype)
    x = solve_tridiagonal(dl, d, du, rhs, backend=backend)
    assert x.shape == (batch, n)
    _assert_close(x, tridiagonal_reference(dl, d, du, rhs, [n] * batch), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("backend", BACKENDS)
def test_variable_lengths_leave_the_rest_of_rhs(backend, dtype):
    batch, n = 9, 12
    dl, d, du, rhs = dominant_tridiagonal(batch, n, rng=60, dtype=dtype)
    lengths = np.array([12, 0, 1, 2, 11, 5, 12, 3, 7])
    for k, m in enumerate(lengths):  # padding may hold anything, even NaN
        for a in (dl, d, du, rhs):
            a[k, m:] = np.nan
    rhs0 = rhs.copy()
    x = solve_tridiagonal(dl, d, du, rhs, lengths=lengths, backend=backend)
    ref = tridiagonal_reference(dl, d, du, rhs, lengths)
    for k, m in enumerate(lengths):
        _assert_close(x[k, :m], ref[k, :m], dtype)
        np.testing.assert_array_equal(x[k, m:], rhs0[k, m:])  # unchanged (NaN == NaN here)


@pytest.mark.parametrize("backend", BACKENDS)
def test_corner_entries_are_not_read(backend):
    dl, d, du, rhs = dominant_tridiagonal(6, 10, rng=61)
    clean = solve_tridiagonal(dl, d, du, rhs, backend=backend)
    dl[:, 0] = np.nan
    du[:, -1] = np.inf
    np.testing.assert_array_equal(solve_tridiagonal(dl, d, du, rhs, backend=backend), clean)


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_system_as_1d_arrays(backend):
    dl, d, du, rhs = dominant_tridiagonal(1, 30, rng=62)
    x = solve_tridiagonal(dl[0], d[0], du[0], rhs[0], backend=backend)
    assert x.shape == (30,)
    np.testing.assert_array_equal(x, solve_tridiagonal(dl, d, du, rhs, backend=backend)[0])
    x = solve_tridiagonal(dl[0], d[0], du[0], rhs[0], lengths=4, backend=backend)
    np.testing.assert_array_equal(x[4:], rhs[0, 4:])


@pytest.mark.parametrize("backend", BACKENDS)
def test_batch_equals_loop(backend):
    dl, d, du, rhs = dominant_tridiagonal(11, 20, rng=63)
    x = solve_tridiagonal(dl, d, du, rhs, backend=backend)
    for k in range(11):
        np.testing.assert_array_equal(x[k], solve_tridiagonal(dl[k], d[k], du[k], rhs[k],
                                                              backend=backend))


@pytest.mark.parametrize("backend", BACKENDS)
def test_inputs_unchanged_unless_overwrite(backend):
    arrays = dominant_tridiagonal(4, 9, rng=64)
    copies = [a.copy() for a in arrays]
    x = solve_tridiagonal(*arrays, backend=backend)
    for a, c in zip(arrays, copies):
        np.testing.assert_array_equal(a, c)
    dl, d, du, rhs = arrays
    x2 = solve_tridiagonal(dl, d, du, rhs, backend=backend, overwrite=True)
    assert x2 is rhs
    np.testing.assert_array_equal(x2, x)
    np.testing.assert_array_equal(dl, copies[0])  # dl and du are never written
    np.testing.assert_array_equal(du, copies[2])


@pytest.mark.parametrize("backend", BACKENDS)
def test_overwrite_with_aliased_inputs(backend):
    dl, d, du, rhs = dominant_tridiagonal(3, 7, rng=65)
    expected = solve_tridiagonal(dl, d, du, d.copy(), backend=backend)
    np.testing.assert_array_equal(solve_tridiagonal(dl, d, du, d, backend=backend, overwrite=True),
                                  expected)
    w = dl.copy()  # one array as both off-diagonals (a symmetric matrix)
    expected = solve_tridiagonal(w.copy(), d.copy(), w.copy(), rhs.copy(), backend=backend)
    np.testing.assert_array_equal(
        solve_tridiagonal(w, d, w, rhs, backend=backend, overwrite=True), expected)
    np.testing.assert_array_equal(w, dl)


@pytest.mark.parametrize("backend", BACKENDS)
def test_zero_pivot_names_system_and_row(backend):
    dl, d, du, rhs = dominant_tridiagonal(5, 6, rng=66)
    d[3, 0] = 0.0  # system 3: the first pivot
    d[4, 5] = 0.0
    dl[4, 5] = 0.0  # system 4: the last pivot stays 0
    with pytest.raises(SingularSystemError, match=r"system 3, row 0") as info:
        solve_tridiagonal(dl, d, du, rhs, backend=backend)
    assert (info.value.cell, info.value.node) == (3, 0)
    d[3, 0] = 5.0
    with pytest.raises(SingularSystemError) as info:
        solve_tridiagonal(dl, d, du, rhs, backend=backend)
    assert (info.value.cell, info.value.node) == (4, 5)


@pytest.mark.parametrize("name", ["dl", "d", "du", "rhs"])
def test_non_finite_input_names_argument_system_and_row(name):
    arrays = dict(zip(["dl", "d", "du", "rhs"], dominant_tridiagonal(4, 6, rng=67)))
    arrays[name][2, 3] = np.nan
    with pytest.raises(ValueError, match=rf"^{name} must be finite, but holds nan at system 2, row 3"):
        solve_tridiagonal(**arrays)
    arrays[name][2, 3] = 1.0
    arrays[name][1, 5] = np.inf
    lengths = [6, 5, 6, 6]  # row 5 of system 1 is padding: not checked
    solve_tridiagonal(**arrays, lengths=lengths)


def test_lengths_are_validated():
    dl, d, du, rhs = dominant_tridiagonal(3, 4, rng=68)
    with pytest.raises(ValueError, match=r"lengths\[1\] = 5 is outside 0..4"):
        solve_tridiagonal(dl, d, du, rhs, lengths=[4, 5, 1])
    with pytest.raises(ValueError, match=r"lengths\[2\] = -1"):
        solve_tridiagonal(dl, d, du, rhs, lengths=[4, 4, -1])
    with pytest.raises(ValueError, match=r"lengths has shape \(2,\) but the batch has 3 systems"):
        solve_tridiagonal(dl, d, du, rhs, lengths=[4, 4])
    with pytest.raises(TypeError, match="lengths must hold integers"):
        solve_tridiagonal(dl, d, du, rhs, lengths=[4.0, 4.0, 1.0])


def test_shapes_are_validated():
    dl, d, du, rhs = dominant_tridiagonal(3, 4, rng=69)
    with pytest.raises(ValueError, match=r"all be \(batch, n\) or all \(n,\)"):
        solve_tridiagonal(dl[0], d, du, rhs)
    with pytest.raises(ValueError, match=r"du has shape \(3, 3\) but the structure needs \(3, 4\)"):
        solve_tridiagonal(dl, d, du[:, :3], rhs)
    with pytest.raises(TypeError, match="n must be an int"):
        plan_tridiagonal(4.0, 3)
    with pytest.raises(ValueError, match="batch must be >= 0"):
        plan_tridiagonal(4, -1)


def test_plan_reuse_dtypes_and_describe():
    lengths = np.array([4, 2, 3])
    plan = plan_tridiagonal(4, 3, lengths=lengths, backend="serial")
    assert "3 tridiagonal systems of up to 4 rows (variable sizes); backend serial" in plan.describe()
    lengths[0] = 0  # the plan keeps its own copy
    assert plan.shape.lengths.tolist() == [4, 2, 3]
    for seed, dtype in [(70, np.float32), (71, np.float64)]:
        dl, d, du, rhs = dominant_tridiagonal(3, 4, rng=seed, dtype=dtype)
        _assert_close(plan.solve(dl, d, du, rhs),
                      tridiagonal_reference(dl, d, du, rhs, [4, 2, 3]), dtype)


def test_unknown_backend_and_option():
    valid = ", ".join(hinesbatch.backends("tridiagonal"))
    assert valid.startswith("auto, ") and "multicore" in valid and "serial" in valid
    with pytest.raises(ValueError, match=rf"unknown tridiagonal backend 'nope'; valid backends: {valid}$"):
        plan_tridiagonal(4, 2, backend="nope")
    with pytest.raises(TypeError, match=r"got unknown option\(s\) algo"):
        plan_tridiagonal(4, 2, backend="serial", algo=1)
    assert "auto" in hinesbatch.backends("tridiagonal")


def test_multicore_threads_option():
    dl, d, du, rhs = dominant_tridiagonal(20, 30, rng=72)
    one = solve_tridiagonal(dl, d, du, rhs, backend="multicore", threads=1)
    np.testing.assert_array_equal(one, solve_tridiagonal(dl, d, du, rhs, backend="serial"))


@pytest.mark.parametrize("backend", ["serial", "multicore"])
def test_lockstep_gives_identical_results(backend):
    dl, d, du, rhs = dominant_tridiagonal(23, 17, rng=73)
    lengths = np.random.default_rng(74).integers(0, 18, 23)
    one = solve_tridiagonal(dl, d, du, rhs, lengths=lengths, backend=backend, lockstep=1)
    for lockstep in (2, 8, 100):
        plan = plan_tridiagonal(17, 23, lengths=lengths, backend=backend, lockstep=lockstep)
        assert f"{lockstep} systems in lockstep" in plan.describe()
        np.testing.assert_array_equal(plan.solve(dl, d, du, rhs), one)


@pytest.mark.parametrize("backend", ["serial", "multicore"])
def test_zero_pivots_in_one_lockstep_group(backend):
    """System 2 meets its zero pivot later (row 6) than system 3 (row 1): 2 is reported."""
    dl, d, du, rhs = dominant_tridiagonal(8, 9, rng=75)
    d[2, 6] = 0.0
    dl[2, 6] = 0.0  # keeps d[2, 6] at 0 through the elimination
    d[3, 1] = 0.0
    dl[3, 1] = 0.0
    with pytest.raises(SingularSystemError) as info:
        solve_tridiagonal(dl, d, du, rhs, backend=backend, lockstep=8)
    assert (info.value.cell, info.value.node) == (2, 6)


@pytest.mark.parametrize("backend", ["serial", "multicore"])
@pytest.mark.parametrize("total", [7, 9])
def test_one_dimensional_systems_one_after_another(backend, total):
    """1-D arrays with ``lengths``: the systems laid end to end (rows past them untouched)."""
    dl, d, du, rhs = (a[0] for a in dominant_tridiagonal(1, total, rng=70))
    originals = [a.copy() for a in (dl, d, du, rhs)]
    x = solve_tridiagonal(dl, d, du, rhs, lengths=[3, 4], backend=backend)
    first = solve_tridiagonal(dl[:3], d[:3], du[:3], rhs[:3], backend=backend)
    second = solve_tridiagonal(dl[3:7], d[3:7], du[3:7], rhs[3:7], backend=backend)
    np.testing.assert_array_equal(x, np.concatenate([first, second, rhs[7:]]))
    for a, before in zip((dl, d, du, rhs), originals):
        np.testing.assert_array_equal(a, before)
    out = solve_tridiagonal(dl, d, du, rhs, lengths=np.array([3, 4], np.uint8), backend=backend,
                            overwrite=True)
    assert out is rhs
    np.testing.assert_array_equal(rhs, x)


def test_one_dimensional_systems_are_checked():
    dl, d, du, rhs = (a[0] for a in dominant_tridiagonal(1, 7, rng=71))
    with pytest.raises(ValueError, match="lengths add up to 8 rows but the arrays hold 7"):
        solve_tridiagonal(dl, d, du, rhs, lengths=[3, 5])
    with pytest.raises(ValueError, match=r"lengths\[1\] = -1 is outside 0..7"):
        solve_tridiagonal(dl, d, du, rhs, lengths=[3, -1])
    with pytest.raises(ValueError, match=r"must have one length; got dl \(6,\)"):
        solve_tridiagonal(dl[:6], d, du, rhs, lengths=[3, 4])
    d[4] = np.nan
    with pytest.raises(ValueError, match=r"d must be finite, but holds nan at system 1, row 1"):
        solve_tridiagonal(dl, d, du, rhs, lengths=[3, 4])
    d[4] = 0.0
    dl[4] = 0.0
    with pytest.raises(SingularSystemError, match=r"system 1, row 1") as info:
        solve_tridiagonal(dl, d, du, rhs, lengths=[3, 4], check_finite=False)
    assert (info.value.cell, info.value.node) == (1, 1)
