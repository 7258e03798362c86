"""NMODL statements beyond assignments: ``state_discontinuity``, ``printf``.

Each construct on a small file of its own: what it lowers to, where it is refused (with its
file:line), and a run on the CPU engine.
"""
from __future__ import annotations

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


@pytest.fixture
def soma(tmp_path) -> Path:
    path = tmp_path / "soma.swc"
    path.write_text("1 1 0 0 0 10 -1\n")
    return path


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
