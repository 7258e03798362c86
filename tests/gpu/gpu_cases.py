"""Shared helpers of the GPU tests: values, the serial reference, errors, real cells."""
from __future__ import annotations

import functools
from collections import defaultdict
import warnings
from pathlib import Path

import numpy as np
import pytest

from hinesbatch.tree.structure import MonoBatch

#: Relative tolerance per dtype (max over cells of ||x_c - ref_c|| / ||ref_c||).
TOLERANCE = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}
#: Errors measured in this test run: key -> [(error, case), ...] (printed by conftest).
ERRORS: dict[str, list] = defaultdict(list)

REAL = Path(__file__).resolve().parents[1] / "data" / "morphologies" / "real"
#: Real cells (file, nseg): the benchmark's six stand-ins for the papers' Table 1.
REAL_CELLS = (("mp_ma_40984_gc2.CNG.swc", 2), ("ko20x-07.CNG.swc", 1),
              ("Gad1-F-600000.CNG.swc", 9), ("morph_ca1_n120.swc", 1),
              ("C010398B-P2.CNG.swc", 8), ("eNGC-j140908b_cell1.swc", 1))


@functools.lru_cache(maxsize=None)
def real_cell(name: str, nseg: int):
    """The Hines structure of a repository morphology discretized with ``nseg``."""
    from hinesbatch.discretize import discretize

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return discretize(REAL / name, nseg=nseg).hines_structure()


def row_abs_sums(structure) -> np.ndarray:
    """Sum of |off-diagonals| of every row (values_shape)."""
    cell = structure.cell if isinstance(structure, MonoBatch) else structure
    parent = cell.parent
    child = np.flatnonzero(parent >= 0)
    sums = np.zeros(parent.size)
    sums[child] += np.abs(cell.lower[child])
    sums += np.bincount(parent[child], weights=np.abs(cell.u[child]), minlength=parent.size)
    return np.broadcast_to(sums, structure.values_shape) if isinstance(structure, MonoBatch) else sums


def hines_values(structure, rng, dtype):
    """``(d, rhs)`` like a real Hines step: ``d = sum|offdiag| * (1 + U(0.1, 1)) + U(0.1, 1)``."""
    sums = row_abs_sums(structure)
    shape = structure.values_shape
    d = sums * (1.0 + rng.uniform(0.1, 1.0, shape)) + rng.uniform(0.1, 1.0, shape)
    rhs = rng.standard_normal(shape) * (1.0 + sums)
    return d.astype(dtype), rhs.astype(dtype)


def serial_reference(structure, d, rhs) -> np.ndarray:
    """The serial CPU backend's solution in float64 of the given (already rounded) values."""
    import hinesbatch

    return hinesbatch.plan(structure, backend="serial").solve(
        np.asarray(d, np.float64), np.asarray(rhs, np.float64))


def cell_rel_error(structure, x, ref) -> float:
    """max over cells of ||x_c - ref_c|| / ||ref_c|| (inf if x holds non-finite values)."""
    x = np.asarray(x, np.float64)
    if not np.all(np.isfinite(x)):
        return float("inf")
    if isinstance(structure, MonoBatch):
        num = np.linalg.norm(x - ref, axis=1)
        den = np.linalg.norm(ref, axis=1)
    else:
        idx = structure.cell_offsets[:-1]
        num = np.sqrt(np.add.reduceat((x - ref) ** 2, idx))
        den = np.sqrt(np.add.reduceat(ref**2, idx))
    return float(np.max(num / np.maximum(den, np.finfo(float).tiny), initial=0.0))


def record_error(key: str, err: float, case: str) -> None:
    """Log an error for the end-of-run summary."""
    ERRORS[key].append((err, case))


def poisoned_solve(plan, structure, d, rhs, dtype, cp):
    """``plan``'s solution of CuPy copies of ``(d, rhs)`` as NumPy, after a solve of NaN inputs
    has poisoned every scratch buffer; asserts the result is a CuPy array of ``dtype`` and that
    the inputs are kept."""
    from hinesbatch.errors import SingularSystemError

    nan = cp.full(structure.values_shape, np.nan, dtype=dtype)
    with pytest.raises(SingularSystemError):  # poisons every scratch buffer with NaN
        plan.solve(nan, nan.copy(), check_finite=False)
    d_dev, rhs_dev = cp.asarray(d), cp.asarray(rhs)
    x = plan.solve(d_dev, rhs_dev)
    assert isinstance(x, cp.ndarray) and x.dtype == dtype
    assert np.array_equal(d_dev.get(), d) and np.array_equal(rhs_dev.get(), rhs)  # inputs kept
    return x.get()
