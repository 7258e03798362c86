"""``tiled`` on a MonoBatch through an identity member list (``listed=True``, the kernel
variant ``grouped`` runs): bit for bit the plain kernel's solution, on poisoned buffers, and
the same failing cell and node (docs/decisions/011-tiled-listed-one-group.md: faster on
one-group blocks; :data:`SharedTiles.LISTED_ONE_GROUP` makes it the default there)."""
from __future__ import annotations

import numpy as np
import pytest

import hinesbatch
from hinesbatch.errors import SingularSystemError
from hinesbatch.solvers.gpu import layout_solver
from hinesbatch.solvers.gpu.strategies.shared_tiles import SharedTiles
from hinesbatch.tree import random_trees as rt
from hinesbatch.tree.structure import MonoBatch

from gpu_cases import (REAL_CELLS, cell_rel_error, hines_values, poisoned_solve, real_cell,
                       serial_reference)

pytestmark = pytest.mark.gpu


def _batches():
    yield "binary", MonoBatch(rt.binary_tree(2, branch_length=170, rng=2), 256)  # one group
    yield "binary-groups", MonoBatch(rt.binary_tree(2, branch_length=170, rng=2), 2560)
    for name, nseg in REAL_CELLS:
        yield name, MonoBatch(real_cell(name, nseg), 257)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("label,batch", list(_batches()),
                         ids=lambda v: v if isinstance(v, str) else "")
def test_listed_is_bitwise_the_plain_kernel(label, batch, dtype, seed, cp):
    rng = np.random.default_rng(seed)
    d, rhs = hines_values(batch, rng, dtype)
    plain = hinesbatch.plan(batch, backend="gpu", strategy="tiled", listed=False)
    listed = hinesbatch.plan(batch, backend="gpu", strategy="tiled", listed=True)
    assert layout_solver(listed, dtype).strategies[0].tiles.listed
    x = poisoned_solve(listed, batch, d, rhs, dtype, cp)
    assert np.array_equal(x, poisoned_solve(plain, batch, d, rhs, dtype, cp)), label
    assert cell_rel_error(batch, x, serial_reference(batch, d, rhs)) < (
        1e-12 if dtype == np.float64 else 1e-5)


def test_listed_reports_the_serial_solvers_failing_cell(seed, cp):
    rng = np.random.default_rng(seed)
    batch = MonoBatch(real_cell("morph_ca1_n120.swc", 1), 300)
    d, rhs = hines_values(batch, rng, np.float64)
    leaves = np.setdiff1d(np.arange(batch.cell.n_nodes), batch.cell.parent[batch.cell.parent >= 0])
    for c in np.sort(rng.choice(batch.n_cells, 3, replace=False)):
        d[c, rng.choice(leaves)] = 0.0  # a leaf's pivot is its d
    with pytest.raises(SingularSystemError) as cpu:
        hinesbatch.plan(batch, backend="serial").solve(d, rhs)
    with pytest.raises(SingularSystemError) as gpu:
        hinesbatch.plan(batch, backend="gpu", strategy="tiled", listed=True).solve(
            cp.asarray(d), cp.asarray(rhs))
    assert (gpu.value.cell, gpu.value.node) == (cpu.value.cell, cpu.value.node)


def test_listed_by_default_on_one_group_blocks(monkeypatch, cp):
    """With LISTED_ONE_GROUP on: listed exactly where the arrangement has one group (256
    binary cells: 32 one-group blocks on an H100 or H200; 2,560: groups of three)."""
    monkeypatch.setattr(SharedTiles, "LISTED_ONE_GROUP", True)
    seen = set()
    for n in (256, 2560):
        plan = hinesbatch.plan(MonoBatch(rt.binary_tree(2, branch_length=170, rng=2), n),
                               backend="gpu", strategy="tiled")
        tiles = layout_solver(plan).strategies[0].tiles
        assert tiles.listed == (tiles.groups == 1), plan.describe()
        seen.add(tiles.listed)
    assert seen == {True, False}
