"""discretize on values at the edge of float32 and float64: a section whose geometry cannot
be finite is an SWCGeometryError naming the section and its samples' lines, with no NumPy
overflow warning on the way; the d_lambda rule never wraps around to a small nseg."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from hinesbatch.discretize import discretize
from hinesbatch.morphology import Morphology, SWCGeometryError


def unbranched(z, radii, *, first_line: int = 4) -> Morphology:
    """A one-point soma and one dendrite along z (samples on lines first_line, ...)."""
    n = len(z)
    return Morphology(ids=np.arange(1, n + 1), types=np.array([1] + [3] * (n - 1)),
                      xyz=np.column_stack([np.zeros(n), np.zeros(n), np.asarray(z, float)]),
                      radii=np.asarray(radii, float), parents=np.arange(-1, n - 1),
                      lines=np.arange(first_line, first_line + n), source="cell.swc")


@pytest.mark.parametrize("z, radii", [
    ([0, 1, 2e200], [5, 1, 1]),                # a coordinate beyond float32
    ([0, 1, 2], [5, 1, 1e200]),                # a radius beyond float32
    ([0, 3e38, -3e38], [5, 1, 1]),             # float32 coordinates whose difference is not
])
def test_geometry_beyond_float32_names_the_section_and_lines(z, radii):
    with warnings.catch_warnings():
        warnings.simplefilter("error")         # a NumPy overflow warning would fail here
        with pytest.raises(SWCGeometryError) as info:
            discretize(unbranched(z, radii))
    err = info.value
    assert err.rule == "non-finite geometry" and err.lines == (5, 6)
    assert str(err).startswith("cell.swc:5: non-finite geometry: 1 section has ")
    assert "dend[0] (lines 5, 6)" in str(err)


def test_axial_resistance_that_overflows_names_ra():
    m = unbranched([0, 1, 1e30], [5, 1e-30, 1e-30])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(SWCGeometryError, match=r"ra = 1e\+300 .*dend\[0\] \(lines 5, 6\): "
                                                   r"axial resistance inf MΩ"):
            discretize(m, ra=1e300)


def test_d_lambda_on_a_huge_section_is_refused_not_wrapped():
    m = unbranched([0, -0.9e38, 0.9e38], [5, 1, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"asks for nseg >= 2147483649 in dend\[0\]"):
            discretize(m, d_lambda=0.1)
