"""Structures own their memory, refuse indices out of range, and stay read-only and valid
through views of the caller's buffers, copies and pickles."""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import hinesbatch
from hinesbatch import HinesStructure, MonoBatch
from hinesbatch.solvers.tridiagonal import TridiagonalShape
from hinesbatch.tree.branches import branches


def _readonly_view(buf: np.ndarray) -> np.ndarray:
    view = buf.view()
    view.flags.writeable = False
    return view


def _two_cells():
    """Cells {0, 1} and {2, 3, 4}; a diagonally dominant system and its solution."""
    parent = np.array([-1, 0, -1, 2, 3])
    u = np.array([0.0, -1.0, 0.0, -1.0, -1.0])
    d, rhs = np.full(5, 4.0), np.arange(1.0, 6.0)
    return parent, u, d, rhs


# -- indices out of range are refused before any cast ---------------------------------------
@pytest.mark.parametrize(("parent", "message"), [
    (np.array([-1, 0, 2**32 + 1]), r"parent\[2\] = 4294967297 is outside -1\.\.2"),
    (np.array([-1, 0, 2**32]), r"parent\[2\] = 4294967296 is outside -1\.\.2"),
    (np.array([0, 0, 2**64 - 1], dtype=np.uint64),
     r"parent\[2\] = 18446744073709551615 is outside -1\.\.2"),
    (np.array([-1, 0, -2**31 - 1]), r"parent\[2\] = -2147483649 is outside -1\.\.2"),
    (np.array([-1, -3, 0], dtype=np.int8), r"parent\[1\] = -3 is outside -1\.\.2"),
])
def test_parents_out_of_range_are_refused(parent, message):
    with pytest.raises(ValueError, match=message):
        HinesStructure(parent, [0.0, -1.0, -1.0])


@pytest.mark.parametrize(("offsets", "message"), [
    (np.array([0, 2**32 + 2, 5]), r"cell_offsets\[1\] = 4294967298 is outside 0\.\.5"),
    (np.array([0, 2**64 - 1, 5], dtype=np.uint64),
     r"cell_offsets\[1\] = 18446744073709551615 is outside 0\.\.5"),
    (np.array([0, -3, 5]), r"cell_offsets\[1\] = -3 is outside 0\.\.5"),
])
def test_cell_offsets_out_of_range_are_refused(offsets, message):
    parent, u, _, _ = _two_cells()
    with pytest.raises(ValueError, match=message):
        HinesStructure(parent, u, cell_offsets=offsets)


def test_cell_offsets_must_be_integers():
    parent, u, _, _ = _two_cells()
    with pytest.raises(TypeError, match="cell_offsets must hold integers, got dtype float64"):
        HinesStructure(parent, u, cell_offsets=[0.0, 2.7, 5.0])


# -- the caller's buffers ----------------------------------------------------------------------
def test_read_only_view_of_a_writeable_buffer_is_copied():
    parent, u, d, rhs = _two_cells()
    ubuf, pbuf = u.copy(), parent.astype(np.int32)
    s = HinesStructure(_readonly_view(pbuf), _readonly_view(ubuf), _readonly_view(ubuf))
    x = hinesbatch.solve(s, d, rhs, backend="serial")
    ubuf[1:] = -1000.0
    pbuf[1:] = 0
    assert s.u.tolist() == u.tolist() and s.lower.tolist() == u.tolist()
    assert s.parent.tolist() == parent.tolist()
    np.testing.assert_array_equal(hinesbatch.solve(s, d, rhs, backend="serial"), x)


def test_cell_offsets_view_is_copied():
    parent, u, d, rhs = _two_cells()
    buf = np.array([0, 2, 5])
    s = HinesStructure(parent, u, cell_offsets=_readonly_view(buf))
    buf[1] = 10**6
    assert s.cell_offsets.tolist() == [0, 2, 5]
    np.testing.assert_array_equal(hinesbatch.solve(s, d, rhs, backend="multicore"),
                                  hinesbatch.solve(HinesStructure(parent, u), d, rhs))


def test_owned_read_only_arrays_are_shared():
    parent, u, _, _ = _two_cells()
    s = HinesStructure(parent, u)
    t = HinesStructure(s.parent, s.u, cell_offsets=s.cell_offsets)
    assert t.parent is s.parent and t.u is s.u and t.cell_offsets is s.cell_offsets


# -- copies and pickles -----------------------------------------------------------------------
def _assert_read_only(s: HinesStructure):
    for a in (s.parent, s.u, s.cell_offsets) + (() if s.l is None else (s.l,)):
        assert not a.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            a[-1] = 10**6


def _roundtrips():
    return {"deepcopy": copy.deepcopy, "copy": copy.copy,
            "pickle": lambda o: pickle.loads(pickle.dumps(o))}


@pytest.mark.parametrize("how", sorted(_roundtrips()))
def test_structures_stay_read_only_through_copies(how):
    parent, u, _, _ = _two_cells()
    s = HinesStructure(parent, u, -u)
    for t in (_roundtrips()[how](s), _roundtrips()[how](MonoBatch(s.cell(1), 3)).cell):
        _assert_read_only(t)
    t = _roundtrips()[how](s)
    assert t.parent.tolist() == s.parent.tolist() and t.l.tolist() == (-u).tolist()
    m = _roundtrips()[how](MonoBatch(s.cell(1), 3))
    assert m.n_cells == 3 and m.cell.n_nodes == 3


@pytest.mark.parametrize("how", sorted(_roundtrips()))
@pytest.mark.parametrize("backend", ["serial", "multicore"])
def test_plans_stay_read_only_and_solve_through_copies(how, backend):
    parent, u, d, rhs = _two_cells()
    for structure, dd, rr in ((HinesStructure(parent, u), d, rhs),
                              (MonoBatch(HinesStructure(parent[2:] - 2 * (parent[2:] >= 0),
                                                        u[2:]), 4),
                               np.full((4, 3), 4.0), np.ones((4, 3)))):
        plan = hinesbatch.plan(structure, backend)
        twin = _roundtrips()[how](plan)
        assert twin.backend_name == backend
        _assert_read_only(twin.structure.cell if isinstance(structure, MonoBatch)
                          else twin.structure)
        np.testing.assert_array_equal(twin.solve(dd, rr), plan.solve(dd, rr))


@pytest.mark.parametrize("how", sorted(_roundtrips()))
def test_tridiagonal_shapes_and_plans_stay_read_only(how):
    shape = _roundtrips()[how](TridiagonalShape(4, 2, [3, 4]))
    assert shape.lengths.tolist() == [3, 4] and not shape.lengths.flags.writeable
    plan = _roundtrips()[how](hinesbatch.plan_tridiagonal(4, 2, lengths=[3, 4],
                                                          backend="serial"))
    assert not plan.shape.lengths.flags.writeable
    dl, du = -np.ones((2, 4)), -np.ones((2, 4))
    d, rhs = np.full((2, 4), 4.0), np.ones((2, 4))
    np.testing.assert_array_equal(plan.solve(dl, d, du, rhs),
                                  hinesbatch.solve_tridiagonal(dl, d, du, rhs, lengths=[3, 4]))


@pytest.mark.parametrize("how", sorted(_roundtrips()))
def test_branches_stay_read_only(how):
    parent, u, _, _ = _two_cells()
    b = _roundtrips()[how](branches(HinesStructure(parent, u)))
    assert b.start.tolist() == [0, 2]
    for name in ("start", "nodes", "offsets", "node_branch"):
        assert not getattr(b, name).flags.writeable


class _PlainState:
    """Pickles as the plain dataclass form of a HinesStructure (object state, no
    constructor call), holding whatever arrays it is given."""

    def __init__(self, **state):
        self.state = state

    def __reduce__(self):
        return (object.__new__, (HinesStructure,), self.state)


def test_plain_state_pickles_are_validated():
    parent, u, _, _ = _two_cells()
    good = pickle.loads(pickle.dumps(_PlainState(parent=parent, u=u, l=None,
                                                 cell_offsets=None, _cache={})))
    assert isinstance(good, HinesStructure) and good.cell_offsets.tolist() == [0, 2, 5]
    _assert_read_only(good)
    bad = _PlainState(parent=np.array([-1, 0, -1, 2, 2**40]), u=u, l=None, cell_offsets=None,
                      _cache={})
    with pytest.raises(ValueError, match=r"parent\[4\] = 1099511627776 is outside"):
        pickle.loads(pickle.dumps(bad))


# -- MonoBatch's n_cells ---------------------------------------------------------------------
@pytest.mark.parametrize(("n_cells", "error", "message"), [
    (2.7, TypeError, "n_cells must be an int, got float 2.7"),
    (2.0, TypeError, "n_cells must be an int, got float 2.0"),
    ("3", TypeError, "n_cells must be an int, got str '3'"),
    (True, TypeError, "n_cells must be an int, got bool True"),
    (-1, ValueError, "n_cells must be >= 0, got -1"),
])
def test_mono_batch_needs_an_integer_count(n_cells, error, message):
    cell = HinesStructure([-1, 0], [0.0, -1.0])
    with pytest.raises(error, match=message):
        MonoBatch(cell, n_cells)


def test_mono_batch_takes_numpy_integers():
    batch = MonoBatch(HinesStructure([-1, 0], [0.0, -1.0]), np.int64(3))
    assert batch.n_cells == 3 and type(batch.n_cells) is int


def test_callers_read_only_arrays_are_copied_too():
    """The caller's own read-only array can be made writeable again by its owner."""
    parent, u, d, rhs = _two_cells()
    frozen_u, frozen_offsets = u.copy(), np.array([0, 2, 5])
    for a in (frozen_u, frozen_offsets):
        a.flags.writeable = False
    s = HinesStructure(parent, frozen_u, cell_offsets=frozen_offsets)
    for a in (frozen_u, frozen_offsets):
        a.flags.writeable = True
    frozen_u[:] = -1000.0
    frozen_offsets[1] = 10**6
    assert s.u.tolist() == u.tolist() and s.cell_offsets.tolist() == [0, 2, 5]
