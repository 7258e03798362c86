"""NMODL statements beyond assignments: ``state_discontinuity``, ``printf``.

Each construct on a small file of its own: what it lowers to, where it is refused (with its
file:line), and a run on the CPU engine.
"""
from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("neuron.nmodl", reason="the NMODL parser comes with `pip install neuron`")

import hinesbatch as hb
from hinesbatch.nmodl import NmodlError, NmodlNotice, translate_text

DATA = Path(__file__).parents[1] / "data" / "nmodl"

pytestmark = pytest.mark.usefixtures("builtins_only")


def marked_line(text: str) -> int:
    """The line of ``text`` carrying the marker ``: <-- here``."""
    return next(k + 1 for k, line in enumerate(text.splitlines()) if "<-- here" in line)


# ---- state_discontinuity ------------------------------------------------------------------
SYN = """
NEURON { POINT_PROCESS jump NONSPECIFIC_CURRENT i RANGE k }
PARAMETER { tau = 2 (ms) k = 3 }
ASSIGNED { v (mV) i (nA) }
STATE { g (uS) }
BREAKPOINT { SOLVE s METHOD cnexp i = g*v }
DERIVATIVE s { g' = -g/tau }
NET_RECEIVE(w (uS)) {
    state_discontinuity(g, g + k*w)
}
"""


def test_state_discontinuity_in_net_receive_is_an_assignment():
    m = translate_text(SYN).mechanism
    assert m.net_receive.strip() == "g = (g + (k * weight))"


def test_state_discontinuity_jumps_the_state_on_each_event(soma):
    path = soma.parent / "jump.mod"
    path.write_text(SYN)
    hb.load_mechanisms(path)
    cell = hb.Cell(str(soma)).insert("pas")
    syn = cell.place("jump", "soma[0](0.5)")
    sim = hb.Simulation(cell, dt=0.025)
    ns = sim.net_stim(start=1.0, interval=5.0, number=2)
    sim.connect(ns, syn, weight=0.01, delay=0.0)
    key = sim.record("g", target=syn)
    res = sim.run(8.0)
    g, t = np.asarray(res[key]), np.asarray(res.time(key))
    before, after = g[t < 0.99], g[(t > 1.01) & (t < 1.05)]
    assert np.all(before == 0.0)
    assert 0.029 < after[0] <= 0.03        # 3*0.01, then decaying with tau = 2 ms
    assert g[np.searchsorted(t, 5.9)] < 0.3 * after[0] < g[np.searchsorted(t, 6.1)]


@pytest.mark.parametrize("body, construct", [
    ("INITIAL {\n g = 0\n state_discontinuity(g, 1) : <-- here\n}\n", "state_discontinuity()"),
    ("NET_RECEIVE(w) {\n state_discontinuity(g) : <-- here\n}\n", "state_discontinuity()"),
    ("NET_RECEIVE(w) {\n state_discontinuity(v, w) : <-- here\n}\n", "v"),
])
def test_state_discontinuity_refused_elsewhere(body, construct):
    text = ("NEURON { POINT_PROCESS p NONSPECIFIC_CURRENT i }\nASSIGNED { v i }\n"
            "STATE { g }\n" + body)
    with pytest.raises(NmodlError) as info:
        translate_text(text, "p.mod")
    assert info.value.construct == construct, str(info.value)
    assert info.value.line == marked_line(text), str(info.value)


# ---- printf -------------------------------------------------------------------------------
PRINTS = """
NEURON { SUFFIX prt RANGE x }
ASSIGNED { v x }
INITIAL {
    x = 1
    printf("x is %g\\n", x) : <-- here
}
BREAKPOINT {
    if (x > 0) {
        printf("positive\\n")
    }
}
PROCEDURE version() {
    printf("$Id: prt.mod $")
}
"""


def test_printf_is_dropped_with_a_notice_per_line():
    tr = translate_text(PRINTS, "prt.mod")
    m = tr.mechanism
    assert m.initial.strip() == "x = 1.0"
    assert "printf" not in m.breakpoint and m.procedures[0].body.strip() == "pass"
    lines = [k + 1 for k, line in enumerate(PRINTS.splitlines()) if "printf" in line]
    assert len(lines) == 3 and lines[0] == marked_line(PRINTS)
    assert tr.notices == [f"prt.mod:{k}: printf: not run (printing does not change the "
                          "model)" for k in lines]


def test_printf_notices_are_warnings_at_load(tmp_path):
    path = tmp_path / "prt.mod"
    path.write_text(PRINTS)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hb.load_mechanisms(path)
    notes = [str(w.message) for w in caught if issubclass(w.category, NmodlNotice)]
    assert len(notes) == 3 and all("printf: not run" in n for n in notes)
    assert notes[0].startswith(f"{path}:{marked_line(PRINTS)}: ")


def test_strings_outside_printf_stay_refused():
    text = ("NEURON { SUFFIX s }\nASSIGNED { x }\nINITIAL { : <-- here\n"
            " x = printf(\"%g\", 1)\n}\n")
    with pytest.raises(NmodlError, match="String in an expression") as info:
        translate_text(text, "s.mod")
    assert info.value.construct == "INITIAL" and info.value.line == marked_line(text)


# ---- loops --------------------------------------------------------------------------------
LOOPS = """
NEURON { SUFFIX lp RANGE n, s, w, k }
PARAMETER { n = 3 }
ASSIGNED { v s w k }
INITIAL {
    LOCAL i
    i = 7
    s = 0
    FROM i = 1 TO n { s = s + i }
    w = i
    k = 0
    WHILE (k < n) { k = k + 1 }
}
"""


def _initial_values(text, tmp_path, soma, **params):
    """The RANGE variables of mechanism ``lp`` after finitialize (one soma)."""
    path = tmp_path / "lp.mod"
    path.write_text(text)
    hb.load_mechanisms(path)
    cell = hb.Cell(str(soma)).insert("lp", **params)
    sim = hb.Simulation(cell, dt=0.025)
    keys = {f: sim.record(f"{f}_lp") for f in ("s", "w", "k")}
    res = sim.run(0.025)
    return {f: float(np.asarray(res[key])[0]) for f, key in keys.items()}


def test_from_loop_with_a_parameter_bound_is_a_loop():
    m = translate_text(LOOPS).mechanism
    assert "while (i__from1 <= (n - fmod(n, 1.0))):" in m.initial
    assert "while (k < n):" in m.initial
    assert "s = (s + i__from1)" in m.initial and "i__from1 = (i__from1 + 1.0)" in m.initial


@pytest.mark.parametrize("n, s, k", [(3.0, 6.0, 3.0), (4.7, 10.0, 5.0), (0.0, 0.0, 0.0)])
def test_loops_run_as_nocmodls_c(tmp_path, soma, n, s, k):
    """FROM's bounds are converted to whole numbers toward zero, its variable is a whole
    number of its own (the LOCAL of that name keeps 7), WHILE tests before each pass."""
    got = _initial_values(LOOPS, tmp_path, soma, n=n)
    assert got == {"s": s, "w": 7.0, "k": k}


@pytest.mark.parametrize("body, construct, why", [
    ("FROM i = 0 TO 5 BY n { s = s + i } : <-- here", "FROM", "positive whole constant"),
    ("FROM i = 0 TO n { i = 2 } : <-- here", "i", "FROM loop's variable i"),
    ("FROM i = 0 TO n { w[i] = 1 } : <-- here", "w[]", "not an ASSIGNED array"),
])
def test_loop_refusals(body, construct, why):
    text = ("NEURON { SUFFIX lp }\nPARAMETER { n = 3 }\nASSIGNED { s w }\nINITIAL {\n"
            " LOCAL i\n " + body + "\n}\n")
    with pytest.raises(NmodlError, match=why) as info:
        translate_text(text, "lp.mod")
    assert info.value.construct == construct, str(info.value)
    assert info.value.line == marked_line(text), str(info.value)


def test_while_loop_pulses_repeat(soma):
    hb.load_mechanisms(DATA / "pulses.mod")
    cell = hb.Cell(str(soma)).insert("pas")
    clamp = cell.place("pulses", "soma[0](0.5)", period=5.0)
    sim = hb.Simulation(cell, dt=0.025)
    ki, kc = sim.record("i", target=clamp), sim.record("cycles", target=clamp)
    res = sim.run(16.0)
    i, cycles, t = (np.asarray(res[ki]), np.asarray(res[kc]), np.asarray(res.time(ki)))
    on = (np.fmod(t, 5.0) >= 1.0 + 1e-9) & (np.fmod(t, 5.0) < 3.0 - 1e-9)
    off = (np.fmod(t, 5.0) < 1.0 - 1e-9) | (np.fmod(t, 5.0) >= 3.0 + 1e-9)
    assert np.all(i[on] == 0.3) and np.all(i[off] == 0.0) and on.sum() > 100
    assert cycles.max() == 3.0


# ---- FUNCTIONs that write the mechanism's variables, used as values -----------------------
def test_a_writing_function_used_as_a_value_is_called_first():
    m = translate_text((DATA / "kloop.mod").read_text()).mechanism
    assert [p.name for p in m.procedures] == ["ninf_tau"] and m.functions == ()
    assert "ntau = " in m.procedures[0].body
    assert m.state == "ninf_tau(v)\nninf = ninf_tau__ninf_tau\n"
    assert m.initial.startswith("ninf_tau(v)\nninf = ninf_tau__ninf_tau\n")


WRITER = """
NEURON { SUFFIX wf RANGE x, y }
ASSIGNED { v x y }
FUNCTION f(a) {
    x = a
    f = 2*a
}
FUNCTION pure(a) { pure = a + 1 }
"""


@pytest.mark.parametrize("block, why", [
    ("INITIAL {\n y = x + f(1) : <-- here\n}\n", "FUNCTION f writes x, which the statement"),
    ("INITIAL {\n y = f(1) + f(2) : <-- here\n}\n", "two calls of such FUNCTIONs"),
    ("INITIAL {\n WHILE (f(1) < 0) { y = 1 } : <-- here\n}\n", "a loop condition"),
    ("FUNCTION g(a) {\n g = f(a) : <-- here\n}\nINITIAL { y = g(1) }\n", "called from FUNCTION g"),
])
def test_writing_function_refusals(block, why):
    text = WRITER + block
    with pytest.raises(NmodlError, match=why) as info:
        translate_text(text, "wf.mod")
    assert info.value.construct == "f()", str(info.value)
    assert info.value.line == marked_line(text), str(info.value)


def test_writing_function_in_conditions_and_arguments():
    text = WRITER + ("INITIAL {\n if (f(1) > 1) {\n  y = 1\n } else if (f(3) > 5) {\n"
                     "  y = 2\n }\n y = pure(f(4))\n}\n")
    m = translate_text(text).mechanism
    assert m.initial == ("f(1.0)\nif (f__f > 1.0):\n    y = 1.0\nelse:\n    f(3.0)\n"
                         "    if (f__f > 5.0):\n        y = 2.0\nf(4.0)\ny = pure(f__f)\n")


# ---- the C library's fmod, floor, ceil on the CPU engine ----------------------------------
def test_fmod_floor_ceil_run_as_cs_doubles(tmp_path, soma):
    """Regression: Numba has no ``math.fmod`` (a file using fmod did not compile), and its
    ``math.floor``/``ceil`` return 64-bit integers (wrong beyond 2**63, undefined for NaN);
    C's are doubles."""
    text = """
NEURON { SUFFIX cm RANGE a, b, c, d }
PARAMETER { big = 1e20 }
ASSIGNED { v a b c d }
INITIAL { a = fmod(-7.5, 2) b = floor(big) + 0.5 c = ceil(-2.5) d = floor(big*big*big) }
"""
    path = tmp_path / "cm.mod"
    path.write_text(text)
    hb.load_mechanisms(path)
    cell = hb.Cell(str(soma)).insert("cm")
    sim = hb.Simulation(cell, dt=0.025)
    keys = {f: sim.record(f"{f}_cm") for f in "abcd"}
    res = sim.run(0.025)
    got = {f: float(np.asarray(res[k])[0]) for f, k in keys.items()}
    assert got == {"a": -1.5, "b": 1e20 + 0.5, "c": -2.0, "d": 1e60}


def test_a_from_loop_leaves_the_variable_of_its_name_unchanged(tmp_path, soma):
    """Regression: an unrolled FROM loop assigned its final count to the LOCAL or the
    mechanism's variable of its name; nocmodl's loop counts in an int of its own
    (``{int i; for (...)}``), so NEURON leaves that variable as it was."""
    text = LOOPS.replace("    w = i\n", "    w = i\n    FROM w = 0 TO 3 { s = s + w }\n"
                         "    FROM i = 0 TO 2 { s = s + 1 }\n    w = w + i\n")
    got = _initial_values(text, tmp_path, soma, n=3.0)
    assert got == {"s": 6.0 + 6.0 + 3.0, "w": 14.0, "k": 3.0}


# ---- array elements indexed by values known only during the run --------------------------
INDEXED = """
NEURON { SUFFIX lp RANGE n, s, w, k }
PARAMETER { n = 2 }
ASSIGNED { v s w k a[4] }
INITIAL {
    LOCAL j
    FROM j = 0 TO 3 { a[j] = 10*j }
    a[n + 1] = -1
    s = a[n] + a[n*2 - 3]
    w = a[3]
    k = a[n - 3]
}
"""


def test_an_index_known_only_during_the_run_selects_an_element():
    m = translate_text(INDEXED).mechanism
    assert "a__at1 = ((n - fmod(n, 1.0)) + 1.0)" in m.initial
    assert "    a__3 = a__set2" in m.initial and "a__get4 = (0.0 / 0.0)" in m.initial
    # two comparisons to reach an element of four: a balanced tree
    assert m.initial.count("if (a__at1 ") == 7


@pytest.mark.parametrize("n, s, w, k", [
    (2.0, 20.0 + 10.0, -1.0, np.nan),
    (2.9, 20.0 + 10.0, -1.0, np.nan),       # (int) 2.9 = 2
    (1.0, np.nan, 30.0, np.nan),
    (5.0, np.nan, 30.0, 20.0),              # a[6] = -1 outside: nothing written
])
def test_indexed_elements_run_as_nocmodls_c(tmp_path, soma, n, s, w, k):
    """Each variable of the index converted to a whole number toward zero, as nocmodl's
    ``a[(int) n]``; outside the array a read gives NaN and a write changes nothing (NEURON's
    C reads and writes outside the array)."""
    got = _initial_values(INDEXED, tmp_path, soma, n=n)
    expected = {"s": s, "w": w, "k": k}
    assert got.keys() == expected.keys()
    for f in got:
        assert got[f] == expected[f] or (np.isnan(got[f]) and np.isnan(expected[f])), f


@pytest.mark.parametrize("body, why", [
    ("s = a[n/2] : <-- here", "an index other than sums and products"),
    ("WHILE (a[n] < 0) { s = 1 } : <-- here", "in a loop condition"),
])
def test_indexed_element_refusals(body, why):
    text = INDEXED.replace("    w = a[3]\n", "    w = a[3]\n    " + body + "\n")
    with pytest.raises(NmodlError, match=why) as info:
        translate_text(text, "lp.mod")
    assert info.value.construct == "a[]" and info.value.line == marked_line(text)


def test_an_index_into_a_large_array_is_refused():
    text = "NEURON { SUFFIX big }\nASSIGNED { v n a[1001] }\nINITIAL {\n n = a[n] : <-- here\n}\n"
    with pytest.raises(NmodlError, match="array of 1001 elements") as info:
        translate_text(text, "big.mod")
    assert info.value.line == marked_line(text)


# ---- the segment's diameter ---------------------------------------------------------------
def test_diam_is_the_segments_diameter(tmp_path):
    """A density mechanism that declares diam reads NEURON's seg.diam: per segment, the
    geometry's mean diameter, in every backend's data (it is a field the engine sets)."""
    hb.load_mechanisms(DATA / "gdiam.mod")
    m = hb.mechanisms.get("gdiam")
    assert m.geometry == ("diam",) and "diam" in m.field_names
    swc = tmp_path / "taper.swc"
    swc.write_text("1 1 0 0 0 5 -1\n2 3 5 0 0 2 1\n3 3 105 0 0 0.5 2\n")
    cell = hb.Cell(str(swc), nseg=3).insert("gdiam")
    sim = hb.Simulation(cell, dt=0.025)
    locs = [f"dend[0]({x})" for x in (1 / 6, 0.5, 5 / 6)] + ["soma[0](0.5)"]
    keys = [sim.record("g_gdiam", location=loc) for loc in locs]
    res = sim.run(0.05)
    geo = cell.geometry
    want = []
    for loc in locs:
        sec, x = loc[:-1].split("(")
        node = geo.node(sec, float(x))
        want.append(0.0003 * np.sqrt(geo.diam_um[node] / 2.0))
    got = [float(np.asarray(res[k])[0]) for k in keys]
    assert got == want
    assert got[0] > got[1] > got[2] and len(set(got)) == 4


@pytest.mark.parametrize("text, construct, why", [
    ("NEURON { SUFFIX d }\nASSIGNED { v diam }\nINITIAL {\n diam = 2 : <-- here\n}\n",
     "diam", "assigns NEURON's diam"),
    # (a point process: the line of the first diam, its declaration)
    ("NEURON { POINT_PROCESS d }\nASSIGNED { v diam x } : <-- here\nINITIAL {\n x = diam\n}\n",
     "diam", "the segment diameter is not provided"),
])
def test_diam_refusals(text, construct, why):
    with pytest.raises(NmodlError, match=why) as info:
        translate_text(text, "d.mod")
    assert info.value.construct == construct and info.value.line == marked_line(text)


def test_a_geometry_without_diameters_is_an_error_naming_the_mechanism(soma, monkeypatch):
    hb.load_mechanisms(DATA / "gdiam.mod")
    cell = hb.Cell(str(soma)).insert("gdiam")
    without = dataclasses.replace(cell.geometry, diam_um=None)
    monkeypatch.setattr(type(cell), "geometry", property(lambda self: without))
    with pytest.raises(ValueError, match=r"gdiam reads diam, but cell 0 has no segment "
                                         r"diameter at soma\[0\]\(0.5\)"):
        hb.Simulation(cell, dt=0.025).run(0.05)
