"""``tiled``'s native layout for shared structures: values in slot order, moved by bulk copies
(``hines_tiled_slots``). Its solutions must be bit for bit those of the canonical kernel (the
same sweeps), on random trees and real cells, for every width the slot-order kernel is built
for, with several tiles per group (the mbarriers' phases flip), padding words set to NaN
(the dummy slots they land on are set again after every copy), and shared memory poisoned
by a solve of NaN values first."""
from __future__ import annotations

import numpy as np
import pytest

import hinesbatch
from hinesbatch.errors import SingularSystemError
from hinesbatch.solvers.gpu import layout_solver
from hinesbatch.solvers.gpu.kernel_build import SLOT_VARIANTS
from hinesbatch.tree import random_trees as rt
from hinesbatch.tree.structure import MonoBatch

from gpu_cases import TOLERANCE, cell_rel_error, hines_values, real_cell, serial_reference

pytestmark = pytest.mark.gpu


def _native(impl, a, dtype, cp, pad=np.nan):
    """``a`` in the native layout, its padding words set to ``pad``."""
    n = a.shape[1]
    out = impl.to_layout(cp.asarray(a, dtype=dtype))
    slots = impl.strategies[0].slot_plan().schedule.slot[:n]
    padding = np.setdiff1d(np.arange(out.shape[1]), slots)
    out[:, cp.asarray(padding)] = pad
    return out


def _solve_native(plan, dtype, d, rhs, cp):
    """The solution of ``(d, rhs)`` solved in the native layout, as NumPy (canonical), after
    a native solve of NaN values has left NaN in shared memory."""
    impl = layout_solver(plan, dtype)
    nan = np.full(d.shape, np.nan, dtype)
    poisoned = _native(impl, nan, dtype, cp)
    with pytest.raises(SingularSystemError):  # NaN pivots, checked as for canonical values
        impl.solve_layout(_native(impl, nan, dtype, cp), poisoned)
    assert bool(cp.isnan(impl.from_layout(poisoned)).all())
    dn, rn = _native(impl, d, dtype, cp), _native(impl, rhs, dtype, cp)
    impl.solve_layout(dn, rn)
    return impl, impl.from_layout(rn).get()


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("lanes,per_lane", SLOT_VARIANTS)
def test_slot_order_matches_the_canonical_kernel(lanes, per_lane, dtype, seed, cp):
    rng = np.random.default_rng(seed)
    cell = rt.random_tree(int(rng.integers(30, 400)), rng=rng,
                          branch_probability=float(rng.uniform(0.1, 0.9)))
    # thousands of cells: most groups solve several tiles; an odd count: a partial last tile
    structure = MonoBatch(cell, int(rng.integers(2000, 6000)) | 1)
    d, rhs = hines_values(structure, rng, dtype)
    plan = hinesbatch.plan(structure, backend="gpu", strategy="tiled", lanes=lanes,
                           batch=lanes * per_lane)
    strategy = layout_solver(plan, dtype).strategies[0]
    assert not strategy.native_is_canonical
    impl, x = _solve_native(plan, dtype, d, rhs, cp)
    canonical = plan.solve(cp.asarray(d), cp.asarray(rhs)).get()
    case = f"{cell.n_nodes} nodes x {structure.n_cells}, seed {seed}: {impl.describe()}"
    assert np.array_equal(x, canonical), case
    assert cell_rel_error(structure, x, serial_reference(structure, d, rhs)) \
        < TOLERANCE[np.dtype(dtype)], case


def test_real_cells_in_slot_order(seed, cp):
    rng = np.random.default_rng(seed)
    for name, nseg, options in (("morph_ca1_n120.swc", 1, {}),  # 8 lanes, several groups
                                ("morph_ca1_n120.swc", 1, {"groups": 1}),
                                ("morph_ca1_n120.swc", 8, {})):  # 1405 nodes, 32 lanes
        structure = MonoBatch(real_cell(name, nseg), 3001)
        d, rhs = hines_values(structure, rng, np.float64)
        plan = hinesbatch.plan(structure, backend="gpu", strategy="tiled", **options)
        impl, x = _solve_native(plan, np.float64, d, rhs, cp)
        assert "native layout: slot order" in impl.describe()
        ref = serial_reference(structure, d, rhs)
        assert cell_rel_error(structure, x, ref) < 1e-12, \
            f"{name} nseg={nseg} {options} seed {seed}"


@pytest.mark.parametrize("reroot", [True, False], ids=["centre", "root"])
def test_slot_order_from_the_centre_or_the_root(reroot, seed, cp):
    """A schedule that eliminates the cell from its centre keeps its slots in the cell's
    numbering: the native layout, the canonical kernel and the serial solver agree."""
    rng = np.random.default_rng(seed)
    structure = MonoBatch(real_cell("Gad1-F-600000.CNG.swc", 9), 2001)
    d, rhs = hines_values(structure, rng, np.float64)
    plan = hinesbatch.plan(structure, backend="gpu", strategy="tiled", reroot=reroot)
    impl, x = _solve_native(plan, np.float64, d, rhs, cp)
    assert impl.strategies[0].slot_plan().schedule.rerooted == reroot
    assert np.array_equal(x, plan.solve(cp.asarray(d), cp.asarray(rhs)).get())
    assert cell_rel_error(structure, x, serial_reference(structure, d, rhs)) < 1e-12


def test_native_layout_is_canonical_without_the_slot_kernel(cp):
    structure = MonoBatch(rt.random_tree(50, rng=1), 300)
    for options in ({"lanes": 2, "batch": 2}, {"buffers": 2}):
        plan = hinesbatch.plan(structure, backend="gpu", strategy="tiled", **options)
        impl = layout_solver(plan)
        assert impl.strategies[0].native_is_canonical, options
        assert impl.layout_shapes() == [structure.values_shape]
        assert "slot order" not in impl.describe()


def test_native_layout_shape_and_a_misaligned_view(cp):
    structure = MonoBatch(rt.random_tree(61, rng=2), 500)  # 61 nodes: a padded pitch
    rng = np.random.default_rng(3)
    d, rhs = hines_values(structure, rng, np.float64)
    plan = hinesbatch.plan(structure, backend="gpu", strategy="tiled")
    impl = layout_solver(plan)
    shape = impl.layout_shapes()[0]
    assert shape == (500, 62)
    dn, rn = impl.to_layout(cp.asarray(d)), impl.to_layout(cp.asarray(rhs))
    assert np.array_equal(impl.from_layout(dn).get(), d)  # the layout round trip
    flat = cp.empty(dn.size + 1, dn.dtype)
    shifted = flat[1:].reshape(shape)  # C-contiguous, 8 bytes past 16
    shifted[...] = dn
    with pytest.raises(ValueError, match="16 bytes"):
        impl.solve_layout(shifted, rn)
