"""Every Hines backend against one reference (dense / sparse LU) on one set of structures."""
from __future__ import annotations

import os
import warnings
import zlib

import numba
import numpy as np
import pytest
from solver_cases import DTYPES, HINES_CASES, assert_solution, backend_params

import hinesbatch
from hinesbatch import HinesStructure, MonoBatch, SingularSystemError
from hinesbatch.tree import random_trees as rt

BACKENDS = backend_params("hines")


@pytest.fixture(scope="module")
def cases():
    built = {}

    def get(name):
        if name not in built:
            built[name] = HINES_CASES[name]()
        return built[name]

    return get


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("case", sorted(HINES_CASES))
@pytest.mark.parametrize("backend", BACKENDS)
def test_matches_reference(backend, case, dtype, cases):
    structure = cases(case)
    d, rhs = rt.diagonally_dominant(structure, rng=zlib.crc32(case.encode()), dtype=dtype)
    x = hinesbatch.solve(structure, d, rhs, backend=backend)
    assert_solution(structure, d, rhs, x, dtype)


@pytest.mark.parametrize("backend", BACKENDS)
def test_batch_equals_loop_over_cells(backend):
    batch = rt.random_batch(25, rng=20, max_nodes=40, symmetric=False)
    d, rhs = rt.diagonally_dominant(batch, rng=21)
    x = hinesbatch.solve(batch, d, rhs, backend=backend)
    offsets = batch.cell_offsets
    for c in range(batch.n_cells):
        a, b = offsets[c], offsets[c + 1]
        alone = hinesbatch.solve(batch.cell(c), d[a:b], rhs[a:b], backend=backend)
        if backend in ("serial", "multicore"):  # one kernel, one order: bit for bit
            np.testing.assert_array_equal(x[a:b], alone, err_msg=f"cell {c}")
        else:  # the GPU's auto picks a strategy per batch shape (balanced fine vs tiled)
            np.testing.assert_allclose(x[a:b], alone, rtol=1e-12, atol=1e-14, err_msg=f"cell {c}")


@pytest.mark.parametrize("backend", BACKENDS)
def test_shared_structure_equals_per_cell_structure(backend):
    mono = MonoBatch(rt.random_tree(70, rng=22), 13)
    d, rhs = rt.diagonally_dominant(mono, rng=23)
    shared = hinesbatch.solve(mono, d, rhs, backend=backend)
    per_cell = hinesbatch.solve(mono.expand(), d.reshape(-1), rhs.reshape(-1), backend=backend)
    if backend in ("serial", "multicore"):  # the same elimination order: bit for bit
        np.testing.assert_array_equal(shared, per_cell.reshape(mono.values_shape))
    else:  # the GPU's mono and per-cell kernels order the eliminations differently
        np.testing.assert_allclose(shared, per_cell.reshape(mono.values_shape),
                                   rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_backends_agree_with_serial(backend):
    batch = rt.random_batch(30, rng=24, max_nodes=80)
    d, rhs = rt.diagonally_dominant(batch, rng=25)
    np.testing.assert_allclose(hinesbatch.solve(batch, d, rhs, backend=backend),
                               hinesbatch.solve(batch, d, rhs, backend="serial"),
                               rtol=1e-12, atol=1e-14)


def _singular_batch():
    """Six two-node cells; cells 3 and 5 lose their root pivot (d0 - u*l/d1 = 1 - 1 = 0),
    cell 4 has a zero pivot at its tip."""
    cells = [rt.chain(2, rng=k) for k in range(6)]
    batch = HinesStructure.concatenate(
        HinesStructure([-1, 0], [0.0, -1.0]) if c in (3, 5) else cells[c] for c in range(6))
    d, rhs = rt.diagonally_dominant(batch, rng=26)
    d[[6, 7]] = 1.0  # cell 3: root pivot 1 - (-1)(-1)/1 = 0
    d[[10, 11]] = 1.0  # cell 5 likewise
    d[9] = 0.0  # cell 4: the tip's pivot
    return batch, d, rhs


@pytest.mark.parametrize("backend", BACKENDS)
def test_zero_pivot_names_lowest_cell_and_node(backend):
    batch, d, rhs = _singular_batch()
    with pytest.raises(SingularSystemError, match=r"cell 3, node 0") as info:
        hinesbatch.solve(batch, d, rhs, backend=backend)
    assert (info.value.cell, info.value.node) == (3, 0)
    d[[6, 7]] = 2.0  # repair cell 3: now cell 4's tip comes first
    with pytest.raises(SingularSystemError, match=r"cell 4, node 1") as info:
        hinesbatch.solve(batch, d, rhs, backend=backend)
    assert (info.value.cell, info.value.node) == (4, 1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_zero_pivot_in_shared_structure_batch(backend):
    mono = MonoBatch(rt.chain(5, rng=27), 8)
    d, rhs = rt.diagonally_dominant(mono, rng=28)
    d[[6, 7], 4] = 0.0  # the tips of cells 6 and 7 (a tip's pivot is its own d)
    with pytest.raises(SingularSystemError) as info:
        hinesbatch.solve(mono, d, rhs, backend=backend)
    assert (info.value.cell, info.value.node) == (6, 4)
    assert "cell 6, node 4" in str(info.value)


@pytest.mark.parametrize("backend", BACKENDS)
def test_overflowing_pivot_is_reported(backend):
    """Finite inputs whose elimination overflows: the parent's pivot becomes -inf."""
    cell = HinesStructure([-1, 0, 1], [0.0, -1e200, -1e200])
    d = np.array([1.0, 1.0, 1.0])
    with pytest.raises(SingularSystemError) as info:
        hinesbatch.solve(cell, d, np.ones(3), backend=backend)
    assert (info.value.cell, info.value.node) == (0, 1)
    assert "inf" in str(info.value)


@pytest.mark.parametrize("backend", BACKENDS)
def test_plan_reused_across_solves_and_dtypes(backend):
    batch = rt.random_batch(10, rng=29)
    plan = hinesbatch.plan(batch, backend=backend)
    for seed, dtype in [(30, np.float64), (31, np.float32), (32, np.float64)]:
        d, rhs = rt.diagonally_dominant(batch, rng=seed, dtype=dtype)
        assert_solution(batch, d, rhs, plan.solve(d, rhs), dtype)


def test_multicore_threads_option():
    batch = rt.random_batch(50, rng=33)
    d, rhs = rt.diagonally_dominant(batch, rng=34)
    ref = hinesbatch.solve(batch, d, rhs, backend="serial")
    before = numba.get_num_threads()
    one = hinesbatch.plan(batch, backend="multicore", threads=1)
    assert "1 thread " in one.describe()
    np.testing.assert_array_equal(one.solve(d, rhs), ref)
    assert numba.get_num_threads() == before, "the threads option must not leak"
    for bad in (0, numba.config.NUMBA_NUM_THREADS + 1):
        with pytest.raises(ValueError, match="threads must be between 1 and"):
            hinesbatch.plan(batch, backend="multicore", threads=bad)
    with pytest.raises(TypeError, match="threads must be an int"):
        hinesbatch.plan(batch, backend="multicore", threads=1.5)


def test_multicore_honours_numba_set_num_threads():
    batch = rt.random_batch(8, rng=35)
    plan = hinesbatch.plan(batch, backend="multicore")
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        assert "1 thread " in plan.describe()
    finally:
        numba.set_num_threads(before)
    assert f"{before} thread" in plan.describe()


@pytest.mark.parametrize("backend", BACKENDS)
def test_discretized_real_cells(backend):
    """NEURON's compartments of real cells (hinesbatch.discretize), a multi-morphology batch
    with the axial conductances [µS] as off-diagonals."""
    discretize = pytest.importorskip("hinesbatch.discretize").__dict__.get("discretize")
    if not callable(discretize):
        pytest.skip("hinesbatch.discretize.discretize has not landed yet")
    from solver_cases import REAL_DIR

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the SWC reader's warnings are not under test here
        cells = [discretize(os.path.join(REAL_DIR, name), nseg=nseg).hines_structure()
                 for name, nseg in [("c91662.swc", 3), ("h10.CNG.swc", 1),
                                    ("morph_ca1_n120.swc", 2)]]
    batch = HinesStructure.concatenate(cells)
    d, rhs = rt.diagonally_dominant(batch, rng=36)
    assert_solution(batch, d, rhs, hinesbatch.solve(batch, d, rhs, backend=backend), np.float64)


@pytest.mark.parametrize("backend", ["serial", "multicore"])
def test_lockstep_gives_identical_results(backend):
    mono = MonoBatch(rt.random_tree(90, rng=37), 29)  # 29 cells: groups end part-full
    d, rhs = rt.diagonally_dominant(mono, rng=38)
    one = hinesbatch.solve(mono, d, rhs, backend=backend, lockstep=1)
    for lockstep in (3, 8, 64):
        plan = hinesbatch.plan(mono, backend=backend, lockstep=lockstep)
        assert f"{lockstep} cells in lockstep" in plan.describe()
        np.testing.assert_array_equal(plan.solve(d, rhs), one)


@pytest.mark.parametrize("lockstep", [1, 8])
@pytest.mark.parametrize("backend", ["serial", "multicore"])
def test_zero_pivots_in_one_lockstep_group(backend, lockstep):
    """Cell 6's zero pivot is met first in time, but cell 5 is the lower cell."""
    mono = MonoBatch(rt.star(5, rng=39), 11)
    d, rhs = rt.diagonally_dominant(mono, rng=40)
    d[5, 1] = 0.0
    d[6, 3] = 0.0  # the backward sweep reaches node 3 before node 1
    with pytest.raises(SingularSystemError) as info:
        hinesbatch.solve(mono, d, rhs, backend=backend, lockstep=lockstep)
    assert (info.value.cell, info.value.node) == (5, 1)


def test_lockstep_option_is_checked():
    mono = MonoBatch(rt.chain(3, rng=41), 2)
    with pytest.raises(ValueError, match="lockstep must be between 1 and 1024"):
        hinesbatch.plan(mono, backend="serial", lockstep=0)
    with pytest.raises(TypeError, match="lockstep must be an int"):
        hinesbatch.plan(mono, backend="multicore", lockstep="8")
    per_cell = hinesbatch.plan(mono.expand(), backend="multicore", lockstep=4)
    assert "per-cell structure, cell after cell" in per_cell.describe()
