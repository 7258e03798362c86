"""The NMODL front end: each construct on a small .mod file, the refusals (with their
file:line), the registry and the ``mechanisms check`` command.

NEURON's own hh.mod, passive.mod, expsyn.mod, exp2syn.mod, stim.mod and svclmp.mod (read
from the installed ``neuron`` wheel) must give the built-in descriptions' traces bit for bit.
"""
from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("neuron.nmodl", reason="the NMODL parser comes with `pip install neuron`")

import hinesbatch as hb
from hinesbatch import mechanisms
from hinesbatch.cli import main
from hinesbatch.nmodl import (
    NmodlError,
    NmodlNotice,
    registry,
    translate_text,
)

MODFILES = Path(__import__("neuron").__file__).parent / ".data" / "share" / "modfile"
BUILTIN_FILES = ("hh.mod", "passive.mod", "expsyn.mod", "exp2syn.mod", "stim.mod",
                 "svclmp.mod")


pytestmark = pytest.mark.usefixtures("builtins_only")


@pytest.fixture
def small(tmp_path) -> Path:
    path = tmp_path / "small.swc"
    path.write_text("1 1 0 0 0 5 -1\n2 3 5 0 0 1 1\n3 3 60 0 0 1 2\n4 3 90 20 0 0.8 3\n"
                    "5 3 90 -20 0 0.6 3\n6 2 -5 0 0 0.5 1\n7 2 -200 0 0 0.5 6\n")
    return path


def write(tmp_path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def marked_line(text: str) -> int:
    """The line of ``text`` carrying the marker ``: <-- here``."""
    return next(k + 1 for k, line in enumerate(text.splitlines()) if "<-- here" in line)


# ---- NEURON's own files give the built-ins' bits -------------------------------------------
def _builtin_model(swc):
    cell = hb.Cell(str(swc)).insert("hh").insert("pas", "dend", g_pas=1e-4)
    cell.place("IClamp", "soma[0](0.5)", amp=0.3, dur=20, delay=1)
    syn = cell.place("Exp2Syn", "dend[0](0.5)", tau1=0.5, tau2=3)
    syn2 = cell.place("ExpSyn", "soma[0](0.5)", tau=2)
    clamp = cell.place("SEClamp", "dend[1](0.5)", dur1=8, amp1=-60, dur2=4, amp2=-20,
                       dur3=5, amp3=-70, rs=20)
    sim = hb.Simulation(cell, celsius=16)
    ns = sim.net_stim(start=3, interval=7, number=5)
    sim.connect(ns, syn, weight=0.01, delay=1)
    sim.connect(ns, syn2, weight=0.005, delay=2)
    keys = [sim.record("v", location="dend[1](0.5)"), sim.record("v"),
            sim.record("m_hh"), sim.record("i", target=syn), sim.record("i", target=clamp)]
    res = sim.run(40)
    return np.array([res[k] for k in keys])


def test_neurons_mod_files_give_the_builtins_bits(small):
    reference = _builtin_model(small)
    for name in BUILTIN_FILES:
        hb.load_mechanisms(MODFILES / name, replace=True)
    assert set(mechanisms._REGISTERED) == {"hh", "pas", "ExpSyn", "Exp2Syn", "IClamp",
                                           "SEClamp"}
    assert mechanisms.get("hh").order == mechanisms.BUILTINS["hh"].order
    translated = _builtin_model(small)
    assert np.abs(translated - reference).max() == 0.0
    assert reference[1].max() > 0.0           # the soma spiked: the comparison means something


def test_hh_mod_lowers_to_the_builtin_description():
    hh = registry.translation(MODFILES / "hh.mod").mechanism
    builtin = mechanisms.BUILTINS["hh"]
    assert hh.field_names == builtin.field_names
    assert hh.currents == builtin.currents
    assert [(c.state, c.b, c.a) for c in hh.cnexp] == [
        ("m", "(minf / mtau)", "((-1.0) / mtau)"), ("h", "(hinf / htau)", "((-1.0) / htau)"),
        ("n", "(ninf / ntau)", "((-1.0) / ntau)")]
    assert hh.procedures[0].table == builtin.procedures[0].table


# ---- constructs ---------------------------------------------------------------------------
CHANNEL = """
NEURON {
    SUFFIX chan
    USEION k READ ek WRITE ik
    RANGE gbar, g
    GLOBAL vhalf, minf, mtau
}
PARAMETER {
    gbar = 0.01 (S/cm2)
    vhalf = -40 (mV)
    k = 6 (mV)
}
ASSIGNED { v (mV) ik (mA/cm2) ek (mV) g (S/cm2) minf mtau (ms) }
STATE { m }
INITIAL { rates(v) m = minf }
BREAKPOINT {
    SOLVE states METHOD cnexp
    g = gbar*m^2
    ik = g*(v - ek)
}
DERIVATIVE states {
    rates(v)
    m' = (minf - m)/mtau
}
PROCEDURE rates(v (mV)) {
    LOCAL a
    a = alpha(v)
    minf = 1/(1 + exp(-(v - vhalf)/k))
    mtau = 1/(a + 0.1)
}
FUNCTION alpha(x (mV)) {
    alpha = 0.5*exp((x - vhalf)/20)
}
"""


def test_channel_lowering(tmp_path):
    tr = translate_text(CHANNEL, "chan.mod")
    m = tr.mechanism
    assert (m.name, m.kind) == ("chan", "density")
    assert m.field_names == ("gbar", "vhalf", "k", "ek", "ik", "m", "g", "minf", "mtau")
    assert m.currents == ("ik",)
    # the FUNCTION reads the GLOBAL vhalf: it becomes an argument
    assert m.functions[0].args == ("x", "vhalf")
    assert "alpha(v, vhalf)" in m.procedures[0].body
    # the PROCEDURE's LOCAL is renamed so it cannot meet a caller's
    assert "a__rates = " in m.procedures[0].body
    # GLOBALs written by a block: per instance, with a notice each
    assert sorted(n.split("GLOBAL ")[1].split()[0] for n in tr.notices) == ["minf", "mtau"]
    assert all(n.startswith("chan.mod:") for n in tr.notices)
    assert [(c.state, c.b, c.a) for c in m.cnexp] == [("m", "(minf / mtau)",
                                                      "((-1.0) / mtau)")]
    assert m.state == "rates(v)\n"


def test_channel_runs_and_notices_are_warnings(tmp_path, soma):
    path = write(tmp_path, "chan.mod", CHANNEL)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert hb.load_mechanisms(path) == ["chan"]
    assert sorted(str(w.message) for w in caught if w.category is NmodlNotice) == [
        f"{path}:6: GLOBAL {n} is written by a block: stored per instance"
        for n in ("minf", "mtau")]
    cell = hb.Cell(str(soma)).insert("hh").insert("chan", gbar_chan=0.02)
    cell.place("IClamp", delay=1, dur=5, amp=0.2)
    sim = hb.Simulation(cell)
    kv, km = sim.record("v"), sim.record("m_chan")
    res = sim.run(5)
    # INITIAL: m = minf(v_init) exactly
    minf = 1.0 / (1.0 + math.exp(-(-65.0 + 40.0) / 6.0))
    assert res[km][0] == minf
    assert np.isfinite(res[kv]).all() and res[km][-1] != minf


def test_cnexp_in_place_equals_the_cnexp_passes(tmp_path, soma):
    """An equation reading a LOCAL cannot use the separate cnexp passes; written in place it
    gives the same bits."""
    passes = CHANNEL.replace("SUFFIX chan", "SUFFIX chanp")
    in_place = CHANNEL.replace("SUFFIX chan", "SUFFIX chani").replace(
        "DERIVATIVE states {\n    rates(v)\n    m' = (minf - m)/mtau",
        "DERIVATIVE states {\n    LOCAL tau\n    rates(v)\n    tau = mtau\n"
        "    m' = (minf - m)/tau")
    assert translate_text(in_place).mechanism.cnexp == ()
    assert translate_text(passes).mechanism.cnexp != ()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NmodlNotice)
        hb.load_mechanisms(write(tmp_path, "p.mod", passes))
        hb.load_mechanisms(write(tmp_path, "i.mod", in_place))
    traces = []
    for name in ("chanp", "chani"):
        cell = hb.Cell(str(soma)).insert("hh").insert(name)
        cell.place("IClamp", delay=1, dur=10, amp=0.3)
        sim = hb.Simulation(cell)
        key = sim.record("v")
        traces.append(sim.run(15)[key])
    assert np.array_equal(traces[0], traces[1])
    assert traces[0].max() > 0


SYNAPSE = """
NEURON {
    POINT_PROCESS Syn
    NONSPECIFIC_CURRENT i
    RANGE tau, e, i
}
PARAMETER { tau = 2 (ms) e = 0 (mV) }
ASSIGNED { v (mV) i (nA) }
STATE { g (uS) }
INITIAL { g = 0 }
BREAKPOINT {
    SOLVE state METHOD cnexp
    i = g*(v - e)
}
DERIVATIVE state { g' = -g/tau }
NET_RECEIVE(w (uS)) { g = g + 2*w }
"""


def test_point_process_with_net_receive(tmp_path, soma):
    m = translate_text(SYNAPSE).mechanism
    assert (m.kind, m.electrode, m.net_receive) == ("point", False,
                                                    "g = (g + (2.0 * weight))\n")
    assert [(c.b, c.a) for c in m.cnexp] == [("0.0", "((-1.0) / tau)")]
    hb.load_mechanisms(write(tmp_path, "syn.mod", SYNAPSE))
    cell = hb.Cell(str(soma)).insert("pas")
    syn = cell.place("Syn", tau=3.0)
    sim = hb.Simulation(cell)
    ns = sim.net_stim(start=1, interval=5, number=2)
    sim.connect(ns, syn, weight=0.001, delay=1)
    key = sim.record("g", target=syn)
    g = sim.run(4)[key]
    assert g[0] == 0.0 and g.max() > 0.0019         # one event added 2·w


def test_electrode_current_and_solve_of_a_procedure(tmp_path):
    text = """
NEURON { POINT_PROCESS Pulse ELECTRODE_CURRENT i RANGE amp, i, n }
PARAMETER { amp = 0.1 (nA) }
ASSIGNED { i (nA) n }
INITIAL { n = 0 }
BREAKPOINT { SOLVE count i = amp }
PROCEDURE count() { n = n + 1 }
"""
    m = translate_text(text).mechanism
    assert m.electrode and m.currents == ("i",)
    assert m.state == "count()\n" and m.breakpoint == "i = amp\n"


def test_from_loop_is_unrolled_and_constants_inlined():
    text = """
NEURON { SUFFIX loop RANGE s }
CONSTANT { K = 3 }
ASSIGNED { s }
INITIAL {
    LOCAL j
    s = 0
    FROM j = 1 TO K { s = s + j }
}
"""
    m = translate_text(text).mechanism
    # the loop's variable is nocmodl's block-scoped int: the LOCAL j is not assigned
    assert m.initial.splitlines() == ["s = 0.0", "s = (s + 1.0)", "s = (s + 2.0)",
                                      "s = (s + 3.0)"]


def test_arrays_indexed_by_from_loops_become_fields():
    text = """
NEURON { SUFFIX arr RANGE inf }
ASSIGNED { v inf[2] tau[2] }
STATE { m h }
INITIAL { rates(v) m = inf[0] h = inf[1] }
PROCEDURE rates(v) {
    LOCAL i
    TABLE inf, tau FROM -100 TO 100 WITH 200
    FROM i = 0 TO 1 {
        inf[i] = 1/(1 + exp(-(v + 40 + 10*i)/5))
        tau[i] = 1 + i
    }
}
"""
    m = translate_text(text).mechanism
    assert m.field_names == ("m", "h", "inf__0", "inf__1", "tau__0", "tau__1")
    assert m.procedures[0].table.outputs == ("inf__0", "inf__1", "tau__0", "tau__1")
    assert "inf__1 = (1.0 / (1.0 + exp(((-((v + 40.0) + (10.0 * 1.0))) / 5.0))))" \
        in m.procedures[0].body
    # an index known only during the run: tests/unit/test_nmodl_constructs.py
    bad = text.replace("m = inf[0]", "m = inf[m/2]")
    with pytest.raises(NmodlError, match=r":5: inf\[\]: an index other than sums"):
        translate_text(bad)


def test_table_depends_on_a_parameter_that_is_then_fixed():
    text = """
NEURON { SUFFIX tb RANGE minf GLOBAL vh }
PARAMETER { vh = -30 (mV) }
ASSIGNED { minf }
PROCEDURE rates(v) {
    TABLE minf DEPEND vh FROM -100 TO 100 WITH 200
    minf = 1/(1 + exp(-(v - vh)/5))
}
"""
    tr = translate_text(text, "tb.mod")
    m = tr.mechanism
    assert m.procedures[0].table.n == 200
    assert "vh" not in m.field_names             # setting it now fails instead of differing
    assert "(v - -30.0)" in m.procedures[0].body
    assert any("PARAMETER vh is fixed" in n for n in tr.notices)


FUNCTION_TABLE_TEXT = """
NEURON { SUFFIX ftab RANGE y }
ASSIGNED { v y }
INITIAL { y = f(v) }
FUNCTION f(v (mV)) {
    TABLE FROM -100 TO 100 WITH 7
    f = exp(v/20)
}
"""


def test_function_tables_interpolate_as_nocmodl(tmp_path, soma):
    """A FUNCTION with a TABLE: its value at WITH + 1 points (x accumulated by dx, as
    nocmodl's _check_<f> steps), looked up by linear interpolation with tables on, the
    exact function with tables off."""
    tr = translate_text(FUNCTION_TABLE_TEXT, "ftab.mod")
    f = tr.mechanism.functions[0]
    assert f.table.outputs == ("f",) and f.table.n == 7 and f.table.side == ()
    hb.load_mechanisms(write(tmp_path, "ftab.mod", FUNCTION_TABLE_TEXT))
    dx = 200.0 / 7.0
    xs, x = [], -100.0
    for _ in range(8):
        xs.append(x)
        x += dx
    table = [math.exp(x / 20.0) for x in xs]
    xi = (1.0 / dx) * (-65.0 - (-100.0))
    i = int(xi)
    expected = table[i] + (xi - float(i)) * (table[i + 1] - table[i])
    got = {}
    for tables in (True, False):
        sim = hb.Simulation(hb.Cell(str(soma)).insert("ftab"), tables=tables)
        key = sim.record("y_ftab")
        got[tables] = sim.run(0.025)[key][0]
    assert got[True] == expected
    assert got[False] == math.exp(-65.0 / 20.0) != expected


def test_a_function_table_depends_on_a_fixed_parameter():
    text = FUNCTION_TABLE_TEXT.replace("RANGE y", "RANGE y, k").replace(
        "ASSIGNED { v y }", "PARAMETER { k = 20 }\nASSIGNED { v y }").replace(
        "TABLE FROM", "TABLE DEPEND k FROM").replace("exp(v/20)", "exp(v/k)")
    tr = translate_text(text, "ftab.mod")
    assert tr.mechanism.functions[0].table.depend == ("k",)
    assert "k" not in tr.mechanism.field_names
    assert any("PARAMETER k is fixed" in n for n in tr.notices)


SIDE_RANGE = """
NEURON { SUFFIX sider RANGE tcorr }
PARAMETER { q10 = 3 }
ASSIGNED { v celsius minf tcorr a }
STATE { m }
INITIAL { rates(v) m = minf }
BREAKPOINT { rates(v) }
PROCEDURE rates(v (mV)) {
    TABLE minf DEPEND celsius, tcorr FROM -100 TO 100 WITH 200
    tcorr = q10^((celsius - 20)/10)
    rate_a(v)
    minf = a*tcorr
}
PROCEDURE rate_a(v (mV)) { a = 1/(1 + exp(-(v + 40)/5)) }
"""


def test_table_side_writes_of_range_variables_reach_the_first_instance(tmp_path):
    """NEURON builds a table with the first instance's data: what the procedure also
    writes (tcorr, and a in the procedure it calls) lands there only, and lookups leave
    the other instances' values alone; without tables every call writes its own."""
    tb = translate_text(SIDE_RANGE, "sider.mod").mechanism.procedures[0].table
    assert tb.side == ("a", "tcorr") and tb.side_range == ("a", "tcorr")
    hb.load_mechanisms(write(tmp_path, "sider.mod", SIDE_RANGE))
    swc = write(tmp_path, "cyl.swc", "1 1 0 0 0 5 -1\n2 3 0 5 0 1 1\n3 3 0 100 0 1 2\n")
    tcorr = 3.0 ** ((16.0 - 20.0) / 10.0)
    for tables in (True, False):
        cell = hb.Cell(str(swc), nseg=3).insert("sider")
        sim = hb.Simulation(cell, tables=tables, celsius=16.0)
        keys = [sim.record("tcorr_sider", location=f"dend[0]({x})") for x in (1 / 6, 0.5)]
        first = [sim.record("tcorr_sider", location=f"soma[0]({x})") for x in (1 / 6,)]
        res = sim.run(0.1)
        assert res[first[0]][-1] == tcorr
        assert [res[k][-1] for k in keys] == ([0.0, 0.0] if tables else [tcorr, tcorr])


def test_table_side_writes_other_blocks_make_are_refused():
    text = SIDE_RANGE.replace("INITIAL { rates(v)", "INITIAL { tcorr = 1 rates(v)")
    with pytest.raises(NmodlError, match="writes tcorr, which is not one of its table "
                                         "outputs, and other blocks write it too"):
        translate_text(text, "sider.mod")
    same = SIDE_RANGE.replace("INITIAL { rates(v)",
                              "INITIAL { tcorr = q10^((celsius - 20)/10) rates(v)")
    assert translate_text(same, "sider.mod").mechanism.procedures[0].table.side_range \
        == ("a", "tcorr")          # one value everywhere: the order does not matter
    early = SIDE_RANGE.replace("tcorr = q10", "a = tcorr\n    tcorr = q10")
    with pytest.raises(NmodlError, match="reads tcorr before it writes it"):
        translate_text(early, "sider.mod")


FUNCTION_SIDE = """
NEURON { SUFFIX fside RANGE tcorr }
PARAMETER { qa = 3 qb = 2 }
ASSIGNED { v celsius minf tcorr }
INITIAL { rates(v) }
PROCEDURE rates(v (mV)) {
    LOCAL a, b
    TABLE minf DEPEND celsius FROM -100 TO 100 WITH 200
    a = alpha(v)
    b = beta(v)
    minf = a/(a + b)
}
FUNCTION alpha(v (mV)) {
    tcorr = qa^((celsius - 20)/10)
    alpha = tcorr*exp(v/20)
}
FUNCTION beta(v (mV)) {
    tcorr = qb^((celsius - 20)/10)
    beta = tcorr*exp(-v/20)
}
"""


def test_a_function_writing_a_variable_first_is_pure_and_its_callers_write_it():
    m = translate_text(FUNCTION_SIDE, "fside.mod").mechanism
    alpha = next(f for f in m.functions if f.name == "alpha")
    assert alpha.args == ("v",) and alpha.body.startswith("tcorr__local = ")
    body = m.procedures[0].body.splitlines()
    assert body[0].startswith("tcorr = pow(3.0") and body[1].startswith("a__rates = alpha(")
    assert body[2].startswith("tcorr = pow(2.0") and body[3].startswith("b__rates = beta(")
    assert m.procedures[0].table.side_range == ("tcorr",)
    both = FUNCTION_SIDE.replace("a = alpha(v)\n    b = beta(v)", "a = alpha(v) + beta(v)")
    with pytest.raises(NmodlError, match="write tcorr with different values"):
        translate_text(both, "fside.mod")


DATA_NMODL = Path(__file__).parents[1] / "data" / "nmodl"


def test_a_table_depending_on_a_value_initial_computes_is_built_twice(soma):
    """NEURON builds the table before INITIAL (tcorr still 0: INITIAL looks that table up)
    and, tcorr being a DEPEND, again before the first step; without the DEPEND (kinitr)
    the first table serves the whole run."""
    assert translate_text((DATA_NMODL / "kinit.mod").read_text()).mechanism.procedures[0] \
        .table.reads == ("tcorr",)
    hb.load_mechanisms(DATA_NMODL / "kinit.mod")
    hb.load_mechanisms(DATA_NMODL / "kinitr.mod")
    n = {}
    for name, tables in (("kinit", True), ("kinitr", True), ("kinit", False)):
        sim = hb.Simulation(hb.Cell(str(soma)).insert(name), tables=tables, celsius=30.0)
        key = sim.record(f"n_{name}")
        n[name, tables] = np.asarray(sim.run(1.0)[key])
    assert n["kinit", True][0] == n["kinitr", True][0] != n["kinit", False][0]
    assert n["kinit", True][-1] != n["kinitr", True][-1]
    without = (DATA_NMODL / "kinit.mod").read_text().replace(
        "rates(v)\n    n' =", "tcorr = tcorr + 1\n    rates(v)\n    n' =")
    with pytest.raises(NmodlError, match="depends on tcorr, which is not a PARAMETER that "
                                         "no block writes nor a variable only INITIAL"):
        translate_text(without, "kinit.mod")


def test_a_table_may_set_a_state():
    """Regression: a STATE (set from a table in BREAKPOINT, integrated by no SOLVE) was
    refused as a TABLE output."""
    text = """
NEURON { SUFFIX tst USEION na READ ena WRITE ina }
PARAMETER { gbar = 0.001 }
ASSIGNED { v ena ina }
STATE { m }
BREAKPOINT {
    steady(v)
    ina = gbar*m*(v - ena)
}
PROCEDURE steady(v (mV)) {
    TABLE m FROM -100 TO 100 WITH 200
    m = 1/(1 + exp(-(v + 40)/5))
}
"""
    assert translate_text(text, "tst.mod").mechanism.procedures[0].table.outputs == ("m",)


def test_keyword_names_and_c_maths(tmp_path, soma):
    """A variable named like a Python keyword stays the mechanism's (regression: ``import``
    became a local), and log10/tanh are the C library's."""
    text = """
NEURON { SUFFIX kw RANGE import, lambda, r }
PARAMETER { import = 100 lambda = 0.5 }
ASSIGNED { r }
INITIAL { r = log10(import) + tanh(lambda) }
"""
    hb.load_mechanisms(write(tmp_path, "kw.mod", text))
    cell = hb.Cell(str(soma)).insert("kw", import_kw=1000.0)
    sim = hb.Simulation(cell)
    key = sim.record("r_kw")
    assert sim.run(0.025)[key][0] == math.log10(1000.0) + math.tanh(0.5)


def test_a_mechanism_without_variables_runs(tmp_path, soma):
    """Regression: the layout reshaped an empty field table with -1."""
    hb.load_mechanisms(write(tmp_path, "nothing.mod", "NEURON { SUFFIX nothing }\n"))
    traces = []
    for extra in ([], ["nothing"]):
        cell = hb.Cell(str(soma)).insert("pas")
        for name in extra:
            cell.insert(name)
        sim = hb.Simulation(cell)
        key = sim.record("v")
        traces.append(sim.run(1.0)[key])
    assert np.array_equal(traces[0], traces[1]) and traces[0][-1] < -65.0


def test_ion_reversal_defaults():
    text = """
NEURON { SUFFIX cach USEION ca READ eca WRITE ica RANGE g }
PARAMETER { g = 0.001 }
ASSIGNED { v eca ica }
BREAKPOINT { ica = g*(v - eca) }
"""
    m = translate_text(text).mechanism
    eca = next(v for v in m.ion_variables if v.name == "eca")
    assert eca.default == 132.4579341637009          # NEURON 9.0.2's eca without ca_ion conc.
    assert m.currents == ("ica",)


NA_READER = """
NEURON { SUFFIX naread USEION na READ nai, nao RANGE r }
ASSIGNED { nai (mM) nao (mM) r }
INITIAL { r = nai/nao }
"""

CL_READER = """
NEURON { SUFFIX clread USEION cl READ cli, clo, ecl WRITE icl VALENCE -1 RANGE g }
PARAMETER { g = 0.0001 (S/cm2) }
ASSIGNED { v (mV) cli (mM) clo (mM) ecl (mV) icl (mA/cm2) }
BREAKPOINT { icl = g*(v - ecl) }
"""


def test_concentrations_read_set_reversal_potentials_at_initialization(tmp_path):
    """NEURON's ion_init: where a mechanism reads an ion's concentrations, every mechanism
    there that reads the reversal potential gets the Nernst potential at finitialize (hh's
    ena too); elsewhere the default stays. An ion NEURON does not know runs with its VALENCE
    (its default concentrations, 1 mM inside and out, give 0 mV)."""
    from hinesbatch.mechanisms.ions import nernst

    for name, text in (("naread", NA_READER), ("clread", CL_READER)):
        hb.load_mechanisms(write(tmp_path, f"{name}.mod", text))
    try:
        m = mechanisms.get("naread")
        assert [(v.name, v.default, v.unit) for v in m.ion_variables] == [
            ("nai", 10.0, "mM"), ("nao", 140.0, "mM")]
        cell = hb.Cell(str(write(tmp_path, "two.swc", "1 1 0 0 0 5 -1\n2 3 0 0 5 1 1\n"
                                                       "3 3 0 0 20 1 2\n")))
        cell.insert("hh", ena=55.0)
        cell.insert("naread", region="soma")
        cell.insert("clread")
        sim = hb.Simulation(cell, celsius=16.3)
        sim.run(0.1)
        lay, data = sim._layout, sim._data
        hh = mechanisms.get("hh")
        ena = data["hh"][hh.field_names.index("ena")]
        soma = np.isin(lay.nodes["hh"], lay.nodes["naread"])
        assert soma.any() and (~soma).any()
        assert np.all(ena[soma] == nernst(10.0, 140.0, 1.0, 16.3))   # overrides 55
        assert np.all(ena[~soma] == 55.0)
        ecl = data["clread"][mechanisms.get("clread").field_names.index("ecl")]
        assert np.all(ecl == nernst(1.0, 1.0, -1.0, 16.3)) and ecl[0] == 0.0
    finally:
        mechanisms.unregister("naread")
        mechanisms.unregister("clread")


CA_SOURCE = """
NEURON { SUFFIX casrc USEION ca WRITE ica RANGE amp }
PARAMETER { amp = -0.002 (mA/cm2) }
ASSIGNED { ica (mA/cm2) }
BREAKPOINT { ica = amp }
"""
CA_POINT_SOURCE = """
NEURON { POINT_PROCESS capp USEION ca WRITE ica RANGE amp }
PARAMETER { amp = -0.0004 (nA) }
ASSIGNED { ica (nA) }
BREAKPOINT { ica = amp }
"""
CA_POOL = """
NEURON { SUFFIX capool USEION ca READ ica WRITE cai RANGE tau, k }
PARAMETER { tau = 5 (ms) k = 0.5 cainf = 1e-4 (mM) }
ASSIGNED { ica (mA/cm2) }
STATE { cai (mM) }
INITIAL { cai = cainf }
BREAKPOINT { SOLVE s METHOD cnexp }
DERIVATIVE s { cai' = -k*ica - (cai - cainf)/tau }
"""


def test_concentrations_written_follow_the_summed_ion_current(tmp_path):
    """A concentration one mechanism integrates from the ion current that others write: the
    node's current is the sum of every writer's (a point process's nA as i*1e2/area), the
    pool follows cnexp's exact solution for a constant current, and the reversal
    potential is recomputed from the new concentration at the next step (NEURON's
    eadvance); a node without the pool keeps the defaults."""
    from hinesbatch.mechanisms.ions import ION_ROWS, kept_per_node, nernst

    for name, text in (("casrc", CA_SOURCE), ("capp", CA_POINT_SOURCE), ("capool", CA_POOL)):
        hb.load_mechanisms(write(tmp_path, f"{name}.mod", text))
    assert kept_per_node([mechanisms.get("casrc"), mechanisms.get("capool")]) == {"ca": 2.0}
    assert kept_per_node([mechanisms.get("casrc")]) == {}
    cell = hb.Cell(str(write(tmp_path, "two.swc", "1 1 0 0 0 5 -1\n2 3 0 0 5 1 1\n"
                                                   "3 3 0 0 20 1 2\n")))
    cell.insert("casrc")
    cell.insert("capool", region="soma")
    cell.place("capp", "soma[0](0.5)")
    dt, tau, k, c0 = 0.025, 5.0, 0.5, 1e-4
    sim = hb.Simulation(cell, dt=dt, celsius=20.0)
    key = sim.record("cai_capool", location="soma[0](0.5)")
    res = sim.run(2.0)
    ions = sim._ions["ca"]
    soma = int(sim._layout.nodes["capool"][0])
    area = ions[ION_ROWS.index("area"), soma]
    ica = -0.002 + (-0.0004 * 100.0) / area
    assert ions[ION_ROWS.index("cur"), soma] == ica
    t = res.time(key)
    inf = c0 - k * ica * tau
    exact = inf + (c0 - inf) * np.exp(-t / tau)
    np.testing.assert_allclose(res[key], exact, rtol=1e-12)
    cai = res[key]
    assert ions[1, soma] == cai[-1]
    assert ions[0, soma] == nernst(cai[-2], 2.0, 2.0, 20.0)       # before the last update
    others = np.arange(ions.shape[1]) != soma
    assert np.all(ions[1, others] == 5e-5) and np.all(ions[4, others] == 0.0)


def test_an_ion_without_a_charge_is_refused_before_the_run(tmp_path):
    """NEURON takes an ion's VALENCE from any file that uses the ion; where none gives it,
    a concentration in use cannot give a reversal potential: refused at finitialize."""
    hb.load_mechanisms(write(tmp_path, "clw.mod", """
NEURON { SUFFIX clw USEION cl READ icl WRITE cli }
ASSIGNED { icl (mA/cm2) }
STATE { cli (mM) }
BREAKPOINT { SOLVE s METHOD cnexp }
DERIVATIVE s { cli' = -icl }
"""))
    cell = hb.Cell(str(write(tmp_path, "s.swc", "1 1 0 0 0 5 -1\n")))
    cell.insert("clw")
    with pytest.raises(ValueError, match="ion cl: no mechanism gives its VALENCE"):
        hb.Simulation(cell).run(1.0)


def test_nernst_special_cases():
    from hinesbatch.mechanisms.ions import nernst

    assert nernst(0.0, 2.0, 2.0, 6.3) == 1e6 and nernst(1.0, 0.0, 2.0, 6.3) == -1e6
    assert nernst(1.0, 2.0, 0.0, 6.3) == 0.0
    assert nernst(2.0, 1.0, 1.0, 6.3) == -nernst(1.0, 2.0, 1.0, 6.3) < 0.0


# ---- refusals: file:line: construct: reason -------------------------------------------------
HEAD = "NEURON {\n    SUFFIX bad\n    %s\n}\nASSIGNED { v x y }\n"
REFUSED = [
    ("VERBATIM", "", "INITIAL {\nVERBATIM : <-- here\n x = 1;\nENDVERBATIM\n}\n"),
    ("POINTER p", "POINTER p", "INITIAL {\n p = 1 : <-- here\n}\n"),   # written
    ("BBCOREPOINTER", "BBCOREPOINTER p : <-- here", ""),
    ("SOLVE k METHOD euler", "", ("STATE { c o }\nBREAKPOINT { SOLVE k METHOD euler : <-- here\n"
                                  "}\nKINETIC k {\n ~ c <-> o (1, 2)\n}\n")),
    ("m'", "",
     ("STATE { m n }\nBREAKPOINT { SOLVE s METHOD derivimplicit }\n"
      "DERIVATIVE s {\n if (x > 0) {\n  m' = -m + n : <-- here\n }\n n' = -n\n}\n")),
    ("SOLVE s METHOD sparse", "",
     ("STATE { m }\nBREAKPOINT { SOLVE s METHOD sparse : <-- here\n}\n"
      "DERIVATIVE s { m' = -m }\n")),
    ("net_event()", "", "INITIAL {\n net_event(t) : <-- here\n}\nNET_RECEIVE(w) { }\n"),
    ("USEION ca WRITE eca", "USEION ca WRITE eca : <-- here", ""),
    ("USEION ca READ dica", "USEION ca READ dica : <-- here", ""),
    ("cai", "USEION ca READ ica WRITE cai NONSPECIFIC_CURRENT x",
     "BREAKPOINT {\n x = 0\n cai = 1e-4 : <-- here\n}\n"),
    ("diam", "", "INITIAL {\n x = diam : <-- here\n}\n"),
    ("normrand()", "", "FUNCTION f(a) {\n TABLE FROM 0 TO 1 WITH 10\n f = normrand(0, a) : <-- here\n}\n"),
    ("unirand()", "", "INITIAL {\n x = unirand() : <-- here\n}\n"),
    ("m'", "", ("STATE { m }\nBREAKPOINT { SOLVE s METHOD cnexp }\n"
                "DERIVATIVE s {\n m' = -m*m : <-- here\n}\n")),
    ("TABLE", "", ("FUNCTION g(x) {\n g = f(x) : <-- here\n}\n"
                   "FUNCTION f(v) {\n TABLE FROM -1 TO 1 WITH 10\n f = v\n}\n")),
    ("x", "", ("FUNCTION g(v) {\n g = f(v) : <-- here\n}\n"
               "FUNCTION f(v) {\n x = 2\n f = v*x\n}\n")),
    ("FUNCTION f", "", "FUNCTION g(x) { g = f(x) }\nFUNCTION f(x) { : <-- here\n f = g(x - 1)\n}\n"),
    ("FUNCTION x", "", "FUNCTION x(v) { : <-- here\n x = v\n}\n"),     # nocmodl refuses it
    ("LONGITUDINAL_DIFFUSION", "USEION ca WRITE ica",
     "STATE { c }\nKINETIC k {\n LONGITUDINAL_DIFFUSION 1 {c} : <-- here\n ~ c << (1)\n}\n"),
]


@pytest.mark.parametrize("construct, neuron, body", REFUSED, ids=[r[0] for r in REFUSED])
def test_untranslatable_constructs_are_refused_with_their_line(tmp_path, construct, neuron,
                                                               body):
    text = HEAD % neuron + body
    if "NET_RECEIVE" in body:
        text = text.replace("SUFFIX", "POINT_PROCESS")
    path = write(tmp_path, "bad.mod", text)
    with pytest.raises(NmodlError) as info:
        hb.load_mechanisms(path)
    err = info.value
    assert err.path == str(path) and str(err).startswith(f"{path}:{err.line}: ")
    assert err.construct == construct, str(err)
    assert err.line == marked_line(text), str(err)
    assert "bad" not in mechanisms.names()


def test_syntax_error_names_the_line(tmp_path):
    text = "NEURON { SUFFIX s }\nASSIGNED { x }\nINITIAL {\n x = = 1 : <-- here\n}\n"
    with pytest.raises(NmodlError, match=r"s\.mod:4: syntax"):
        hb.load_mechanisms(write(tmp_path, "s.mod", text))


# ---- the registry -------------------------------------------------------------------------
def test_builtin_names_need_replace(tmp_path):
    with pytest.raises(ValueError, match="'hh' is a built-in; pass replace=True"):
        hb.load_mechanisms(MODFILES / "hh.mod")
    assert mechanisms.registered("hh") is None
    hb.load_mechanisms(MODFILES / "hh.mod", replace=True)
    assert mechanisms.get("hh") is mechanisms.registered("hh")
    mechanisms.unregister("hh")
    assert mechanisms.get("hh") is mechanisms.BUILTINS["hh"]


def test_translated_once_per_content_and_usable_by_name(tmp_path):
    a = write(tmp_path, "a.mod", SYNAPSE)
    copy = tmp_path / "copy"
    copy.mkdir()
    b = write(copy, "b.mod", SYNAPSE)
    assert hb.load_mechanisms(a) == ["Syn"]
    first = registry.translation(a)
    again = registry.translation(b)                # same bytes: translated once
    assert again.mechanism is first.mechanism and again.path == str(b)
    assert hb.load_mechanisms(b) == ["Syn"]        # same content again: no clash
    assert "Syn" in mechanisms.names() and mechanisms.get("Syn").order >= registry.USER_ORDER
    other = write(tmp_path, "other.mod", SYNAPSE.replace("tau = 2", "tau = 4"))
    with pytest.raises(ValueError, match="loaded before from other content"):
        hb.load_mechanisms(other)
    hb.load_mechanisms(other, replace=True)
    assert mechanisms.get("Syn").parameters[0].default == 4.0


def test_a_folder_loads_all_or_nothing(tmp_path):
    folder = tmp_path / "mods"
    folder.mkdir()
    write(folder, "a_chan.mod", CHANNEL)
    write(folder, "b_bad.mod", HEAD % "BBCOREPOINTER p")
    with pytest.raises(NmodlError, match="b_bad.mod:3: BBCOREPOINTER"):
        hb.load_mechanisms(folder)
    assert "chan" not in mechanisms.names()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert hb.load_mechanisms(folder, strict=False) == ["chan"]
    assert any(str(w.message).startswith("skipped: ") and "POINTER" in str(w.message)
               for w in caught)


# ---- the command --------------------------------------------------------------------------
def test_mechanisms_check_command(tmp_path, capsys):
    folder = tmp_path / "mods"
    (folder / "model").mkdir(parents=True)
    write(folder / "model", "chan.mod", CHANNEL)
    write(folder / "model", "bad.mod", HEAD % "BBCOREPOINTER p")
    write(folder, "syn.mod", SYNAPSE)
    assert main(["mechanisms", "check", str(folder), "--models"]) == 0
    out = capsys.readouterr().out
    assert f"{folder / 'model' / 'chan.mod'}: translated chan" in out
    assert f"{folder / 'model' / 'bad.mod'}:3: BBCOREPOINTER: opaque pointers" in out
    assert "3 files: 3 parsed, 2 translated (66.7 %)" in out
    assert "      1  BBCOREPOINTER" in out
    assert "2 models: 1 fully translated (50.0 %)" in out


def test_a_function_called_only_as_a_statement_may_write_variables():
    """``FUNCTION rates(v) { minf = ... }`` called as ``rates(v)`` acts as a PROCEDURE."""
    text = """
NEURON { SUFFIX fp RANGE minf }
ASSIGNED { v minf }
INITIAL { rates(v) }
FUNCTION rates(x) {
    minf = 1/(1 + exp(-x/5))
    rates = minf
}
"""
    m = translate_text(text).mechanism
    assert [p.name for p in m.procedures] == ["rates"] and m.functions == ()
    assert "rates__rates = minf" in m.procedures[0].body
    # its value used: called before the statement (tests/unit/test_nmodl_constructs.py)
    used = text.replace("INITIAL { rates(v) }", "INITIAL { minf = 2*rates(v) }")
    assert translate_text(used).mechanism.initial == ("rates(v)\n"
                                                      "minf = (2.0 * rates__rates)\n")


def test_assigning_a_read_ion_variable_changes_the_blocks_copy_only():
    """Regression: ``INITIAL { ek = -90 }`` (ChannelML's files) set the mechanism's ek for
    the whole run; nocmodl reloads the ion's value at the start of every block."""
    text = """
NEURON { SUFFIX kset USEION k READ ek WRITE ik RANGE g, e0 }
PARAMETER { g = 0.001 }
ASSIGNED { v ek ik e0 }
INITIAL { ek = -90 e0 = ek }
BREAKPOINT { ik = g*(v - ek) }
"""
    m = translate_text(text).mechanism
    assert m.initial == "ek__copy = ek\nek__copy = (-90.0)\ne0 = ek__copy\n"
    assert m.breakpoint == "ik = (g * (v - ek))\n"
    late = text.replace("BREAKPOINT { ik = g*(v - ek) }",
                        "BREAKPOINT {\n ik = g*(v - ek)\n ek = -80 : <-- here\n}")
    with pytest.raises(NmodlError, match="BREAKPOINT assigns ek, an ion variable the "
                                         "mechanism only READs, after using it"):
        translate_text(late)


def test_a_local_hides_the_variable_of_its_name():
    """Regression: a LOCAL named like a RANGE variable wrote the RANGE variable."""
    text = """
NEURON { SUFFIX hide RANGE g, x }
ASSIGNED { g x }
INITIAL { g = 1 }
BREAKPOINT {
    LOCAL g
    g = 5
    x = g
}
"""
    m = translate_text(text).mechanism
    # without currents, nocmodl runs BREAKPOINT's statements in the state update
    assert m.breakpoint == "" and m.after_solve == "g__local = 5.0\nx = g__local\n"
    assert m.initial == "g = 1.0\n"


def test_a_function_without_arguments(tmp_path, soma):
    """Regression: the generated ``def _F_m_f(, _celsius)`` did not compile."""
    from hinesbatch.mechanisms.c_emitter import emit_c

    text = """
NEURON { SUFFIX noarg RANGE x }
ASSIGNED { x }
INITIAL { x = two() + 1 }
FUNCTION two() { two = 2 }
"""
    assert "static double noarg_two(double celsius)" in emit_c(translate_text(text).mechanism)
    hb.load_mechanisms(write(tmp_path, "noarg.mod", text))
    sim = hb.Simulation(hb.Cell(str(soma)).insert("noarg"))
    key = sim.record("x_noarg")
    assert sim.run(0.025)[key][0] == 3.0


def test_keyword_names_as_arguments_and_table_outputs(tmp_path, soma):
    """Regression: a FUNCTION reading the PARAMETER ``del`` got the argument ``del_`` and
    compiled to an undefined local (NEURON's ModelDB 266732 synapses)."""
    text = """
NEURON { SUFFIX kwarg RANGE del, x, y }
PARAMETER { del = 2 }
ASSIGNED { v x y lambda }
INITIAL { x = late(1) scale(3) y = lambda }
FUNCTION late(a) { late = a + del }
PROCEDURE scale(lambda) {
    TABLE lambda FROM -100 TO 100 WITH 200
    lambda = lambda*0 + 7
}
"""
    text = text.replace("PROCEDURE scale(lambda) {\n    TABLE lambda", "PROCEDURE scale(w) {\n"
                        "    TABLE lambda").replace("lambda = lambda*0 + 7", "lambda = w*0 + 7")
    m = translate_text(text).mechanism
    assert m.functions[0].args == ("a", "del") and m.procedures[0].table.outputs == ("lambda",)
    hb.load_mechanisms(write(tmp_path, "kwarg.mod", text))
    sim = hb.Simulation(hb.Cell(str(soma)).insert("kwarg"))
    kx, ky = sim.record("x_kwarg"), sim.record("y_kwarg")
    res = sim.run(0.025)
    assert (res[kx][0], res[ky][0]) == (3.0, 7.0)


def test_parameter_defaults_have_neurons_six_digits():
    """Regression: nocmodl writes PARAMETER defaults with %g, so NEURON runs
    ``C = -14.87115`` as -14.8712 (ModelDB 86537's nav1p9 differed by 3e-3 mV)."""
    text = """
NEURON { SUFFIX six RANGE r }
PARAMETER { r = 1.23456789 C = -14.87115 big = 123456789 small = 0.000123456789 }
"""
    m = translate_text(text).mechanism
    assert [p.default for p in m.parameters] == [1.23457, -14.8712, 1.23457e8, 0.000123457]


def test_a_file_whose_written_out_code_is_too_large_is_refused(tmp_path, monkeypatch):
    """Loops, array elements and KINETIC schemes are written out; past MAX_CODE_CHARS the
    file is refused before any compiler sees it (a ModelDB synapse of 834,000 characters
    took Numba past 19 GB)."""
    from hinesbatch.nmodl import lower

    text = HEAD % "RANGE x" + "INITIAL {\n FROM i = 0 TO 99 {\n  x = x + i*i\n }\n}\n"
    path = write(tmp_path, "big.mod", text)
    monkeypatch.setattr(lower, "MAX_CODE_CHARS", 500)
    with pytest.raises(NmodlError) as info:
        hb.load_mechanisms(path)
    assert info.value.construct == "generated code" and info.value.line == 1
    assert "characters of statements" in str(info.value)
    monkeypatch.setattr(lower, "MAX_CODE_CHARS", 500_000)
    assert hb.load_mechanisms(write(tmp_path, "small.mod", text.replace("99", "98"))) == ["bad"]
    mechanisms.unregister("bad")


COUNTER = """NEURON { SUFFIX count  RANGE n  NONSPECIFIC_CURRENT i }
ASSIGNED { n  i (mA/cm2) }
BREAKPOINT { n = n + 1  i = 0 }
"""


@pytest.mark.parametrize("backend", ["serial", "multicore"])
def test_every_run_starts_from_the_models_values(tmp_path, soma, backend):
    """A variable that INITIAL leaves alone (here a count of BREAKPOINT's calls) starts each
    run of a simulation from its value in the model, not from where the last run left it."""
    hb.load_mechanisms(write(tmp_path, "count.mod", COUNTER))
    sim = hb.Simulation([hb.Cell(str(soma)).insert("count") for _ in range(2)],
                        backend=backend)
    key = sim.record("n_count", cell=1)
    first, second = sim.run(1.0)[key], sim.run(1.0)[key]
    assert first[-1] > first[0] > 0.0      # finitialize calls BREAKPOINT too
    assert np.array_equal(first, second)
