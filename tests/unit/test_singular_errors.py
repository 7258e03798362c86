"""One wording for zero or non-finite pivots, whichever backend met them."""
from __future__ import annotations

import numpy as np
import pytest

import hinesbatch
from hinesbatch import HinesStructure, MonoBatch, SingularSystemError
from hinesbatch.errors import renumbered, singular_pivot_error

_TAIL = ("system is singular or too far from diagonally dominant for elimination without "
         "pivoting")


def test_wording_names_cell_node_and_pivot():
    exc = singular_pivot_error("Hines", 3, 7, 0.0)
    assert isinstance(exc, SingularSystemError) and (exc.cell, exc.node) == (3, 7)
    assert str(exc) == f"zero or non-finite pivot 0.0 at cell 3, node 7: the Hines {_TAIL}"
    exc = singular_pivot_error("tridiagonal", 2, 5, tiny=True, detail="2 system(s) flagged")
    assert str(exc) == (f"zero, tiny or non-finite pivot at system 2, row 5: the tridiagonal "
                        f"{_TAIL} (2 system(s) flagged)")


def test_renumbered_keeps_the_wording():
    """A chunk's error restated for the whole batch (the GPU's streamed solves)."""
    chunk = singular_pivot_error("Hines", 2, 4, float("nan"), detail="the lowest failing cell")
    whole = renumbered(chunk, 12)
    assert (whole.cell, whole.node) == (12, 4)
    assert str(whole) == str(singular_pivot_error("Hines", 12, 4, float("nan"),
                                                  detail="the lowest failing cell"))
    plain = renumbered(SingularSystemError("cuSPARSE gave inf", cell=1, node=0), 5)
    assert (plain.cell, plain.node, str(plain)) == (5, 0, "cuSPARSE gave inf")


@pytest.mark.parametrize("backend", ["serial", "multicore"])
def test_cpu_backends_use_the_one_wording(backend):
    mono = MonoBatch(HinesStructure(np.arange(-1, 4), np.full(5, -1.0)), 3)
    d, rhs = np.full((3, 5), 4.0), np.ones((3, 5))
    d[1, 4] = 0.0
    with pytest.raises(SingularSystemError) as info:
        hinesbatch.solve(mono, d, rhs, backend=backend)
    assert str(info.value) == str(singular_pivot_error("Hines", 1, 4, 0.0))
    dl, du = -np.ones((3, 5)), -np.ones((3, 5))
    d[1, 4] = 4.0
    d[2, 0] = 0.0
    with pytest.raises(SingularSystemError) as info:
        hinesbatch.solve_tridiagonal(dl, d, du, rhs, backend=backend)
    assert str(info.value) == str(singular_pivot_error("tridiagonal", 2, 0, 0.0))
