"""Shared cases, tolerances and checks for every Hines and tridiagonal backend.

The CPU tests parametrize over :func:`backend_params`; a backend that is registered but
cannot run here (the GPU without a device) is skipped with its reason, and non-CPU backends
carry the ``gpu`` marker. GPU tests can import this module (``tests/unit`` on ``sys.path``)
to run the same cases against the same reference.
"""
from __future__ import annotations

import glob
import os
import warnings

import numpy as np
import pytest
import scipy.sparse
import scipy.sparse.linalg

import hinesbatch
from hinesbatch import HinesStructure, MonoBatch
from hinesbatch.solvers import registry
from hinesbatch.tree import random_trees as rt

DTYPES = (np.float32, np.float64)

#: One table of tolerances, per dtype: ``forward`` bounds max|x - x_ref| / max|x_ref| against
#: a float64 reference solved from the same (rounded) inputs; ``residual`` bounds
#: max|A x - b| / (max|A| * max|x| + max|b|) in units of the dtype's machine epsilon.
#: Measured with the serial solver on HINES_CASES: forward <= 1.8e-7 (float32), 6.1e-16
#: (float64); residual <= 0.5 eps. The bounds leave room for other summation orders (GPU, FMA).
TOLERANCES = {
    np.dtype(np.float32): {"forward": 2e-5, "residual_eps": 16},
    np.dtype(np.float64): {"forward": 5e-14, "residual_eps": 16},
}

REAL_DIR = os.path.join(os.path.dirname(__file__), "..", "data", "morphologies", "real")


def backend_params(kind: str = "hines") -> list:
    """``pytest.param`` for every registered backend but ``auto``: skipped with the reason
    when unavailable here, marked ``gpu`` unless it is a CPU backend."""
    params = []
    for name in hinesbatch.backends(kind)[1:]:
        cls = registry.get(name, kind)
        ok, why = cls.available()
        marks = [] if cls.__module__.startswith("hinesbatch.solvers.cpu") else [pytest.mark.gpu]
        if not ok:
            marks.append(pytest.mark.skip(reason=f"backend {name!r} unavailable: {why}"))
        params.append(pytest.param(name, marks=marks, id=name))
    return params


def real_parents(name: str) -> np.ndarray:
    """Hines-order parents of a test morphology's SWC samples (one node per sample)."""
    from hinesbatch.morphology import read_swc

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the SWC reader's warnings are not under test here
        return read_swc(os.path.join(REAL_DIR, name)).parents


def real_names() -> list[str]:
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(REAL_DIR, "*.swc")))


#: Named structures for the Hines solvers: shapes that stress different paths.
HINES_CASES = {
    "single-node": lambda: rt.chain(1, rng=1),
    "chain-200": lambda: rt.chain(200, rng=2),
    "star-60": lambda: rt.star(60, rng=3),
    "binary-depth7": lambda: rt.binary_tree(7, rng=4),
    "binary-branches-of-5": lambda: rt.binary_tree(5, branch_length=5, rng=5),
    "random-400": lambda: rt.random_tree(400, rng=6),
    "random-nonsymmetric": lambda: rt.random_tree(150, rng=7, symmetric=False),
    "many-cells-mixed": lambda: rt.random_batch(40, rng=8, max_nodes=50),
    "many-cells-nonsymmetric": lambda: rt.random_batch(12, rng=9, symmetric=False),
    "empty-batch": lambda: HinesStructure(np.zeros(0, np.int64), np.zeros(0)),
    "mono-random": lambda: MonoBatch(rt.random_tree(80, rng=10), 9),
    "mono-single-node": lambda: MonoBatch(rt.chain(1, rng=11), 5),
    "mono-empty": lambda: MonoBatch(rt.random_tree(20, rng=12), 0),
    "mono-nonsymmetric": lambda: MonoBatch(rt.random_tree(50, rng=13, symmetric=False), 4),
    "real-h10": lambda: rt.structure_from_parents(real_parents("h10.CNG.swc"), rng=14),
    "real-purkinje": lambda: rt.structure_from_parents(real_parents("v_e_purk2.CNG.swc"), rng=15),
    "real-ca1-tiled": lambda: rt.structure_from_parents(
        real_parents("morph_ca1_n120.swc"), rng=16).tile(2),
    "real-mixed": lambda: HinesStructure.concatenate(
        rt.structure_from_parents(real_parents(n), rng=17)
        for n in ("1220882a.CNG.swc", "Gad1-F-600000.CNG.swc", "c91662.swc")),
}


def sparse_matrix(structure: HinesStructure, d) -> scipy.sparse.csr_matrix:
    """The batch's matrix as SciPy CSR (float64)."""
    n = structure.n_nodes
    child = np.flatnonzero(structure.parent >= 0)
    p = structure.parent[child]
    rows = np.concatenate([np.arange(n), p, child])
    cols = np.concatenate([np.arange(n), child, p])
    vals = np.concatenate([np.asarray(d, np.float64), structure.u[child], structure.lower[child]])
    return scipy.sparse.csr_matrix((vals, (rows, cols)), shape=(n, n))


def reference(structure, d, rhs) -> np.ndarray:
    """float64 reference: dense ``np.linalg.solve`` per cell for cells up to 600 nodes, else
    SciPy's sparse LU (SuperLU, with pivoting) — both independent of the Hines algorithm."""
    s = structure.cell if isinstance(structure, MonoBatch) else structure
    if s.cell_sizes.max(initial=0) <= 600:
        return rt.dense_solve(structure, d, rhs)
    if isinstance(structure, MonoBatch):
        return np.stack([reference(s, dk, bk) for dk, bk in zip(d, rhs)]) if len(d) else \
            np.zeros(structure.values_shape)
    a = sparse_matrix(s, d).tocsc()
    return scipy.sparse.linalg.spsolve(a, np.asarray(rhs, np.float64))


def assert_solution(structure, d, rhs, x, dtype) -> None:
    """``x`` solves the batch to the dtype's tolerances, checked two independent ways."""
    dtype = np.dtype(dtype)
    tol = TOLERANCES[dtype]
    assert x.shape == structure.values_shape and x.dtype == dtype
    assert np.all(np.isfinite(x))
    if x.size == 0:
        return
    d64, rhs64, x64 = (np.asarray(a, np.float64) for a in (d, rhs, x))
    ref = reference(structure, d64, rhs64)
    err = np.max(np.abs(x64 - ref)) / max(np.max(np.abs(ref)), np.finfo(np.float64).tiny)
    assert err <= tol["forward"], f"forward error {err:.3g} > {tol['forward']:.3g}"
    s = structure.expand() if isinstance(structure, MonoBatch) else structure
    a = sparse_matrix(s, d64.reshape(-1))
    res = np.max(np.abs(a @ x64.reshape(-1) - rhs64.reshape(-1)))
    scale = abs(a).max() * np.max(np.abs(x64)) + np.max(np.abs(rhs64))
    bound = tol["residual_eps"] * np.finfo(dtype).eps * scale
    assert res <= bound, f"residual {res:.3g} > {bound:.3g}"


def tridiagonal_reference(dl, d, du, rhs, lengths) -> np.ndarray:
    """float64 dense ``np.linalg.solve`` of every system's first ``lengths[k]`` rows."""
    x = np.array(rhs, dtype=np.float64, copy=True)
    for k, m in enumerate(lengths):
        if m:
            a = (np.diag(np.asarray(d[k, :m], np.float64))
                 + np.diag(np.asarray(dl[k, 1:m], np.float64), -1)
                 + np.diag(np.asarray(du[k, :m - 1], np.float64), 1))
            x[k, :m] = np.linalg.solve(a, np.asarray(rhs[k, :m], np.float64))
    return x


def dominant_tridiagonal(batch: int, n: int, *, rng, dtype=np.float64):
    """Random ``(dl, d, du, rhs)`` with ``|d| > |dl| + |du|`` in every row."""
    rng = np.random.default_rng(rng)
    dl = rng.uniform(-1, 1, (batch, n))
    du = rng.uniform(-1, 1, (batch, n))
    d = (np.abs(dl) + np.abs(du) + rng.uniform(0.1, 1.0, (batch, n))) * rng.choice([-1, 1], (batch, n))
    rhs = rng.standard_normal((batch, n))
    return tuple(a.astype(dtype) for a in (dl, d, du, rhs))
