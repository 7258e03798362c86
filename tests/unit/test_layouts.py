"""Flat, Full-Interleaved and Block-Interleaved packing: exact round trips, the index rule
of the papers, and the padding rule (padding never changes the real cells' solution)."""
from __future__ import annotations

import numpy as np
import pytest

import hinesbatch
from hinesbatch import HinesStructure, MonoBatch
from hinesbatch.tree import (LAYOUTS, PAD_VALUES, block_interleaved, flat, interleaved,
                             local_parents)
from hinesbatch.tree import random_trees as rt

CELL_COUNTS = [0, 1, 7, 33, 129, 257]  # odd counts, none divisible by 32 or 128 but 0
BLOCK_SIZES = [1, 32, 128]


def _layouts(structure):
    yield flat(structure)
    yield interleaved(structure)
    for bs in BLOCK_SIZES:
        yield block_interleaved(structure, bs)


def _where(layout, c, j):
    """Index of element ``j`` of cell ``c`` in a packed array, by the papers' definition."""
    if layout.kind == "interleaved":
        return (j, c)
    bs = layout.block_size
    return (c // bs, j, c % bs)


def _distinct_values(shape, dtype):
    return (np.arange(int(np.prod(shape))) + 1).astype(dtype).reshape(shape) / 7


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("n_cells", CELL_COUNTS)
def test_mono_round_trip_and_index_rule(n_cells, dtype):
    mono = MonoBatch(rt.random_tree(5, rng=80), n_cells)
    values = _distinct_values(mono.values_shape, dtype).astype(dtype)
    for layout in _layouts(mono):
        packed = layout.pack(values, fill=-3)
        assert packed.dtype == values.dtype
        back = layout.unpack(packed)
        assert back.shape == mono.values_shape
        np.testing.assert_array_equal(back, values)
        if layout.kind == "flat":
            assert packed is values, "Flat is the canonical storage itself"
            continue
        expected = np.full(layout.shape, -3, dtype=values.dtype)
        for c in range(n_cells):
            for j in range(5):
                expected[_where(layout, c, j)] = values[c, j]
        np.testing.assert_array_equal(packed, expected)


def test_mono_shapes_follow_the_papers():
    mono = MonoBatch(rt.chain(10, rng=81), 33)
    assert flat(mono).shape == (33, 10)
    assert interleaved(mono).shape == (10, 33)
    assert block_interleaved(mono, 32).shape == (2, 10, 32)
    assert block_interleaved(mono, 1).shape == (33, 10, 1)
    values = _distinct_values((33, 10), np.float64)
    np.testing.assert_array_equal(interleaved(mono).pack(values), values.T)


@pytest.mark.parametrize("n_cells", CELL_COUNTS)
def test_different_sizes_round_trip_and_index_rule(n_cells):
    batch = rt.random_batch(n_cells, rng=82, max_nodes=9)
    values = _distinct_values((batch.n_nodes,), np.float64)
    sizes, offsets = batch.cell_sizes, batch.cell_offsets
    for layout in _layouts(batch):
        packed = layout.pack(values, fill=np.nan)  # poison: padding must stay NaN
        np.testing.assert_array_equal(layout.unpack(packed), values)
        if layout.kind == "flat":
            continue
        assert layout.n == (sizes.max() if n_cells else 0)
        real = np.zeros(layout.shape, dtype=bool)
        for c in range(n_cells):
            for j in range(sizes[c]):
                assert packed[_where(layout, c, j)] == values[offsets[c] + j]
                real[_where(layout, c, j)] = True
        assert np.all(np.isnan(packed[~real])), "every padding entry gets the fill value"


def test_equal_size_hines_structure_uses_the_same_layout_as_mono():
    cell = rt.random_tree(6, rng=83)
    mono = MonoBatch(cell, 41)
    tiled = mono.expand()
    values = _distinct_values(mono.values_shape, np.float64)
    for bs in BLOCK_SIZES:
        np.testing.assert_array_equal(block_interleaved(tiled, bs).pack(values.reshape(-1)),
                                      block_interleaved(mono, bs).pack(values))


def test_fill_per_row_and_parent_padding_rule():
    batch = HinesStructure.concatenate([rt.chain(3, rng=84), rt.star(5, rng=85)])
    layout = block_interleaved(batch, 4)
    parents = layout.pack_parents(batch)
    assert parents.dtype == np.int32 and parents.shape == (1, 5, 4)
    # cell 0: chain [-1, 0, 1] then padding 2, 3; cell 1: star; cells 2, 3: padding cells
    np.testing.assert_array_equal(parents[0, :, 0], [-1, 0, 1, 2, 3])
    np.testing.assert_array_equal(parents[0, :, 1], [-1, 0, 0, 0, 0])
    np.testing.assert_array_equal(parents[0, :, 2], [-1, 0, 1, 2, 3])
    np.testing.assert_array_equal(parents[0, :, 3], [-1, 0, 1, 2, 3])
    np.testing.assert_array_equal(local_parents(batch), [-1, 0, 1, -1, 0, 0, 0, 0])


def test_local_parents_of_mono_batch():
    cell = rt.random_tree(7, rng=86)
    np.testing.assert_array_equal(local_parents(MonoBatch(cell, 3)),
                                  np.tile(cell.parent, (3, 1)))


@pytest.mark.parametrize("make", [interleaved, lambda s: block_interleaved(s, 3)],
                         ids=["interleaved", "block3"])
def test_padded_systems_solve_to_the_same_answer(make):
    """Unpacking the padded systems lane by lane gives Hines systems whose solution, cut to
    the real nodes, equals the original batch's bit for bit."""
    batch = rt.random_batch(10, rng=87, max_nodes=12, symmetric=False)
    d, rhs = rt.diagonally_dominant(batch, rng=88)
    layout = make(batch)
    lanes = [layout.pack_parents(batch), layout.pack(batch.u, fill=PAD_VALUES["u"]),
             layout.pack(batch.lower, fill=PAD_VALUES["l"]), layout.pack(d, fill=PAD_VALUES["d"]),
             layout.pack(rhs, fill=PAD_VALUES["rhs"])]
    as_cells = [np.moveaxis(a.reshape(-1, layout.n, a.shape[-1]), 1, 2).reshape(-1, layout.n)
                for a in lanes]  # (padded cells, n)
    parent, u, lower, dp, rp = as_cells
    padded = HinesStructure.concatenate(HinesStructure(p, uu, ll)
                                        for p, uu, ll in zip(parent, u, lower))
    x_padded = hinesbatch.solve(padded, dp.reshape(-1), rp.reshape(-1), backend="serial")
    back = layout.unpack(np.moveaxis(x_padded.reshape(-1, layout.shape[-1], layout.n), 1, 2)
                         .reshape(layout.shape))
    np.testing.assert_array_equal(back, hinesbatch.solve(batch, d, rhs, backend="serial"))


def test_errors_name_the_problem():
    mono = MonoBatch(rt.chain(4, rng=89), 5)
    with pytest.raises(ValueError, match=r"values has shape \(4, 5\) but the layout needs \(5, 4\)"):
        interleaved(mono).pack(np.zeros((4, 5)))
    with pytest.raises(ValueError, match=r"packed has shape"):
        block_interleaved(mono, 2).unpack(np.zeros((2, 4, 2)))
    with pytest.raises(ValueError, match="block_size must be >= 1"):
        block_interleaved(mono, 0)
    with pytest.raises(TypeError, match="block_size must be an int"):
        block_interleaved(mono, 2.0)
    assert set(LAYOUTS) == {"flat", "interleaved", "block_interleaved"}
    assert "block_size=2" in repr(block_interleaved(mono, 2))
