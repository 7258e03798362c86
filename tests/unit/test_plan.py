"""The plan/solve front end: backend choice, validation, dtypes, and what it may overwrite."""
from __future__ import annotations

import numpy as np
import pytest
from solver_cases import assert_solution, backend_params

import hinesbatch
from hinesbatch import BackendUnavailableError, MonoBatch
from hinesbatch.solvers import registry
from hinesbatch.tree import random_trees as rt

BACKENDS = backend_params("hines")


@pytest.fixture(scope="module")
def batch():
    return rt.random_batch(6, rng=40, max_nodes=12)


def test_unknown_backend_lists_the_valid_ones(batch):
    valid = ", ".join(hinesbatch.backends())
    assert valid.startswith("auto, ") and "multicore" in valid and "serial" in valid
    with pytest.raises(ValueError, match=rf"unknown hines backend 'cuda'; valid backends: {valid}$"):
        hinesbatch.plan(batch, backend="cuda")
    with pytest.raises(TypeError, match="backend must be a string"):
        hinesbatch.plan(batch, backend=3)


@pytest.mark.parametrize("backend", ["serial", "multicore"])
def test_unknown_option_fails_at_plan_time(batch, backend):
    with pytest.raises(TypeError, match=rf"backend '{backend}' got unknown option\(s\) strategy"):
        hinesbatch.plan(batch, backend=backend, strategy="levels")


def test_auto_prefers_multicore_without_gpu_and_says_why(batch):
    names = hinesbatch.backends()
    if "gpu" in names and registry.get("gpu").available()[0]:
        pytest.skip("a GPU is available here, so auto picks it")
    big = MonoBatch(rt.random_tree(100, rng=3), 200)  # 20000 nodes: threads pay off
    plan = hinesbatch.plan(big)
    assert plan.backend_name == "multicore"
    assert "auto chose 'multicore'" in plan.describe()
    assert "mono-morphology batch: 200 cells x 100 nodes" in repr(plan)
    assert plan.xp is np
    small = hinesbatch.plan(batch)  # 6 small cells: starting threads costs more than it saves
    assert small.backend_name == "serial"
    assert "multicore passed over: " in small.describe()
    assert "too few to pay for starting threads" in small.describe()


def test_auto_passes_threads_over_for_small_tridiagonal_batches():
    assert hinesbatch.plan_tridiagonal(64, 10).backend_name == "serial"
    assert hinesbatch.plan_tridiagonal(64, 1000).backend_name in ("multicore", "gpu")


def test_auto_order_follows_rank_not_registration_order(monkeypatch):
    class Fake:
        kind = "hines"
        ok = True

        @classmethod
        def available(cls):
            return cls.ok, "no fake device"

    first = type("Gpu", (Fake,), {"name": "fakegpu"})
    monkeypatch.setattr(registry, "_REGISTRY", {k: dict(v) for k, v in registry._REGISTRY.items()})
    monkeypatch.setattr(registry, "_AUTO_RANK", {k: dict(v) for k, v in registry._AUTO_RANK.items()})
    for table in (registry._REGISTRY, registry._AUTO_RANK):  # the CPU backends only, even
        table["hines"].pop("gpu", None)                     # on a machine with a GPU
    registry.register(first, auto_rank=0)  # registered last, ranked first
    assert registry.resolve("auto")[0] is first
    first.ok = False
    cls, note = registry.resolve("auto")
    assert cls.name == "multicore"
    assert "fakegpu unavailable: no fake device" in note
    with pytest.raises(BackendUnavailableError, match="'fakegpu' cannot run here: no fake device"):
        registry.resolve("fakegpu")


def test_tridiagonal_and_hines_registries_are_separate():
    assert hinesbatch.backends("tridiagonal")[:1] == ["auto"]
    assert registry.get("serial", "tridiagonal").kind == "tridiagonal"
    assert registry.get("serial", "hines").kind == "hines"


@pytest.mark.parametrize("backend", BACKENDS)
def test_inputs_unchanged_unless_overwrite(batch, backend):
    d, rhs = rt.diagonally_dominant(batch, rng=41)
    d0, rhs0 = d.copy(), rhs.copy()
    x = hinesbatch.solve(batch, d, rhs, backend=backend)
    np.testing.assert_array_equal(d, d0)
    np.testing.assert_array_equal(rhs, rhs0)
    assert not np.shares_memory(x, rhs) and not np.shares_memory(x, d)

    x2 = hinesbatch.solve(batch, d, rhs, backend=backend, overwrite=True)
    assert x2 is rhs, "with overwrite the solution is written into rhs"
    np.testing.assert_array_equal(x2, x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_overwrite_with_one_array_as_d_and_rhs(batch, backend):
    v, _ = rt.diagonally_dominant(batch, rng=42)
    expected = hinesbatch.solve(batch, v.copy(), v.copy(), backend=backend)
    np.testing.assert_array_equal(hinesbatch.solve(batch, v, v, backend=backend, overwrite=True),
                                  expected)


@pytest.mark.parametrize("backend", BACKENDS)
def test_overwrite_of_read_only_input_copies(batch, backend):
    d, rhs = rt.diagonally_dominant(batch, rng=43)
    d0, rhs0 = d.copy(), rhs.copy()
    rhs.flags.writeable = False
    x = hinesbatch.solve(batch, d, rhs, backend=backend, overwrite=True)  # d is scratch now
    np.testing.assert_array_equal(rhs, rhs0)
    assert_solution(batch, d0, rhs0, x, np.float64)


@pytest.mark.parametrize("backend", BACKENDS)
def test_non_contiguous_and_list_inputs(backend):
    mono = MonoBatch(rt.random_tree(9, rng=44), 5)
    d, rhs = rt.diagonally_dominant(mono, rng=45)
    d_strided = np.asfortranarray(d)
    x = hinesbatch.solve(mono, d_strided, rhs.tolist(), backend=backend)
    assert_solution(mono, d, rhs, x, np.float64)


@pytest.mark.parametrize(("d_type", "rhs_type", "expected"), [
    (np.float32, np.float32, np.float32),
    (np.float32, np.float64, np.float64),
    (np.int64, np.float32, np.float64),
    (np.float16, np.float16, np.float64),
])
def test_result_dtype(batch, d_type, rhs_type, expected):
    d, rhs = rt.diagonally_dominant(batch, rng=46)
    x = hinesbatch.solve(batch, (d * 4).round().astype(d_type), rhs.astype(rhs_type),
                         backend="serial")
    assert x.dtype == expected


def test_complex_values_are_refused(batch):
    d, rhs = rt.diagonally_dominant(batch, rng=47)
    with pytest.raises(TypeError, match="complex values are not supported"):
        hinesbatch.solve(batch, d, rhs.astype(complex))


def test_shape_mismatch_names_argument_and_shapes(batch):
    d, rhs = rt.diagonally_dominant(batch, rng=48)
    n = batch.n_nodes
    with pytest.raises(ValueError, match=rf"rhs has shape \({n - 1},\) but the structure needs \({n},\)"):
        hinesbatch.solve(batch, d, rhs[:-1])
    mono = MonoBatch(batch.cell(0), 3)
    with pytest.raises(ValueError, match=r"d has shape"):
        hinesbatch.solve(mono, d[: mono.n_nodes], rhs[: mono.n_nodes])


@pytest.mark.parametrize("backend", BACKENDS)
def test_non_finite_input_names_argument_cell_and_node(batch, backend):
    d, rhs = rt.diagonally_dominant(batch, rng=49)
    c = 4
    i = int(batch.cell_offsets[c]) + 1 if batch.cell_sizes[c] > 1 else int(batch.cell_offsets[c])
    node = i - int(batch.cell_offsets[c])
    bad = d.copy()
    bad[i] = np.nan
    with pytest.raises(ValueError, match=rf"d must be finite, but holds nan at cell {c}, node {node}"):
        hinesbatch.solve(batch, bad, rhs, backend=backend)
    bad = rhs.copy()
    bad[i] = -np.inf
    with pytest.raises(ValueError, match=rf"rhs must be finite, but holds -inf at cell {c}"):
        hinesbatch.solve(batch, d, bad, backend=backend)
    mono = MonoBatch(batch.cell(0), 3)
    dm, rm = rt.diagonally_dominant(mono, rng=50)
    rm[2, 0] = np.inf
    with pytest.raises(ValueError, match=r"rhs must be finite, but holds inf at cell 2, node 0"):
        hinesbatch.solve(mono, dm, rm, backend=backend)


def test_check_finite_false_skips_the_check(batch):
    d, rhs = rt.diagonally_dominant(batch, rng=51)
    rhs[0] = np.nan
    x = hinesbatch.solve(batch, d, rhs, backend="serial", check_finite=False)
    assert np.isnan(x[0])  # the NaN propagates instead of raising


def test_structure_must_be_a_batch():
    with pytest.raises(TypeError, match="expected a HinesStructure or MonoBatch"):
        hinesbatch.plan([-1, 0, 1])


@pytest.mark.parametrize("case", ["fast", "same buffer", "read-only", "strided", "float32 input"])
def test_overwrite_without_checks_solves_every_input_kind(case):
    """``overwrite=True, check_finite=False`` hands ready arrays straight to the backend and
    falls back to the full path for anything else; every case gives the reference answer."""
    cell = rt.random_tree(40, rng=11, branch_probability=0.5)
    batch = MonoBatch(cell, 3)
    plan = hinesbatch.plan(batch, backend="serial")
    d, rhs = rt.diagonally_dominant(batch, rng=12)
    expected = hinesbatch.solve(batch, d, rhs, backend="serial")
    if case == "same buffer":  # d is rhs: the backend must not get one buffer twice
        d = rhs = np.abs(rhs) + 100.0
        expected = hinesbatch.solve(batch, d.copy(), rhs.copy(), backend="serial")
    elif case == "read-only":
        d.flags.writeable = False
    elif case == "strided":
        d = np.asfortranarray(d)
    elif case == "float32 input":  # a dtype the plan has not prepared yet
        d, rhs = d.astype(np.float32), rhs.astype(np.float32)
        expected = hinesbatch.solve(batch, d, rhs, backend="serial")
    x = plan.solve(d, rhs, overwrite=True, check_finite=False)
    tol = 1e-5 if x.dtype == np.float32 else 1e-13
    np.testing.assert_allclose(x, expected, rtol=tol)
    if case == "fast":
        assert x is rhs  # solved in place: no copy on the hot path


def test_overwrite_after_a_device_transfer_writes_the_solution_into_rhs():
    """``deliver``: a result computed in another array module (a GPU backend on NumPy input)
    goes back into the caller's rhs with overwrite, and into a new array without it."""
    import types

    from hinesbatch.solvers.values import deliver

    class DeviceArray(np.ndarray):  # stands in for a CuPy array: .get() copies to the host
        def get(self):
            return np.array(self)

    device = types.SimpleNamespace(ndarray=DeviceArray)
    x = np.arange(6.0).reshape(2, 3).view(DeviceArray)
    rhs = np.zeros((2, 3))
    assert deliver(x, device, np, rhs, overwrite=True) is rhs
    np.testing.assert_array_equal(rhs, np.arange(6.0).reshape(2, 3))
    fresh = deliver(x, device, np, np.zeros((2, 3)), overwrite=False)
    assert type(fresh) is np.ndarray and not np.shares_memory(fresh, rhs)
    read_only = np.zeros((2, 3))
    read_only.flags.writeable = False
    assert deliver(x, device, np, read_only, overwrite=True) is not read_only
    assert deliver(x, device, np, np.zeros((2, 3), np.float32), overwrite=True).dtype == np.float64
