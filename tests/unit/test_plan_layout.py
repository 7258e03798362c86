"""``Plan.to_layout`` / ``Plan.solve_layout`` / ``Plan.from_layout`` on the CPU backends, whose
native layout is the canonical order, and the GPU backend's delegation (a stand-in backend)."""
import numpy as np
import pytest

import hinesbatch
from hinesbatch import HinesStructure, MonoBatch
from hinesbatch.errors import SingularSystemError
from hinesbatch.tree import random_trees as rt


def _batches():
    rng = np.random.default_rng(7)
    return {"per-cell": rt.random_batch(6, rng=rng, max_nodes=25),
            "mono": MonoBatch(rt.random_tree(20, rng=rng), 5)}


@pytest.mark.parametrize("backend", ["serial", "multicore"])
@pytest.mark.parametrize("kind", ["per-cell", "mono"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_solve_layout_equals_solve(backend, kind, dtype):
    structure = _batches()[kind]
    d, rhs = rt.diagonally_dominant(structure, rng=3)
    d, rhs = d.astype(dtype), rhs.astype(dtype)
    plan = hinesbatch.plan(structure, backend=backend)
    x = plan.solve(d, rhs)
    dn, rn = plan.to_layout(d), plan.to_layout(rhs)
    assert dn.dtype == dtype and dn.flags.c_contiguous and dn.shape == structure.values_shape
    assert not np.shares_memory(dn, d) and np.array_equal(dn, d)  # a copy, canonical order
    out = plan.solve_layout(dn, rn)
    assert out is rn
    back = plan.from_layout(rn)
    assert back.dtype == dtype and not np.shares_memory(back, rn)
    np.testing.assert_array_equal(back, x)


def test_to_layout_converts_to_the_asked_dtype_and_checks_the_shape():
    structure = _batches()["per-cell"]
    plan = hinesbatch.plan(structure, backend="serial")
    a = np.arange(structure.n_nodes)  # integers: float64 by default
    assert plan.to_layout(a).dtype == np.float64
    assert plan.to_layout(a, dtype=np.float32).dtype == np.float32
    assert plan.to_layout(a.astype(np.float32)).dtype == np.float32
    with pytest.raises(ValueError, match="a has shape"):
        plan.to_layout(np.zeros(structure.n_nodes + 1))
    with pytest.raises(TypeError, match="float32 or float64"):
        plan.to_layout(a, dtype=np.int32)


def test_solve_layout_refuses_arrays_not_of_the_layout():
    structure = _batches()["mono"]
    plan = hinesbatch.plan(structure, backend="serial")
    d, rhs = rt.diagonally_dominant(structure, rng=1)
    dn, rn = plan.to_layout(d), plan.to_layout(rhs)
    with pytest.raises(ValueError, match="rhs must be a writeable C-contiguous numpy array"):
        plan.solve_layout(dn, np.asfortranarray(rn))
    with pytest.raises(ValueError, match="d must be a writeable"):
        plan.solve_layout(dn[:, :-1], rn)
    with pytest.raises(ValueError, match="d and rhs must not share memory"):
        plan.solve_layout(rn, rn)


def test_solve_layout_reports_a_singular_pivot():
    structure = _batches()["per-cell"]
    plan = hinesbatch.plan(structure, backend="serial")
    d, rhs = rt.diagonally_dominant(structure, rng=2)
    d[structure.cell_offsets[3]] = 0.0
    dn, rn = plan.to_layout(d), plan.to_layout(rhs)
    with pytest.raises(SingularSystemError):
        plan.solve_layout(dn, rn)


class _LayoutBackend:
    """A stand-in for a backend with a native layout of its own (the GPU backend's three
    methods): reversed node order, recorded calls."""

    name, kind, xp = "stand-in", "hines", np
    calls: list = []

    def __init__(self, structure, *, dtype):
        self.structure, self.dtype = structure, np.dtype(dtype)

    def to_layout(self, a):
        self.calls.append("to")
        return np.ascontiguousarray(a[..., ::-1])

    def from_layout(self, native):
        self.calls.append("from")
        return np.ascontiguousarray(native[..., ::-1])

    def solve_layout(self, d, rhs):
        self.calls.append("solve")
        return rhs

    def solve(self, d, rhs):  # pragma: no cover - not used here
        raise AssertionError("solve_layout must not fall back to solve")

    def describe(self):
        return "stand-in"


def test_a_backend_with_its_own_layout_gets_the_calls(monkeypatch):
    from hinesbatch.solvers import registry

    monkeypatch.setattr(registry, "resolve", lambda name, kind, subject: (_LayoutBackend, "test"))
    structure = HinesStructure([-1, 0, 1], [0.0, -1.0, -1.0])
    plan = hinesbatch.plan(structure, backend="stand-in")
    _LayoutBackend.calls.clear()
    native = plan.to_layout(np.array([1.0, 2.0, 3.0]))
    assert native.tolist() == [3.0, 2.0, 1.0]
    assert plan.solve_layout(native.copy(), native) is native
    assert plan.from_layout(native).tolist() == [1.0, 2.0, 3.0]
    assert _LayoutBackend.calls == ["to", "solve", "from"]
