"""VERBATIM blocks that change nothing (accepted) or may change something (refused), and
files that are NEURON's VecStim (``vecevent.mod``), which stand for the built-in.

``kret.mod`` and ``nainc.mod`` (``tests/data/nmodl``) hold every accepted form; the refused
forms are written inline. ``vecevent.mod`` is NEURON's (BSD-3-Clause, the NEURON authors);
:data:`VECEVENT_SPACE` is its older version, which kept the vector's address in ``space``.
"""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("neuron.nmodl", reason="the NMODL parser comes with `pip install neuron`")

import hinesbatch as hb
from hinesbatch import mechanisms
from hinesbatch.cli import main
from hinesbatch.mechanisms.builtins import BUILTINS
from hinesbatch.nmodl import NmodlError, NmodlNotice, translate, translate_text
from hinesbatch.nmodl.check import coverage

pytestmark = pytest.mark.usefixtures("builtins_only")

DATA = Path(__file__).parents[1] / "data" / "nmodl"


def marked_line(text: str) -> int:
    """The line of ``text`` carrying the marker ``<-- here``."""
    return next(k + 1 for k, line in enumerate(text.splitlines()) if "<-- here" in line)


def without_verbatim(text: str) -> str:
    """``text`` with its VERBATIM blocks blanked (line numbers kept)."""
    return re.sub(r"^[ \t]*VERBATIM\b.*?ENDVERBATIM",
                  lambda m: "\n" * m.group(0).count("\n"), text, flags=re.DOTALL | re.MULTILINE)


# ---- accepted: the translation of the file without the blocks -----------------------------
@pytest.mark.parametrize("name", ["kret.mod", "nainc.mod", "kcareload.mod"])
def test_accepted_blocks_translate_as_if_absent(name):
    text = (DATA / name).read_text()
    assert text.count("ENDVERBATIM") >= (1 if name == "kcareload.mod" else 3)
    got = translate_text(text, name)
    ref = translate_text(without_verbatim(text), name)
    assert got.mechanism == ref.mechanism
    assert got.notices == ref.notices
    assert not any("VERBATIM" in n for n in got.notices)


CHANNEL = """NEURON { SUFFIX vb NONSPECIFIC_CURRENT i RANGE x }
PARAMETER { g = 0.001 }
ASSIGNED { v i x y }
BREAKPOINT {
    SOLVE p
    i = g*(v - x)
}
INITIAL { x = 1 }
"""


@pytest.mark.parametrize("block", [
    "PROCEDURE p() {\n x = 2\n VERBATIM\n return 0;\n ENDVERBATIM\n}\n",
    ("PROCEDURE p() {\n x = 2\n VERBATIM\n return (0) ; /* done */\n ENDVERBATIM\n"
     " : a comment after it\n}\n"),
    "PROCEDURE p() {\n x = 2\n VERBATIM\n return;\n ENDVERBATIM\n}\n",
    "PROCEDURE p() {\n VERBATIM\n // nothing\n ENDVERBATIM\n x = 2\n}\n",
    ("VERBATIM\n#include <stdio.h>\n#include<string.h> // printf, strlen\n#include <cmath>\n"
     "ENDVERBATIM\nPROCEDURE p() { x = 2 }\n"),
])
def test_forms_that_change_nothing_are_accepted(block):
    got = translate_text(CHANNEL + block, "vb.mod")
    ref = translate_text(without_verbatim(CHANNEL + block), "vb.mod")
    assert got.mechanism == ref.mechanism


# ---- refused: C that may change what the file computes ---------------------------------------
REFUSED = [
    ("a FUNCTION's value",
     ("FUNCTION f(a) {\n f = a\n VERBATIM /* <-- here */\n return 0;\n"
      " ENDVERBATIM\n}\nPROCEDURE p() { x = f(1) }\n")),
    ("before other statements",
     ("PROCEDURE p() {\n VERBATIM /* <-- here */\n return 0;\n"
      " ENDVERBATIM\n x = 2\n}\n")),
    ("inside an IF",
     ("PROCEDURE p() {\n if (x > 0) {\n  VERBATIM /* <-- here */\n  return 0;\n"
      "  ENDVERBATIM\n }\n}\n")),
    ("return 0 in INITIAL", "PROCEDURE p() { x = 2 }\n"),
    ("not a return",
     ("PROCEDURE p() {\n x = 2\n VERBATIM /* <-- here */\n return0;\n"
      " ENDVERBATIM\n}\n")),
    ("a value other than 0",
     ("PROCEDURE p() {\n x = 2\n VERBATIM /* <-- here */\n return 1;\n"
      " ENDVERBATIM\n}\n")),
    ("a FUNCTION writing a variable",
     ("FUNCTION f(a) {\n y = a\n f = a\n"
      " VERBATIM /* <-- here */\n return 0;\n ENDVERBATIM\n}\nPROCEDURE p() {\n f(1)\n}\n")),
    ("a header outside the standard ones",
     ("VERBATIM /* <-- here */\n#include <sys/time.h>\n"
      "ENDVERBATIM\nPROCEDURE p() { x = 2 }\n")),
    ("a local header",
     ("VERBATIM /* <-- here */\n#include \"misc.h\"\nENDVERBATIM\n"
      "PROCEDURE p() { x = 2 }\n")),
    ("an include with code",
     ("VERBATIM /* <-- here */\n#include <stdlib.h>\n#define x 3\n"
      "ENDVERBATIM\nPROCEDURE p() { x = 2 }\n")),
    ("an include inside a block",
     ("PROCEDURE p() {\n x = 2\n VERBATIM /* <-- here */\n"
      "#include <stdlib.h>\n ENDVERBATIM\n}\n")),
    ("a comment in a string",
     ("PROCEDURE p() {\n x = 2\n VERBATIM /* <-- here */\n"
      ' printf("/*"); return 0; /* */\n ENDVERBATIM\n}\n')),
]


@pytest.mark.parametrize("what, body", REFUSED, ids=[r[0] for r in REFUSED])
def test_blocks_that_may_change_something_are_refused_at_their_line(what, body):
    text = CHANNEL + body
    if what == "return 0 in INITIAL":      # nocmodl's initmodel returns no value
        text = text.replace("INITIAL { x = 1 }", "INITIAL {\n x = 1\n VERBATIM /* <-- here */\n"
                            " return 0;\n ENDVERBATIM\n}")
    with pytest.raises(NmodlError) as info:
        translate_text(text, "vb.mod")
    err = info.value
    assert err.construct == "VERBATIM", str(err)
    assert err.reason.startswith("C code cannot be translated"), str(err)
    assert err.line == marked_line(text), str(err)


@pytest.mark.parametrize("where, block", [
    ("BREAKPOINT", "BREAKPOINT {\n i = 0\n VERBATIM /* <-- here */\n return 0;\n ENDVERBATIM\n}\n"),
    ("DERIVATIVE d",
     ("STATE { m }\nBREAKPOINT {\n SOLVE d METHOD cnexp\n i = m\n}\n"
      "DERIVATIVE d {\n m' = -m\n VERBATIM /* <-- here */\n return 0;\n ENDVERBATIM\n}\n")),
])
def test_a_return_in_other_blocks_is_refused_with_the_block(where, block):
    text = ("NEURON { SUFFIX vr NONSPECIFIC_CURRENT i }\nASSIGNED { v i }\n"
            "VERBATIM\n#include <math.h>\nENDVERBATIM\n" + block)
    with pytest.raises(NmodlError, match=rf"C code cannot be translated \(return 0; in "
                       rf"{where} changes") as info:
        translate_text(text, "vr.mod")
    assert info.value.line == marked_line(text)


ION_READER = """NEURON {
    SUFFIX cr
    USEION ca READ cai, cao WRITE ica
    USEION k READ ki
    RANGE x
}
ASSIGNED { v cai cao ica ki x }
INITIAL {
    VERBATIM /* <-- here */
    RELOAD
    ENDVERBATIM
    x = cai + ki
}
BREAKPOINT { ica = 1e-6*(v - 50) }
"""


@pytest.mark.parametrize("reload", ["cai = _ion_cai;", "cai=_ion_cai; ki = _ion_ki; // both"])
def test_an_ion_variable_reloaded_in_initial_is_accepted(reload):
    text = ION_READER.replace("RELOAD", reload)
    got = translate_text(text, "cr.mod")
    assert got.mechanism == translate_text(without_verbatim(text), "cr.mod").mechanism


@pytest.mark.parametrize("why, change", [
    ("a variable the mechanism writes", lambda s: s.replace("RELOAD", "ica = _ion_ica;")),
    ("another ion variable", lambda s: s.replace("RELOAD", "cai = _ion_cao;")),
    ("assigned by a block", lambda s: s.replace("RELOAD", "cai = _ion_cai;").replace(
        "ica = 1e-6", "cai = 1e-4\n ica = 1e-6")),
    ("outside INITIAL", lambda s: s.replace("    VERBATIM /* <-- here */\n    RELOAD\n"
                                            "    ENDVERBATIM\n", "").replace(
        "BREAKPOINT { ica", "BREAKPOINT {\n VERBATIM /* <-- here */\n cai = _ion_cai;\n"
        " ENDVERBATIM\n ica")),
    ("more C", lambda s: s.replace("RELOAD", "cai = _ion_cai; cai = 2*cai;")),
])
def test_other_ion_reloads_are_refused(why, change):
    text = change(ION_READER)
    with pytest.raises(NmodlError) as info:
        translate_text(text, "cr.mod")
    assert info.value.construct == "VERBATIM", str(info.value)
    assert info.value.line == marked_line(text), str(info.value)


# ---- NEURON's VecStim ----------------------------------------------------------------------
#: vecevent.mod as NEURON shipped it up to version 7 (the vector's address in ``space``).
VECEVENT_SPACE = """:  Vector stream of events

NEURON {
	ARTIFICIAL_CELL VecStim
}

ASSIGNED {
	index
	etime (ms)
	space
}

INITIAL {
	index = 0
	element()
	if (index > 0) {
		net_send(etime - t, 1)
	}
}

NET_RECEIVE (w) {
	if (flag == 1) {
		net_event(t)
		element()
		if (index > 0) {
			net_send(etime - t, 1)
		}
	}
}

VERBATIM
extern double* vector_vec();
extern int vector_capacity();
extern void* vector_arg();
ENDVERBATIM

PROCEDURE element() {
VERBATIM
  { void* vv; int i, size; double* px;
	i = (int)index;
	if (i >= 0) {
		vv = *((void**)(&space));
		if (vv) {
			size = vector_capacity(vv);
			px = vector_vec(vv);
			if (i < size) {
				etime = px[i];
				index += 1.;
			}else{
				index = -1.;
			}
		}else{
			index = -1.;
		}
	}
  }
ENDVERBATIM
}

PROCEDURE play() {
VERBATIM
	void** vv;
	vv = (void**)(&space);
	*vv = (void*)0;
	if (ifarg(1)) {
		*vv = vector_arg(1);
	}
ENDVERBATIM
}
"""


def vecevent() -> str:
    return (DATA / "vecevent.mod").read_text()


@pytest.mark.parametrize("text", [vecevent(), VECEVENT_SPACE,
                                  # layout and comments aside
                                  VECEVENT_SPACE.replace("index += 1.;", "index += 1. ;  "
                                                         "/* next */").replace("\t", "  ")],
                         ids=["neuron9", "space", "layout"])
def test_neurons_vecstim_stands_for_the_builtin(text):
    tr = translate_text(text, "vs.mod")
    assert tr.builtin == "VecStim"
    assert tr.mechanism is BUILTINS["VecStim"]
    assert len(tr.notices) == 1 and tr.notices[0].startswith("vs.mod:")
    assert "the built-in VecStim is used" in tr.notices[0]


def with_delay(text: str, default: str = "0", send: str = "delay + etime - t") -> str:
    """vecevent.mod with ``RANGE delay``, ``PARAMETER { delay = default }`` and every
    ``net_send(etime - t, 1)`` made ``net_send(send, 1)``."""
    return (text.replace("ARTIFICIAL_CELL VecStim", "ARTIFICIAL_CELL VecStim\n\tRANGE delay")
            .replace("ASSIGNED {", f"PARAMETER {{\n\tdelay = {default} (ms)\n}}\n\nASSIGNED {{")
            .replace("net_send(etime - t, 1)", f"net_send({send}, 1)"))


def test_neurons_vecstim_with_a_delay_stands_for_the_builtin_with_a_delay():
    tr = translate_text(with_delay(vecevent()), "vs.mod")
    assert tr.builtin == "VecStim" and tr.mechanism is BUILTINS["VecStim"]
    assert "with a delay per instance" in tr.notices[0]


VARIANTS = [
    ("delay without a PARAMETER", lambda s: s.replace(
        "ARTIFICIAL_CELL VecStim", "ARTIFICIAL_CELL VecStim\n\tRANGE delay").replace(
        "net_send(etime - t, 1)", "net_send(delay + etime - t, 1)").replace(
        "ARTIFICIAL_CELL VecStim", "ARTIFICIAL_CELL VecStim : <-- here"),
     "0 PARAMETER blocks"),
    ("delay of 2 ms by default", lambda s: with_delay(s, "2").replace(
        "delay = 2 (ms)", "delay = 2 (ms) : <-- here"), "its delay is 2 ms by default"),
    ("delay added last", lambda s: with_delay(s, send="etime - t + delay").replace(
        "INITIAL {", "INITIAL { : <-- here"), "its INITIAL block is not vecevent.mod's"),
    ("delay without RANGE delay", lambda s: s.replace(
        "net_send(etime - t, 1)", "net_send(delay + etime - t, 1)").replace(
        "INITIAL {", "INITIAL { : <-- here"), "its INITIAL block is not vecevent.mod's"),
    ("late times skipped", lambda s: s.replace(
        "INITIAL {\n\tindex = 0\n\telement()\n\tif (index > 0) {",
        "INITIAL { : <-- here\n\tindex = 0\n\telement()\n\tif (index > 0 && etime >= t) {"),
     "its INITIAL block is not vecevent.mod's"),
    ("no net_event", lambda s: s.replace("NET_RECEIVE (w) {", "NET_RECEIVE (w) { : <-- here")
     .replace("\t\tnet_event(t)\n", ""), "its NET_RECEIVE block is not vecevent.mod's"),
    ("element C", lambda s: s.replace("PROCEDURE element() {", "PROCEDURE element() { : "
                                      "<-- here").replace("index += 1.;", "index += 2.;"),
     "the C of its PROCEDURE element() is not vecevent.mod's"),
    ("play C", lambda s: s.replace("PROCEDURE play() {", "PROCEDURE play() { : <-- here")
     .replace("hoc_obj_ref(*vector_pobj(ptmp));", "hoc_obj_ref(*vector_pobj(ptmp)); "
              "vector_resize(ptmp, 1);"),
     "the C of its PROCEDURE play() is not vecevent.mod's"),
    ("a macro", lambda s: s.replace("VERBATIM\nstatic void bbcore_write",
                                    "VERBATIM /* <-- here */\n#define vector_capacity(v) 1\n"
                                    "static void bbcore_write"),
     "the C of a VERBATIM block at the top level is not vecevent.mod's"),
    ("a variable", lambda s: s.replace("\tetime (ms)\n", "\tetime (ms)\n\tlast\n").replace(
        "ASSIGNED {", "ASSIGNED { : <-- here"), "ASSIGNED declares etime, index, last, ptr"),
    ("a FUNCTION", lambda s: s + "FUNCTION f() { : <-- here\n\tf = 1\n}\n",
     "it has a FUNCTION block"),
    ("a PROCEDURE", lambda s: s + "PROCEDURE rewind() { : <-- here\n\tindex = 0\n}\n",
     "it defines PROCEDURE rewind"),
    ("no INITIAL", lambda s: re.sub(r"INITIAL \{.*?\n\}\n", "", s, count=1, flags=re.DOTALL)
     .replace("ARTIFICIAL_CELL VecStim", "ARTIFICIAL_CELL VecStim : <-- here"),
     "0 INITIAL blocks"),
    ("a DESTRUCTOR's C", lambda s: s.replace("DESTRUCTOR {", "DESTRUCTOR { : <-- here")
     .replace("hoc_obj_unref(*vector_pobj(vv));", "hoc_obj_unref(*vector_pobj(vv)); "
              "vv = 0;"), "the C of its DESTRUCTOR is not vecevent.mod's"),
]


@pytest.mark.parametrize("what, change, reason", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_a_vecstim_other_than_neurons_is_refused_with_why(what, change, reason):
    text = change(vecevent())
    assert text != vecevent()
    with pytest.raises(NmodlError) as info:
        translate_text(text, "vs.mod")
    err = info.value
    assert err.construct == "ARTIFICIAL_CELL VecStim", str(err)
    assert err.reason.startswith("not NEURON's VecStim (vecevent.mod): " + reason), str(err)
    assert err.line == marked_line(text), str(err)


def test_another_artificial_cell_with_vecevents_code_is_refused():
    text = vecevent().replace("ARTIFICIAL_CELL VecStim", "ARTIFICIAL_CELL VecStim2")
    with pytest.raises(NmodlError) as info:
        translate_text(text, "vs2.mod")
    assert info.value.construct != "ARTIFICIAL_CELL VecStim"


def test_load_mechanisms_keeps_the_builtin_vecstim(tmp_path):
    for name in ("kret.mod", "vecevent.mod"):
        (tmp_path / name).write_text((DATA / name).read_text())
    (tmp_path / "vecstim_copy.mod").write_text(VECEVENT_SPACE)     # two copies: no clash
    (tmp_path / "vs_same.mod").write_text(vecevent())     # a content seen before
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        names = hb.load_mechanisms(tmp_path, replace=True)
    assert names == ["kret"]
    assert mechanisms.registered("VecStim") is None
    assert mechanisms.get("VecStim") is BUILTINS["VecStim"]
    said = [str(w.message) for w in caught if issubclass(w.category, NmodlNotice)
            and "VecStim" in str(w.message)]
    assert len(said) == 3
    for name in ("vecevent.mod", "vecstim_copy.mod", "vs_same.mod"):
        assert sum(s.startswith(f"{tmp_path / name}:") for s in said) == 1, said
    # the built-in VecStim still drives a synapse: its event at 1 ms arrives at 1.5 ms
    cell = hb.Cell(str(_soma(tmp_path)))
    syn = cell.place("ExpSyn", "soma[0](0.5)")
    sim = hb.Simulation(cell, dt=0.025)
    sim.connect(sim.vec_stim([1.0]), syn, weight=0.01, delay=0.5)
    key = sim.record("g", target=syn)
    g = np.asarray(sim.run(3.0)[key])
    assert np.all(g[:60] == 0.0) and g[61] > 0.0     # steps 0..59 end before 1.5 ms


def _soma(tmp_path) -> Path:
    path = tmp_path / "soma.swc"
    path.write_text("1 1 0 0 0 10 -1\n")
    return path


def test_check_counts_vecevent_as_translated_with_its_label(tmp_path, capsys):
    (tmp_path / "vecevent.mod").write_text(vecevent())
    (tmp_path / "delay.mod").write_text(VARIANTS[0][1](vecevent()))
    report = coverage(tmp_path)
    assert report["translated"] == 1
    assert report["builtin"] == {tmp_path / "vecevent.mod": "VecStim"}
    assert report["reasons"] == {"VecStim other than NEURON's vecevent.mod": 1}
    assert main(["mechanisms", "check", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert (f"{tmp_path / 'vecevent.mod'}: translated VecStim (NEURON's VecStim: the "
            "built-in VecStim is used)") in out
    assert "1 translated (50.0 %)" in out


def test_translate_of_a_file_path():
    tr = translate(DATA / "vecevent.mod")
    assert tr.builtin == "VecStim" and tr.path == str(DATA / "vecevent.mod")
