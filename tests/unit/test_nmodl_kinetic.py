"""KINETIC blocks (``METHOD sparse``, ``STEADYSTATE sparse``) and coupled or nonlinear
``derivimplicit`` on small .mod files: the backward-Euler step NEURON's solvers take,
CONSERVE, COMPARTMENT, the Newton passes of nonlinear schemes, and the refusals. ``tests/validation/test_nmodl_neuron.py`` compares
such files with NEURON itself."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("neuron.nmodl", reason="the NMODL parser comes with `pip install neuron`")

from nmodl_files import run_states

import hinesbatch as hb
from hinesbatch import mechanisms
from hinesbatch.nmodl import NmodlError, translate_text

DT = 0.025          # [ms]


pytestmark = pytest.mark.usefixtures("builtins_only")


TWO_STATE = """
NEURON { SUFFIX %s RANGE a, b }
PARAMETER { a = 0.3 (/ms) b = 0.1 (/ms) }
STATE { c o }
INITIAL { %s }
BREAKPOINT { SOLVE kin METHOD sparse }
KINETIC kin {
    ~ c <-> o (a, b)
    CONSERVE c + o = 1
}
"""


def test_linear_scheme_takes_the_backward_euler_step(tmp_path):
    """c <-> o with c + o = 1: o' = a·c - b·o by backward Euler, the step NEURON's single
    sparse pass gives: o1 = (o0 + dt·a)/(1 + dt·(a + b))."""
    tr = run_states(tmp_path, TWO_STATE % ("two", "c = 1"), "two", ("c", "o"))
    a, b = 0.3, 0.1
    o = [0.0]
    for _ in range(len(tr["o"]) - 1):
        o.append((o[-1] + DT * a) / (1.0 + DT * (a + b)))
    np.testing.assert_allclose(tr["o"], o, rtol=1e-13, atol=1e-16)
    np.testing.assert_allclose(tr["c"] + tr["o"], 1.0, rtol=1e-14)
    assert tr["o"][-1] > 0.05         # it moved


def test_steadystate_sparse_starts_at_the_equilibrium(tmp_path):
    """STEADYSTATE is a backward-Euler step of dt = 1e9 ms from the states' 0: from
    c = o = 0 the c row gives c = b·dt/(1 + dt·(a + b)), a/(a + b) to within 1e-9."""
    tr = run_states(tmp_path, TWO_STATE % ("twoss", "SOLVE kin STEADYSTATE sparse"),
                    "twoss", ("c", "o"))
    a, b, big = 0.3, 0.1, 1e9
    c0 = b * big / (1.0 + big * (a + b))
    assert tr["c"][0] == pytest.approx(c0, rel=1e-15)
    assert tr["o"][0] == pytest.approx(1.0 - c0, rel=1e-15)
    np.testing.assert_allclose(tr["o"], 0.75, rtol=1e-8)     # and it stays there


COMPARTMENTS = """
NEURON { SUFFIX vol }
PARAMETER { k1 = 0.5 (/ms) k2 = 0.2 (/ms) }
STATE { A B }
INITIAL { A = 1  B = 0 }
BREAKPOINT { SOLVE kin METHOD sparse }
KINETIC kin {
    COMPARTMENT 2 {A}
    COMPARTMENT 0.5 {B}
    ~ A <-> B (k1, k2)
}
"""


def test_compartment_volumes_scale_each_states_equation(tmp_path):
    """2·A' = -(k1·A - k2·B), 0.5·B' = k1·A - k2·B: 2·A + 0.5·B is conserved, and each
    step is the 2 × 2 backward-Euler solve."""
    tr = run_states(tmp_path, COMPARTMENTS, "vol", ("A", "B"))
    k1, k2 = 0.5, 0.2
    m = np.array([[2.0 / DT + k1, -k2], [-k1, 0.5 / DT + k2]])
    y = np.array([1.0, 0.0])
    for k in range(1, len(tr["A"])):
        y = np.linalg.solve(m, np.array([2.0 / DT * y[0], 0.5 / DT * y[1]]))
        np.testing.assert_allclose([tr["A"][k], tr["B"][k]], y, rtol=1e-13)
    np.testing.assert_allclose(2.0 * tr["A"] + 0.5 * tr["B"], 2.0, rtol=1e-14)


BINDING = """
NEURON { SUFFIX bind }
PARAMETER { kf = 40 (/mM-ms) kb = 0.3 (/ms) }
STATE { A B C }
INITIAL { A = 1  B = 0.6  C = 0 }
BREAKPOINT { SOLVE kin METHOD sparse }
KINETIC kin {
    ~ A + B <-> C (kf, kb)
}
"""


def test_nonlinear_scheme_is_solved_by_newton_passes(tmp_path):
    """A + B <-> C is not linear: the passes repeat until sum |dx| <= 1e-6, so each
    step solves the backward-Euler equations (a single pass would leave a residual of
    order (kf·dt·dA)^2), and A + C, B + C stay what they were."""
    tr = run_states(tmp_path, BINDING, "bind", ("A", "B", "C"))
    kf, kb = 40.0, 0.3
    a, b, c = tr["A"], tr["B"], tr["C"]
    residual = (c[1:] - c[:-1]) / DT - (kf * a[1:] * b[1:] - kb * c[1:])
    assert np.max(np.abs(residual)) < 1e-9
    np.testing.assert_allclose(a + c, 1.0, rtol=1e-12)
    np.testing.assert_allclose(b + c, 0.6, rtol=1e-12)
    assert c[1] > 0.1


def test_rates_are_pasted_before_the_reactants_as_nocmodl_writes_them():
    """nocmodl writes ``f_flux = <rate text> * p``: a rate ``a + b`` gives a + b·p in
    NEURON, which the translation keeps; a rate in parentheses multiplies as a whole."""
    mech = translate_text("""
NEURON { SUFFIX paste }
PARAMETER { a = 1 b = 2 c = 3 }
STATE { p q }
BREAKPOINT { SOLVE kin METHOD sparse }
KINETIC kin { ~ p <-> q (a + b, (a - c)) }
""").mechanism
    assert "f_flux = (a + (b * p))" in mech.state
    assert "b_flux = ((a - c) * q)" in mech.state


def test_protect_lowers_its_assignment():
    mech = translate_text("NEURON { SUFFIX prot }\nASSIGNED { x }\n"
                          "INITIAL { PROTECT x = x + 1 }\n").mechanism
    assert mech.initial.strip() == "x = (x + 1.0)"


COUPLED = """
NEURON { SUFFIX cpl }
PARAMETER { a = 0.7 (/ms) b = 0.2 (/ms) }
STATE { m n }
INITIAL { m = 1  n = 0 }
BREAKPOINT { SOLVE s METHOD derivimplicit }
DERIVATIVE s {
    m' = -a*m + b*n
    n' = a*m - b*n
}
"""


def test_coupled_derivimplicit_solves_the_backward_euler_system(tmp_path):
    """Coupled linear equations: NEURON's Newton iteration (central differences, exact
    for a linear block) lands on (I - dt·J)·y1 = y0."""
    tr = run_states(tmp_path, COUPLED, "cpl", ("m", "n"))
    a, b = 0.7, 0.2
    step = np.linalg.inv(np.eye(2) - DT * np.array([[-a, b], [a, -b]]))
    y = np.array([1.0, 0.0])
    for k in range(1, len(tr["m"])):
        y = step @ y
        np.testing.assert_allclose([tr["m"][k], tr["n"][k]], y, rtol=1e-12)
    assert tr["n"][-1] > 0.1


NONLINEAR = """
NEURON { SUFFIX sq }
STATE { m }
INITIAL { m = 2 }
BREAKPOINT { SOLVE s METHOD derivimplicit }
DERIVATIVE s { m' = -m*m }
"""


def test_nonlinear_derivimplicit_converges_to_the_implicit_step(tmp_path):
    """m' = -m²: m1 = m0 - dt·m1², m1 = (sqrt(1 + 4·dt·m0) - 1)/(2·dt), to NEURON's
    Newton tolerance (relative change <= 1e-6, quadratic convergence after it)."""
    tr = run_states(tmp_path, NONLINEAR, "sq", ("m",))
    m = [2.0]
    for _ in range(len(tr["m"]) - 1):
        m.append((np.sqrt(1.0 + 4.0 * DT * m[-1]) - 1.0) / (2.0 * DT))
    np.testing.assert_allclose(tr["m"], m, rtol=1e-10)


DIVERGING = """
NEURON { SUFFIX nwdiv NONSPECIFIC_CURRENT i }
ASSIGNED { v (mV) i (mA/cm2) }
STATE { m }
INITIAL { m = 10 }
BREAKPOINT {
    SOLVE s METHOD derivimplicit
    i = 1e-6*m*(v + 65)
}
DERIVATIVE s { m' = -100000*atan(m) }
"""


def test_newton_that_does_not_converge_stops_the_run(tmp_path):
    """Newton's method on atan from far away oscillates outwards: where the passes written
    out do not converge the run stops with the non-finite error (NEURON stops it too,
    after its 50 iterations) instead of going on with an unconverged state."""
    from hinesbatch.sim import NonFiniteStateError

    with pytest.raises(NonFiniteStateError, match=r"became nan in cell 0 at soma\[0\]"):
        run_states(tmp_path, DIVERGING, "nwdiv", ("m",))


HEAD = "NEURON {\n    SUFFIX bad\n}\nPARAMETER { k = 1 }\nASSIGNED { v x }\n"
REFUSED = [
    ("SOLVE kin METHOD cnexp",
     ("STATE { c o }\nBREAKPOINT { SOLVE kin METHOD cnexp : <-- here\n}\n"
      "KINETIC kin { ~ c <-> o (1, 2) }\n")),
    ("SOLVE kin",
     ("STATE { c o }\nBREAKPOINT { SOLVE kin : <-- here\n}\n"
      "KINETIC kin { ~ c <-> o (1, 2) }\n")),
    ("~",
     ("STATE { c o }\nBREAKPOINT { SOLVE kin METHOD sparse }\nKINETIC kin {\n"
      " ~ c <-> o (1, 2)\n ~ o << (k) : <-- here\n CONSERVE c + o = 1\n}\n")),
    ("CONSERVE",
     ("STATE { c o }\nBREAKPOINT { SOLVE kin METHOD sparse }\nKINETIC kin {\n"
      " ~ c <-> o (1, 2)\n if (k > 0) {\n  CONSERVE c + o = 1 : <-- here\n }\n}\n")),
    ("SOLVE d STEADYSTATE sparse",
     ("STATE { m }\nINITIAL { SOLVE d STEADYSTATE sparse : <-- here\n}\n"
      "BREAKPOINT { SOLVE d METHOD cnexp }\nDERIVATIVE d { m' = -m }\n")),
    ("SOLVE kin STEADYSTATE sparse",
     ("STATE { c o }\nINITIAL { SOLVE kin STEADYSTATE sparse : <-- here\n}\n"
      "BREAKPOINT { SOLVE kin METHOD sparse }\n"
      "KINETIC kin {\n rates()\n ~ c <-> o (x, 2)\n}\nPROCEDURE rates() { x = exp(-dt) }\n")),
]


@pytest.mark.parametrize("construct, body", REFUSED, ids=[r[0] for r in REFUSED])
def test_kinetic_refusals_name_the_line(tmp_path, construct, body):
    text = HEAD + body
    path = tmp_path / "bad.mod"
    path.write_text(text)
    with pytest.raises(NmodlError) as info:
        hb.load_mechanisms(path)
    err = info.value
    assert err.construct == construct, str(err)
    marked = next(k + 1 for k, line in enumerate(text.splitlines()) if "<-- here" in line)
    assert err.line == marked, str(err)
    assert "bad" not in mechanisms.names()


def test_a_scheme_too_large_to_unroll_is_refused():
    """21 states each reacting with every other: 441 entries, over the limit of 400."""
    names = [f"s{k}" for k in range(21)]
    reactions = "".join(f" ~ {a} <-> {b} (1, 2)\n" for i, a in enumerate(names)
                        for b in names[i + 1:])
    text = (f"NEURON {{ SUFFIX big }}\nSTATE {{ {' '.join(names)} }}\n"
            "BREAKPOINT { SOLVE kin METHOD sparse }\n"
            f"KINETIC kin {{ : <-- here\n{reactions}}}\n")
    with pytest.raises(NmodlError, match=r"441 nonzero entries") as info:
        translate_text(text, "big.mod")
    assert info.value.line == 4


UNDERSCORES = """
NEURON { SUFFIX und }
STATE { a b_c a_b c }
INITIAL { a = 1  a_b = 1 }
BREAKPOINT { SOLVE kin METHOD sparse }
KINETIC kin {
    ~ a_b <-> c (0.5, 0.2)
    ~ a <-> b_c (0.3, 0.1)
}
"""


def test_states_whose_names_meet_at_an_underscore_keep_their_entries(tmp_path):
    """The entries (a_b, c) and (a, b_c) are distinct: two independent pairs, each the
    2 × 2 backward-Euler solve."""
    tr = run_states(tmp_path, UNDERSCORES, "und", ("a", "b_c", "a_b", "c"))
    for (x, y), (kf, kb) in ((("a_b", "c"), (0.5, 0.2)), (("a", "b_c"), (0.3, 0.1))):
        m = np.array([[1.0 / DT + kf, -kb], [-kf, 1.0 / DT + kb]])
        z = np.array([1.0, 0.0])
        for k in range(1, len(tr[x])):
            z = np.linalg.solve(m, z / DT)
            np.testing.assert_allclose([tr[x][k], tr[y][k]], z, rtol=1e-13)
