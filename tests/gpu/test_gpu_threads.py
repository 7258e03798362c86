"""One GPU plan solved from two host threads at once, each on its own stream.

The parts' pivot flags and layout scratch belong to the plan: calls take turns, and each
call sees exactly its own singular systems (every singular solve raises naming its cell and
node, no regular solve raises) and its own solution.
"""
from __future__ import annotations

import numpy as np
import pytest
from two_threads import run_two_threads

import hinesbatch
from hinesbatch import HinesStructure, MonoBatch, SingularSystemError

pytestmark = pytest.mark.gpu

N_SOLVES = 100
N_CELLS, N_NODES = 64, 100
BAD_CELL, BAD_NODE = 32, N_NODES - 1


def _two_threads(first, second):
    """Run ``first`` and ``second`` ``N_SOLVES`` times each, in two threads with their own
    non-blocking CuPy streams; returns each thread's outcomes (result or exception)."""
    import cupy as cp

    return run_two_threads(first, second, times=N_SOLVES,
                           context=lambda: cp.cuda.Stream(non_blocking=True))


def _values(structure, seed):
    rng = np.random.default_rng(seed)
    return rng.uniform(3.0, 4.0, structure.values_shape), rng.uniform(-1, 1, structure.values_shape)


@pytest.mark.parametrize("strategy", ["flat", "interleaved", "auto"])
@pytest.mark.parametrize("mono", [True, False], ids=["mono", "cells"])
def test_hines_plan_shared_by_two_threads(strategy, mono):
    import cupy as cp

    cell = HinesStructure(np.arange(-1, N_NODES - 1), np.full(N_NODES, -1.0))
    structure = MonoBatch(cell, N_CELLS) if mono else cell.tile(N_CELLS)
    plan = hinesbatch.plan(structure, "gpu", strategy=strategy)
    d, rhs = _values(structure, 1)
    d_bad = d.copy()
    d_bad.reshape(N_CELLS, N_NODES)[BAD_CELL, BAD_NODE] = 0.0
    expected = plan.solve(d, rhs)

    def solve(dd):
        return plan.solve(cp.asarray(dd), cp.asarray(rhs)).get()

    good, bad = _two_threads(lambda: solve(d), lambda: solve(d_bad))
    raised = [x for x in good if isinstance(x, SingularSystemError)]
    assert not raised, f"{len(raised)} regular solves raised, e.g. {raised[0]}"
    for x in good:
        np.testing.assert_allclose(x, expected, rtol=1e-12, atol=0)
    assert all(isinstance(e, SingularSystemError) and (e.cell, e.node) == (BAD_CELL, BAD_NODE)
               for e in bad), [e for e in bad if not isinstance(e, SingularSystemError)][:1]


@pytest.mark.parametrize("strategy", ["interleaved", "auto"])
def test_unchecked_solves_from_two_threads_keep_their_own_values(strategy):
    """Without check_pivots a call returns before its work ends; a call from another stream
    must still not run on the same scratch at the same time."""
    import cupy as cp

    cell = HinesStructure(np.arange(-1, N_NODES - 1), np.full(N_NODES, -1.0))
    structure = MonoBatch(cell, N_CELLS)
    plan = hinesbatch.plan(structure, "gpu", strategy=strategy, check_pivots=False)
    values = [_values(structure, seed) for seed in (2, 3)]
    expected = [plan.solve(d, rhs) for d, rhs in values]

    def solve(k):
        d, rhs = values[k]
        return plan.solve(cp.asarray(d), cp.asarray(rhs)).get()

    first, second = _two_threads(lambda: solve(0), lambda: solve(1))
    for outcomes, ref in ((first, expected[0]), (second, expected[1])):
        for x in outcomes:
            np.testing.assert_allclose(x, ref, rtol=1e-12, atol=0)


def _tridiagonal(seed):
    rng = np.random.default_rng(seed)
    dl, du = rng.uniform(-1.0, 0.0, (2, N_CELLS, N_NODES))
    d = rng.uniform(3.0, 4.0, (N_CELLS, N_NODES))
    return dl, d, du, rng.uniform(-1.0, 1.0, (N_CELLS, N_NODES))


def test_tridiagonal_plan_shared_by_two_threads():
    import cupy as cp

    plan = hinesbatch.plan_tridiagonal(N_NODES, N_CELLS, backend="gpu")
    dl, d, du, rhs = _tridiagonal(4)
    d_bad = d.copy()
    d_bad[BAD_CELL, 0] = 0.0
    expected = plan.solve(dl, d, du, rhs)

    def solve(dd):
        return plan.solve(*(cp.asarray(a) for a in (dl, dd, du, rhs))).get()

    good, bad = _two_threads(lambda: solve(d), lambda: solve(d_bad))
    raised = [x for x in good if isinstance(x, SingularSystemError)]
    assert not raised, f"{len(raised)} regular solves raised, e.g. {raised[0]}"
    for x in good:
        np.testing.assert_allclose(x, expected, rtol=1e-12, atol=0)
    assert all(isinstance(e, SingularSystemError) and e.cell == BAD_CELL for e in bad)


def test_cusparse_plan_shared_by_two_threads():
    import cupy as cp

    plan = hinesbatch.plan_tridiagonal(N_NODES, N_CELLS, backend="cusparse")
    systems = [_tridiagonal(seed) for seed in (5, 6)]
    expected = [plan.solve(*s) for s in systems]

    def solve(k):
        return plan.solve(*(cp.asarray(a) for a in systems[k])).get()

    first, second = _two_threads(lambda: solve(0), lambda: solve(1))
    for outcomes, ref in ((first, expected[0]), (second, expected[1])):
        for x in outcomes:
            np.testing.assert_allclose(x, ref, rtol=1e-12, atol=0)


@pytest.mark.parametrize("strategy", ["tiled", "interleaved"])
def test_first_layout_calls_from_two_threads(strategy):
    """A fresh plan's first ``to_layout`` builds the strategy's device arrays and layout: two
    threads asking at once get the same layout, and solving in it equals ``solve``."""
    import threading

    import cupy as cp

    from hinesbatch.tree.random_trees import random_tree

    batch = MonoBatch(random_tree(N_NODES, rng=5), N_CELLS)
    d, rhs = _values(batch, 11)
    plan = hinesbatch.plan(batch, backend="gpu", strategy=strategy)
    d_gpu, rhs_gpu = cp.asarray(d), cp.asarray(rhs)
    barrier, out, errors = threading.Barrier(2), [None, None], []

    def first_call(k):
        try:
            barrier.wait()
            out[k] = (plan.to_layout(d_gpu), plan.to_layout(rhs_gpu))
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=first_call, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    (d0, r0), (d1, r1) = out
    assert cp.array_equal(d0, d1) and cp.array_equal(r0, r1)
    plan.solve_layout(d0, r0)
    np.testing.assert_allclose(plan.from_layout(r0).get(), plan.solve(d, rhs), rtol=1e-12)
