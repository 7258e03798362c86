"""One plan solved from several threads at once: each call reports its own pivots.

A plan's scratch must belong to the call, not to the plan: two threads solving through one
plan, one of them with singular systems, must see exactly their own failures (every singular
solve raises naming its cell and node, no regular solve raises, every regular solution is
right).
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from two_threads import run_two_threads

import hinesbatch
from hinesbatch import HinesStructure, MonoBatch, SingularSystemError

N_SOLVES = 300
N_CELLS, N_NODES = 64, 100
BAD_CELL, BAD_NODE = 32, N_NODES - 1  # a leaf: the first pivot eliminated in that cell


def _chain() -> HinesStructure:
    return HinesStructure(np.arange(-1, N_NODES - 1), np.full(N_NODES, -1.0))


def _run_two_threads(solve_good, solve_bad):
    """Run ``N_SOLVES`` good and ``N_SOLVES`` singular solves in two threads started together.

    Returns (errors of the good thread, outcomes of the bad thread, solutions of the good
    thread); any other exception in a thread is re-raised here.
    """
    good, bad = run_two_threads(solve_good, solve_bad, times=N_SOLVES)
    good_errors = [x for x in good if isinstance(x, SingularSystemError)]
    good_x = [x for x in good if not isinstance(x, SingularSystemError)]
    return good_errors, bad, good_x


def _assert_own_failures(good_errors, bad_outcomes, good_x, expected, cell, node):
    assert not good_errors, (f"{len(good_errors)} of {N_SOLVES} regular solves raised, e.g. "
                             f"{good_errors[0]}")
    missed = [x for x in bad_outcomes if not isinstance(x, SingularSystemError)]
    assert not missed, f"{len(missed)} of {N_SOLVES} singular solves returned without an error"
    assert {(e.cell, e.node) for e in bad_outcomes} == {(cell, node)}
    assert len(good_x) == N_SOLVES
    for x in good_x:
        np.testing.assert_array_equal(x, expected)


@pytest.mark.parametrize(("backend", "options", "mono"), [
    ("multicore", {}, True),
    ("multicore", {}, False),
    ("multicore", {"lockstep": 1}, True),
    ("serial", {"lockstep": 4}, True),
    ("serial", {}, False),
], ids=["multicore-mono", "multicore-cells", "multicore-lockstep1", "serial-lockstep4",
        "serial-cells"])
def test_hines_plan_shared_by_two_threads(backend, options, mono):
    cell = _chain()
    structure = MonoBatch(cell, N_CELLS) if mono else cell.tile(N_CELLS)
    plan = hinesbatch.plan(structure, backend, **options)
    rng = np.random.default_rng(7)
    d = rng.uniform(3.0, 4.0, structure.values_shape)
    rhs = rng.uniform(-1.0, 1.0, structure.values_shape)
    d_bad = d.copy()
    d_bad.reshape(N_CELLS, N_NODES)[BAD_CELL, BAD_NODE] = 0.0
    expected = plan.solve(d, rhs)

    def solve(dd):
        dw, rw = dd.copy(), rhs.copy()
        return plan.solve(dw, rw, overwrite=True, check_finite=False)

    outcome = _run_two_threads(lambda: solve(d), lambda: solve(d_bad))
    _assert_own_failures(*outcome, expected, BAD_CELL, BAD_NODE)


@pytest.mark.parametrize("backend", ["serial", "multicore"])
@pytest.mark.parametrize("variable", [False, True], ids=["equal", "lengths"])
def test_tridiagonal_plan_shared_by_two_threads(backend, variable):
    batch, n = N_CELLS, N_NODES
    lengths = np.full(batch, n) if variable else None
    plan = hinesbatch.plan_tridiagonal(n, batch, lengths=lengths, backend=backend)
    rng = np.random.default_rng(8)
    dl, du = rng.uniform(-1.0, 0.0, (2, batch, n))
    d = rng.uniform(3.0, 4.0, (batch, n))
    rhs = rng.uniform(-1.0, 1.0, (batch, n))
    d_bad = d.copy()
    d_bad[BAD_CELL, 0] = 0.0  # the first pivot of that system
    expected = plan.solve(dl, d, du, rhs)

    def solve(dd):
        return plan.solve(dl, dd.copy(), du, rhs.copy(), overwrite=True, check_finite=False)

    outcome = _run_two_threads(lambda: solve(d), lambda: solve(d_bad))
    _assert_own_failures(*outcome, expected, BAD_CELL, 0)


_WORKQUEUE_SCRIPT = """
import os
import subprocess
import sys
import threading
import numpy as np
import hinesbatch
from hinesbatch import HinesStructure, MonoBatch

cell = HinesStructure(np.arange(-1, 99), np.full(100, -1.0))
plans = [hinesbatch.plan(MonoBatch(cell, 64), "multicore"),
         hinesbatch.plan_tridiagonal(100, 64, backend="multicore")]
d, rhs = np.full((64, 100), 4.0), np.ones((64, 100))

def work(k):
    for _ in range(100):
        if k == 0:
            plans[0].solve(d, rhs)
        else:
            plans[1].solve(-np.ones_like(d), d, -np.ones_like(d), rhs)

threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
import numba
print("layer", numba.threading_layer())
"""


def test_workqueue_layer_takes_several_threads(tmp_path):
    """Numba's workqueue layer aborts on parallel kernels launched from two threads at once;
    the multicore backends then run their kernels one at a time."""
    env = dict(os.environ, NUMBA_THREADING_LAYER="workqueue")
    script = tmp_path / "two_threads.py"
    script.write_text(_WORKQUEUE_SCRIPT)
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, check=False,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "layer workqueue" in done.stdout
