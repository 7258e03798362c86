"""``HinesStructure.cells`` and ``MonoBatch.cells``: a range of cells as a batch of its own,
the one way the package cuts a batch (device parts, host streaming chunks)."""
import numpy as np
import pytest

import hinesbatch
from hinesbatch import HinesStructure, MonoBatch
from hinesbatch.tree import random_trees as rt


def _batch(seed: int, symmetric: bool) -> HinesStructure:
    rng = np.random.default_rng(seed)
    batch = rt.random_batch(int(rng.integers(1, 12)), rng=rng, max_nodes=40)
    if symmetric:
        return batch
    return HinesStructure(batch.parent, batch.u, batch.u * rng.uniform(0.5, 2.0, batch.n_nodes),
                          batch.cell_offsets)


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("seed", range(8))
def test_every_range_is_the_concatenation_of_its_cells(seed, symmetric):
    batch = _batch(seed, symmetric)
    rng = np.random.default_rng(100 + seed)
    for _ in range(5):
        a, b = sorted(rng.integers(0, batch.n_cells + 1, size=2).tolist())
        part = batch.cells(a, b)
        assert isinstance(part, HinesStructure) and part.n_cells == b - a
        ref = HinesStructure.concatenate([batch.cell(c) for c in range(a, b)])
        assert np.array_equal(part.parent, ref.parent)
        assert np.array_equal(part.cell_offsets, ref.cell_offsets)
        assert np.array_equal(part.u, ref.u) and np.array_equal(part.lower, ref.lower)
        assert part.symmetric == batch.symmetric
        lo, hi = batch.cell_offsets[a], batch.cell_offsets[b]
        assert part.n_nodes == hi - lo


def test_solving_a_range_solves_the_same_rows_of_the_batch():
    batch = _batch(5, symmetric=False)
    d, rhs = rt.diagonally_dominant(batch, rng=1)
    x = hinesbatch.solve(batch, d, rhs, backend="serial")
    a, b = 1, batch.n_cells - 1
    lo, hi = batch.cell_offsets[a], batch.cell_offsets[b]
    part = hinesbatch.solve(batch.cells(a, b), d[lo:hi], rhs[lo:hi], backend="serial")
    np.testing.assert_array_equal(part, x[lo:hi])


def test_full_and_empty_ranges():
    batch = _batch(2, symmetric=True)
    whole = batch.cells(0, batch.n_cells)
    assert np.array_equal(whole.parent, batch.parent)
    assert np.array_equal(whole.cell_offsets, batch.cell_offsets)
    for k in (0, batch.n_cells):
        empty = batch.cells(k, k)
        assert (empty.n_cells, empty.n_nodes) == (0, 0) and empty.cell_offsets.tolist() == [0]


def test_mono_batch_ranges_share_the_cell():
    mono = MonoBatch(rt.random_tree(15, rng=3), 9)
    part = mono.cells(2, 7)
    assert isinstance(part, MonoBatch) and part.n_cells == 5 and part.cell is mono.cell
    assert mono.cells(4, 4).n_cells == 0 and mono.cells(0, 9).n_cells == 9


@pytest.mark.parametrize("kind", ["per-cell", "mono"])
@pytest.mark.parametrize(("a", "b"), [(-1, 2), (0, 6), (3, 2), (6, 6)])
def test_out_of_range_is_refused(kind, a, b):
    batch = _batch(1, symmetric=True)
    batch = batch.cells(0, min(5, batch.n_cells)) if kind == "per-cell" else \
        MonoBatch(batch.cell(0), 5)
    if batch.n_cells < 5:
        batch = HinesStructure.concatenate([batch] * 5).cells(0, 5)
    with pytest.raises(IndexError, match=f"cells {a}:{b} are not a range within the batch of 5"):
        batch.cells(a, b)


def test_indices_must_be_ints():
    mono = MonoBatch(rt.random_tree(5, rng=1), 4)
    with pytest.raises(TypeError, match="start must be an int, got float"):
        mono.cells(1.0, 2)
    with pytest.raises(TypeError, match="stop must be an int, got bool"):
        mono.cells(0, True)


@pytest.mark.parametrize("n_parts", [1, 2, 3, 7, 20])
def test_device_parts_are_ranges_of_cells(n_parts):
    """The GPU backend's parts (host side, no CuPy) hold ``batch.cells(a, b)`` and derive the
    kernels' arrays from it: local parents, part-relative offsets, sizes, views of values."""
    from hinesbatch.solvers.gpu.device_parts import split

    batch = _batch(4, symmetric=False)
    parts = split(batch, n_parts)
    assert sum(p.n_cells for p in parts) == batch.n_cells
    d = np.arange(batch.n_nodes, dtype=np.float64)
    for p in parts:
        a = p.cell_start
        ref = batch.cells(a, a + p.n_cells)
        assert np.array_equal(p.structure.parent, ref.parent) and not p.mono
        assert np.array_equal(p.offsets, ref.cell_offsets) and p.sizes.dtype == np.int32
        local = ref.parent - np.repeat(ref.cell_offsets[:-1], ref.cell_sizes)
        assert np.array_equal(p.parent, np.where(ref.parent >= 0, local, -1))
        assert p.l is not p.u and not p.symmetric
        np.testing.assert_array_equal(p.canonical(d), d[p.node_start:p.node_start + p.n_nodes])
    mono = split(MonoBatch(batch.cell(0), 10), 3)
    assert [p.n_cells for p in mono] == [3, 4, 3] and all(p.cell is mono[0].cell for p in mono)
    assert mono[1].node_start == 3 * batch.cell(0).n_nodes and mono[1].parent is None
