"""Translated NMODL files against NEURON: the same files compiled by ``nrnivmodl``.

Files: the mechanisms of NEURON's wheel that translate (``share/modfile``: hh, pas,
ExpSyn, Exp2Syn, IClamp, SEClamp, renamed ``*_t`` so that they do not meet NEURON's
built-ins; ``share/nrn/demo/release``: khhchan, nachan, nacaex, cachan1), four of NEURON's
examples shipped in ``tests/data/nmodl`` (syn1, cacur, cacum, and mcna: a five-state KINETIC
sodium channel with STEADYSTATE) and files written here to exercise a
TABLE depending on a GLOBAL, a FUNCTION reading PARAMETERs, cnexp written in place (a
LOCAL time constant), a FROM loop, file-level LOCALs, NET_RECEIVE with a weight, cnexp of
y' = k and of equations reading a state updated before them, euler, derivimplicit, and
ASSIGNED arrays filled by a FROM loop in a TABLE procedure, a READ ion variable
assigned in INITIAL and BREAKPOINT (each block's own copy in NEURON), concentrations read
(the reversal potential then computed from them at finitialize, also for hh's ena), a TABLE
of values depending on dt (``tests/data/nmodl/kdt.mod``), and a GLOBAL written by a
tabulated procedure besides its outputs (NEURON keeps the value of the table's last
construction call), TABLEs in FUNCTIONs (``cafun``), a tabulated procedure writing RANGE
variables besides its outputs (``ktcorr``: NEURON's first instance gets them) and FUNCTIONs
writing one before using it (``kfside``), a STATE set from a table (``nastate``), with
a table reading a value INITIAL computes (``kinit``, ``kinitr``: NEURON builds it before
INITIAL and, for a DEPEND, again before the first step), with usetable 1 and 0, calcium
kept per node: a concentration written (by cnexp and by
NEURON's derivimplicit cacum) from the ica summed over mechanisms, read back as cai, as
the ica summed so far and as eca (recomputed every step), KINETIC schemes by sparse (a
three-state channel with CONSERVE and STEADYSTATE; a nonlinear scheme with COMPARTMENT,
fluxes and a nonlinear STEADYSTATE; reactions in IF/ELSE, rates nocmodl pastes as text, a
reactant that is not a state), derivimplicit of coupled nonlinear equations (NEURON's
Newton iteration), and NET_RECEIVE with weight vectors, its INITIAL block, ``flag`` and
``net_send`` self-events (``tests/data/nmodl``: fdsyn, pulsesyn, pulsetrain, countsyn).

Protocol: a one-compartment soma (L = diam = 20 µm) with hh and the mechanism, a current
clamp (del 1 ms, dur 20 ms, 0.3 nA), dt 0.025 ms, 30 ms; synapses on it driven by a
NetStim; and a real cell (ko20x-07, d_lambda 0.1) with several of them at once.
Acceptance: max |ΔV| <= 1e-9 mV at every step for explicit methods and TABLEs, 1e-6 mV for
derivimplicit and sparse (NEURON's Newton tolerance, and its own elimination order).
"""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import nmodl_compare as nc
import numpy as np
import pytest

pytestmark = [pytest.mark.neuron,
              pytest.mark.filterwarnings("ignore::UserWarning")]  # notices, SWC notes

DATA = Path(__file__).parents[1] / "data"
TOLERANCE_MV = 1e-9

CHANNEL = """
NEURON {
    SUFFIX kchan
    USEION k READ ek WRITE ik
    RANGE gbar, g
    GLOBAL vhalf, minf, mtau
}
PARAMETER {
    gbar = 0.005 (S/cm2)
    vhalf = -40 (mV)
    slope = 6 (mV)
    q10 = 3
}
ASSIGNED { v (mV) celsius (degC) ik (mA/cm2) ek (mV) g (S/cm2) minf mtau (ms) }
STATE { m }
INITIAL { rates(v) m = minf }
BREAKPOINT {
    SOLVE states METHOD cnexp
    g = gbar*m^4
    ik = g*(v - ek)
}
DERIVATIVE states {
    rates(v)
    m' = (minf - m)/mtau
}
PROCEDURE rates(v (mV)) {
    LOCAL a, b, qt
    TABLE minf, mtau DEPEND celsius, vhalf FROM -120 TO 80 WITH 400
    qt = q10^((celsius - 22)/10)
    a = alpha(v)
    b = 0.125*exp(-(v + 65)/80)
    minf = 1/(1 + exp(-(v - vhalf)/slope))
    mtau = 1/(qt*(a + b))
}
FUNCTION alpha(x (mV)) {
    if (fabs(x - vhalf) < 1e-6) {
        alpha = 0.1*slope
    } else {
        alpha = 0.1*(x - vhalf)/(1 - exp(-(x - vhalf)/slope))
    }
}
"""

INPLACE = """
NEURON {
    SUFFIX nalocal
    USEION na READ ena WRITE ina
    RANGE gbar
}
PARAMETER { gbar = 0.002 (S/cm2) }
ASSIGNED { v (mV) ina (mA/cm2) ena (mV) }
STATE { h }
LOCAL hsum
INITIAL { h = 1/(1 + exp((v + 60)/7)) hsum = 0 }
BREAKPOINT {
    SOLVE states METHOD cnexp
    ina = gbar*(1 - h)*(v - ena)
}
DERIVATIVE states {
    LOCAL tau, k, hinf
    tau = 0
    FROM k = 1 TO 3 { tau = tau + k*0.5 }
    hinf = 1/(1 + exp((v + 60)/7))
    h' = (hinf - h)/tau
}
"""

SYNAPSE = """
NEURON {
    POINT_PROCESS wsyn
    NONSPECIFIC_CURRENT i
    RANGE tau, e, i
}
PARAMETER { tau = 3 (ms) e = -10 (mV) }
ASSIGNED { v (mV) i (nA) }
STATE { g (uS) }
INITIAL { g = 0 }
BREAKPOINT {
    SOLVE state METHOD cnexp
    i = g*(v - e)
}
DERIVATIVE state { g' = -g/tau }
NET_RECEIVE(w (uS)) { g = g + w*(1 + 0.5*(t > 10)) }
"""

METHODS = """
NEURON { SUFFIX methods NONSPECIFIC_CURRENT i RANGE k, g }
PARAMETER { k = 0.1 (/ms) g = 0.0005 (S/cm2) }
ASSIGNED { v (mV) i (mA/cm2) }
STATE { p z w }
INITIAL { p = 0 z = 0.2 w = 0.1 }
BREAKPOINT {
    SOLVE s METHOD cnexp
    i = g*(p*0.01 + z + w)*(v + 70)
}
DERIVATIVE s {
    p' = k
    z' = k*(1 - z) - 2*z*exp(v/50)
    w' = -w/k*0.05 + z
}
"""

EULER = """
NEURON { SUFFIX eulr NONSPECIFIC_CURRENT i RANGE k, g }
PARAMETER { k = 0.1 (/ms) g = 0.0005 (S/cm2) }
ASSIGNED { v (mV) i (mA/cm2) }
STATE { e1 e2 }
INITIAL { e1 = 0.5 e2 = 0 }
BREAKPOINT {
    SOLVE eu METHOD euler
    i = g*(e1 - e2)*(v + 70)
}
DERIVATIVE eu {
    e1' = k*(1 - e1) - e1*exp(v/40)
    e2' = -e2/2 + e1
}
"""

IMPLICIT = """
NEURON {
    SUFFIX kimp
    USEION k READ ek WRITE ik
    RANGE gbar, ninf, ntau
}
PARAMETER { gbar = 0.01 (S/cm2) }
ASSIGNED { v (mV) ik (mA/cm2) ek (mV) ninf ntau (ms) }
STATE { n }
INITIAL { rates(v) n = ninf }
BREAKPOINT {
    SOLVE states METHOD derivimplicit
    ik = gbar*n*n*(v - ek)
}
DERIVATIVE states {
    rates(v)
    n' = (ninf - n)/ntau
}
PROCEDURE rates(v (mV)) {
    ninf = 1/(1 + exp(-(v + 45)/8))
    ntau = 0.5 + 4*exp(-((v + 50)/25)^2)
}
"""

ARRAYS = """
NEURON {
    SUFFIX karr
    USEION k READ ek WRITE ik
    RANGE gbar, inf, tau
}
PARAMETER { gbar = 0.01 (S/cm2) }
ASSIGNED { v (mV) ik (mA/cm2) ek (mV) inf[2] tau[2] (ms) }
STATE { m h }
INITIAL { rates(v) m = inf[0] h = inf[1] }
BREAKPOINT {
    SOLVE states METHOD cnexp
    ik = gbar*m*m*h*(v - ek)
}
DERIVATIVE states {
    rates(v)
    m' = (inf[0] - m)/tau[0]
    h' = (inf[1] - h)/tau[1]
}
PROCEDURE rates(v (mV)) {
    LOCAL i
    TABLE inf, tau DEPEND celsius FROM -100 TO 100 WITH 200
    FROM i = 0 TO 1 {
        tau[i] = vartau(v, i)
        inf[i] = 1/(1 + exp((v - (-30 - 35*i))/(-8 + 14*i)))
    }
}
FUNCTION vartau(v (mV), i) (ms) {
    if (i == 0) {
        vartau = 1 + 0.5*exp(-((v + 40)/20)^2)
    } else {
        vartau = 20
    }
}
"""

ION_COPY = """
NEURON { SUFFIX kcopy USEION k READ ek WRITE ik RANGE g }
PARAMETER { g = 0.0002 (S/cm2) }
ASSIGNED { v (mV) ek (mV) ik (mA/cm2) }
INITIAL { ek = -90 }
BREAKPOINT {
    ek = -100
    ik = g*(v - ek)
}
"""

CA_READER = """
NEURON { SUFFIX cagate USEION ca READ cai, cao, eca WRITE ica RANGE gbar }
PARAMETER { gbar = 0.002 (S/cm2) }
ASSIGNED { v (mV) cai (mM) cao (mM) eca (mV) ica (mA/cm2) ratio }
STATE { m }
INITIAL { m = minf(v) ratio = cao/cai }
BREAKPOINT {
    SOLVE states METHOD cnexp
    ica = gbar*m*m*(v - eca)*(1 + 1e-6*ratio)
}
DERIVATIVE states { m' = (minf(v) - m)/2 }
FUNCTION minf(v (mV)) { minf = 1/(1 + exp(-(v + 30)/6)) }
"""

SIDE_GLOBAL = """
NEURON { SUFFIX kside USEION k READ ek WRITE ik RANGE gbar GLOBAL tadj, q10, temp }
PARAMETER { gbar = 0.01 (S/cm2) q10 = 3 temp = 23 (degC) }
ASSIGNED { v (mV) ek (mV) ik (mA/cm2) ninf ntau (ms) tadj celsius (degC) }
STATE { n }
INITIAL { trates(v) n = ninf }
BREAKPOINT {
    SOLVE states METHOD cnexp
    ik = tadj*gbar*n*n*n*n*(v - ek)
}
DERIVATIVE states {
    trates(v)
    n' = (ninf - n)/ntau
}
PROCEDURE trates(v (mV)) {
    TABLE ninf, ntau DEPEND celsius FROM -100 TO 100 WITH 200
    rates(v)
}
PROCEDURE rates(v (mV)) {
    tadj = q10^((celsius - temp)/10)
    ninf = 1/(1 + exp(-(v + 45)/9))
    ntau = (1 + 4*exp(-((v + 50)/20)^2))/tadj
}
"""

KINETIC3 = """
NEURON {
    SUFFIX k3c
    USEION k READ ek WRITE ik
    RANGE gbar
}
PARAMETER { gbar = 0.02 (S/cm2) }
ASSIGNED { v (mV) ek (mV) ik (mA/cm2) kf1 (/ms) kb1 (/ms) kf2 (/ms) kb2 (/ms) }
STATE { c1 c2 o }
BREAKPOINT {
    SOLVE kin METHOD sparse
    ik = gbar*o*(v - ek)
}
INITIAL { SOLVE kin STEADYSTATE sparse }
KINETIC kin {
    rates(v)
    ~ c1 <-> c2 (kf1, kb1)
    ~ c2 <-> o (kf2, kb2)
    CONSERVE c1 + c2 + o = 1
}
PROCEDURE rates(v (mV)) {
    kf1 = 0.5*exp((v + 40)/20)
    kb1 = 0.3*exp(-(v + 40)/20)
    kf2 = 0.8*exp((v + 30)/15)
    kb2 = 0.2*exp(-(v + 30)/25)
}
"""

#: a nonlinear scheme (binding, a dimer): Newton passes, COMPARTMENT volumes in the
#: state rows and in CONSERVE, fluxes (<<), a one-way reaction (->), b_flux read by the
#: block, a rate written as ``a1 + 0.01`` (nocmodl pastes it before the reactant as text)
#: and the nonlinear STEADYSTATE (single passes, then a converged solve)
BINDING = """
NEURON {
    SUFFIX kbind
    NONSPECIFIC_CURRENT i
    RANGE g, kf, kb
}
PARAMETER { g = 0.0002 (S/cm2) kf = 2 (/ms) kb = 0.1 (/ms) Btot = 2 }
ASSIGNED { v (mV) i (mA/cm2) q a1 (/ms) }
STATE { x B XB A A2 }
BREAKPOINT {
    SOLVE kin METHOD sparse
    i = g*(XB + A2 + 0.1*q)*(v + 20)
}
INITIAL { x = 0.1 B = 1 A = 1 SOLVE kin STEADYSTATE sparse }
KINETIC kin {
    LOCAL r
    r = exp(v/30)
    a1 = 0.05*r
    ~ x + B <-> XB (kf*r, kb)
    ~ 2 A <-> A2 (kf, a1 + 0.01)
    ~ A -> (0.02)
    ~ x << (0.001*(1 + r))
    ~ A << (0.01)
    q = b_flux
    COMPARTMENT 2 {B XB}
    CONSERVE B + XB = Btot
}
"""

#: KINETIC details that nocmodl writes its own way: reactions in IF/ELSE branches, a rate
#: ``a0 + b0`` pasted before the reactant as text (a0 + b0·c2 in NEURON), a reactant that
#: is not a state (X: the scheme counts as nonlinear), a FUNCTION of a state in a rate, a
#: COMPARTMENT volume given by a PARAMETER, CONSERVE with a coefficient, a nonlinear
#: STEADYSTATE
QUIRKS = """
NEURON {
    SUFFIX kquirk
    USEION k READ ek WRITE ik
    RANGE gbar, vol
}
PARAMETER { gbar = 0.001 (S/cm2) vol = 1.5 a0 = 0.2 b0 = 0.05 }
ASSIGNED { v (mV) ek (mV) ik (mA/cm2) X kf }
STATE { c1 c2 o d }
BREAKPOINT {
    SOLVE kin METHOD sparse
    ik = gbar*(o + 0.5*d)*(v - ek)
}
INITIAL { X = 0.5 c1 = 1 SOLVE kin STEADYSTATE sparse }
FUNCTION rate(v, s) { rate = 0.3*exp(v/25)*(1 + s) }
KINETIC kin {
    kf = rate(v, o)
    if (v > -50) {
        ~ c1 <-> c2 (kf, a0 + b0)
    } else {
        ~ c1 <-> c2 (kf*0.5, (a0 + b0))
    }
    ~ c2 + X <-> o (2*exp(v/40), b0)
    ~ o <-> d (0.1, 0.05)
    COMPARTMENT vol {d}
    CONSERVE c1 + c2 + o + 2 d = 1
}
"""

#: derivimplicit of coupled, nonlinear equations with a value the block computes (r)
COUPLED = """
NEURON { SUFFIX kcoup NONSPECIFIC_CURRENT i RANGE g }
PARAMETER { g = 0.005 (S/cm2) k = 0.5 (/ms) }
ASSIGNED { v (mV) i (mA/cm2) r }
STATE { m n }
INITIAL { m = 0.1 n = 0.2 }
BREAKPOINT {
    SOLVE s METHOD derivimplicit
    i = g*m*n*(v + 20) + 0.0001*r
}
DERIVATIVE s {
    LOCAL a
    a = exp(v/40)
    r = a*n
    m' = a*(1 - m) - k*m*n
    n' = 0.3*m*m - n
}
"""

NA_READER = """
NEURON { SUFFIX naread USEION na READ nai, nao RANGE r }
ASSIGNED { nai (mM) nao (mM) r }
INITIAL { r = nai/nao }
"""


#: calcium written with the BREAKPOINT of a mechanism without currents clamping it after
#: the SOLVE (nocmodl runs those statements in the state update): Traub's cad pattern
CA_CEILING = """
NEURON { SUFFIX cadceil USEION ca READ ica WRITE cai RANGE phi, beta GLOBAL ceiling }
PARAMETER { phi = 2 beta = 0.05 (/ms) ceiling = 2e-3 }
STATE { cai (mM) }
INITIAL { cai = 0.0 }
ASSIGNED { ica (mA/cm2) }
BREAKPOINT {
    SOLVE state METHOD cnexp
    if (cai < 0) { cai = 0 }
    if (cai > ceiling) { cai = ceiling }
}
DERIVATIVE state { cai' = - phi * ica - beta * cai }
"""

WHEEL_RENAMED = {"hh.mod": "hh", "passive.mod": "pas", "expsyn.mod": "ExpSyn",
                 "exp2syn.mod": "Exp2Syn", "stim.mod": "IClamp", "svclmp.mod": "SEClamp"}
WHEEL_DEMOS = ("khhchan.mod", "nachan.mod", "nacaex.mod", "cachan1.mod")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """Every file in one folder, built by nrnivmodl and loaded into hinesbatch."""
    import neuron

    import hinesbatch as hb
    from hinesbatch import mechanisms

    share = Path(neuron.__file__).parent / ".data" / "share"
    folder = tmp_path_factory.mktemp("mods")
    for name, mech in WHEEL_RENAMED.items():
        text = (share / "modfile" / name).read_text()
        text = re.sub(rf"\b(SUFFIX|POINT_PROCESS)(\s+){mech}\b", rf"\g<1>\g<2>{mech}_t", text,
                      count=1)
        (folder / f"t_{name}").write_text(text)
    for name in WHEEL_DEMOS:
        (folder / name).write_text((share / "nrn" / "demo" / "release" / name).read_text())
    for name in ("syn1.mod", "cacur.mod", "kdt.mod", "cacum.mod", "caeca.mod", "caacc.mod",
                 "kcai.mod", "icaread.mod", "mcna.mod", "fdsyn.mod", "pulsesyn.mod",
                 "pulsetrain.mod", "countsyn.mod", "hidesyn.mod", "cafun.mod", "ktcorr.mod",
                 "kfside.mod", "nastate.mod", "kinit.mod", "kinitr.mod"):
        (folder / name).write_text((DATA / "nmodl" / name).read_text())
    for name, text in (("kchan.mod", CHANNEL), ("nalocal.mod", INPLACE),
                       ("wsyn.mod", SYNAPSE), ("methods.mod", METHODS), ("eulr.mod", EULER),
                       ("kimp.mod", IMPLICIT), ("karr.mod", ARRAYS),
                       ("kcopy.mod", ION_COPY), ("cagate.mod", CA_READER),
                       ("naread.mod", NA_READER),
                       ("kside.mod", SIDE_GLOBAL), ("cadceil.mod", CA_CEILING),
                       ("k3c.mod", KINETIC3), ("kbind.mod", BINDING), ("kcoup.mod", COUPLED),
                       ("kquirk.mod", QUIRKS)):
        (folder / name).write_text(text)
    files = sorted(folder.glob("*.mod"))
    lib = nc.compile_mods(files)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        names = hb.load_mechanisms(folder)
    yield lib, names, folder
    for n in names:
        mechanisms.unregister(n)


soma = nc.one_point_soma
compare = nc.compare


DENSITY = [
    ("hh_t", [["hh_t", {}]]),
    ("pas_t", [["hh", {}], ["pas_t", {"g": 2e-4}]]),
    ("kchan", [["hh", {}], ["kchan", {}]]),
    ("nalocal", [["hh", {}], ["nalocal", {}]]),
    ("HHna+HHk", [["HHna", {}], ["HHk", {}], ["pas_t", {"g": 1e-4, "e": -65}]]),
    ("nacax", [["hh", {}], ["nacax", {}]]),
    ("cacur", [["hh", {}], ["cacur", {"del": 3.0, "dur": 2.0, "amp": -0.005}]]),
    ("methods", [["hh", {}], ["methods", {}]]),
    ("eulr", [["hh", {}], ["eulr", {}]]),
    ("kimp", [["hh", {}], ["kimp", {}]]),
    ("karr", [["hh", {}], ["karr", {}]]),
    ("kcopy", [["hh", {}], ["kcopy", {}]]),     # hh keeps ek = -77: the copy is kcopy's
    # concentrations read: eca from the Nernst equation at finitialize, not 132.458 mV
    ("cagate", [["hh", {}], ["cagate", {}]]),
    # nai read by another mechanism: hh's ena becomes the Nernst potential, not 50 mV
    ("naread", [["hh", {}], ["naread", {}]]),
    # a TABLE of values that depend on dt (exp(-dt/tau)), built for the run's dt
    ("kdt", [["hh", {}], ["kdt", {}]]),
    # a GLOBAL the tabulated procedure also writes (tadj), read by BREAKPOINT
    ("kside", [["hh", {}], ["kside", {}]]),
    # TABLEs in FUNCTIONs; RANGE variables written besides a table's outputs (by the
    # procedure, by the FUNCTIONs it calls) and read by BREAKPOINT; a STATE from a table
    ("cafun", [["hh", {}], ["cafun", {}]]),
    ("ktcorr", [["hh", {}], ["ktcorr", {}]]),
    ("kfside", [["hh", {}], ["kfside", {}]]),
    ("nastate", [["hh", {}], ["nastate", {}]]),
    # a table reading tcorr, which INITIAL computes: built before INITIAL and, tcorr being
    # a DEPEND, again before the first step (kinit); once (kinitr)
    ("kinit", [["hh", {}], ["kinit", {}]]),
    ("kinitr", [["hh", {}], ["kinitr", {}]]),
    # calcium kept per node: written by caacc (cnexp), read as eca, cai and ica
    ("caacc", [["hh", {}], ["caeca", {}], ["caacc", {}], ["kcai", {}], ["icaread", {}]]),
    # cai clamped by a BREAKPOINT statement after the SOLVE, read as eca
    ("cadceil", [["hh", {}], ["caeca", {}], ["cadceil", {}]]),
    # NEURON's cachan1 (reads cai, cao) into NEURON's cacum (derivimplicit, writes cai)
    ("cacum", [["hh", {}], ["cachan1", {"imax": 0.05}], ["cacum", {"depth": 10.0}]]),
    # KINETIC by sparse: a three-state channel with CONSERVE and STEADYSTATE, NEURON's
    # five-state Moore-Cox sodium channel, a nonlinear scheme
    ("k3c", [["hh", {}], ["k3c", {}]]),
    ("MCna", [["hh", {"gnabar": 0.0}], ["MCna", {}]]),       # instead of hh's sodium
    ("kbind", [["hh", {}], ["kbind", {}]]),
    ("kquirk", [["hh", {}], ["kquirk", {}]]),
    # derivimplicit of coupled nonlinear equations: NEURON's Newton iteration
    ("kcoup", [["hh", {}], ["kcoup", {}]]),
]
#: derivimplicit and sparse: NEURON's Newton iteration stops within its tolerance, and
#: its sparse solver eliminates in its own order (roundoff).
TOLERANCES_MV = {"kimp": 1e-6, "cacum": 1e-6, "kcoup": 1e-6, "k3c": 1e-6, "MCna": 1e-6,
                 "kbind": 1e-6, "kquirk": 1e-6}


@pytest.fixture(scope="module")
def soma_runs(compiled, tmp_path_factory):
    """Every soma model of DENSITY and SYNAPSES, one cell each, in one NEURON run and one
    hinesbatch run (one compilation): ``{label: (neuron, hinesbatch)}``."""
    lib, _, _ = compiled
    swc = tmp_path_factory.mktemp("soma") / "soma.swc"
    swc.write_text("1 1 0 0 0 10 -1\n")
    models = {label: {"insert": insert, "iclamp": [1.0, 20.0, 0.3]}
              for label, insert in DENSITY}
    for kind, params, weight in SYNAPSES:
        models[kind] = {"insert": [["hh", {}]], "point": [[kind, "soma[0]", 0.5, params]],
                        "netstim": [2.0, 6.0, 4, [[0, weight, 1.0]]]}
    ref, got = nc.run_batch(list(models.values()), lib, swc, tstop=30.0)
    return {label: (r, g) for label, r, g in zip(models, ref, got)}


@pytest.mark.parametrize("label", [d[0] for d in DENSITY])
def test_density_mechanism_on_a_soma_with_hh(soma_runs, label):
    ref, got = soma_runs[label]
    dv = float(np.max(np.abs(ref - got)))
    assert ref.max() > 0.0, "the soma should spike: the comparison must cover a spike"
    assert dv <= TOLERANCES_MV.get(label, TOLERANCE_MV), f"{label}: max |dV| = {dv} mV"


#: the soma models run again with usetable 0 (NEURON) and tables=False (hinesbatch)
WITHOUT_TABLES = ("kchan", "kdt", "kside", "cafun", "ktcorr", "kfside", "nastate", "kinit")


def test_density_mechanisms_without_tables(compiled, tmp_path):
    lib, _, _ = compiled
    swc = tmp_path / "soma.swc"
    swc.write_text("1 1 0 0 0 10 -1\n")
    labels = [d for d in DENSITY if d[0] in WITHOUT_TABLES]
    models = [{"insert": insert, "iclamp": [1.0, 20.0, 0.3]} for _, insert in labels]
    ref, got = nc.run_batch(models, lib, swc, tstop=30.0, tables=False)
    for (label, _), r, g in zip(labels, ref, got):
        dv = float(np.max(np.abs(r - g)))
        assert r.max() > 0.0, f"{label}: the soma should spike"
        assert dv <= TOLERANCE_MV, f"{label}: max |dV| = {dv} mV"


@pytest.mark.parametrize("tables", [True, False])
@pytest.mark.parametrize("name", ["ktcorr", "kfside"])
def test_table_side_writes_reach_neurons_first_instance(compiled, tmp_path, tables, name):
    """A soma and a dendrite of 5 segments each, the channel everywhere: with tables, the
    side write (tcorr, read by the current) holds the table's last construction value in
    NEURON's first instance only (soma(0.1)), 0 elsewhere; without, its value everywhere.
    tcorr recorded in all 10 segments and v at 3 places, compared with NEURON."""
    lib, _, _ = compiled
    swc = tmp_path / "cyl.swc"
    swc.write_text("1 1 0 0 0 10 -1\n2 3 0 20 0 1 1\n3 3 0 200 0 1 2\n")
    record = [["soma[0]", 0.5], ["dend[0]", 0.1], ["dend[0]", 0.9]]
    record += [[sec, x, f"tcorr_{name}"] for sec in ("soma[0]", "dend[0]")
               for x in (0.1, 0.3, 0.5, 0.7, 0.9)]
    model = {"swc": str(swc), "nseg": 5, "insert": [["hh", {}], [name, {}]],
             "iclamp": [1.0, 20.0, 0.3], "record": record, "tables": tables}
    ref = nc.run_neuron(model, lib)
    got = nc.run_hinesbatch(model)
    assert ref[0].max() > 0.0
    tcorr = ref[3:, -1]
    others = tcorr[1:] == (0.0 if tables else tcorr[0])
    assert tcorr[0] > 0.0 and others.all()
    dv = float(np.max(np.abs(ref - got)))
    assert dv <= TOLERANCE_MV, f"max |d| = {dv}"


SYNAPSES = [
    ("ExpSyn_t", {"tau": 2.0}, 0.01),
    ("Exp2Syn_t", {"tau1": 0.5, "tau2": 4.0}, 0.01),
    ("wsyn", {}, 0.004),
    # per-NetCon state in the weight vector, set by NET_RECEIVE's INITIAL
    ("fdsyn", {}, 0.02),
    # a transmitter pulse ended by a flagged self-event (net_send)
    ("pulsesyn", {}, 1.0),
]


@pytest.mark.parametrize("kind", [s[0] for s in SYNAPSES])
def test_synapse_driven_by_a_netstim(soma_runs, kind):
    ref, got = soma_runs[kind]
    dv = float(np.max(np.abs(ref - got)))
    assert ref.max() > -60.0, "the synapse should depolarize the soma"
    assert dv <= TOLERANCE_MV, f"{kind}: max |dV| = {dv} mV"


def test_point_processes_without_events(compiled, tmp_path):
    """IClamp_t drives, syn1 (a FUNCTION of t) and SEClamp_t (after_cvode) act on hh."""
    lib, _, _ = compiled
    model = {"swc": soma(tmp_path), "insert": [["hh", {}]],
             "point": [["IClamp_t", "soma[0]", 0.5, {"dur": 5.0, "amp": 0.4}],
                       ["syn1", "soma[0]", 0.5, {"onset": 12.0, "tau": 1.0, "gmax": 0.01}],
                       ["SEClamp_t", "soma[0]", 0.5,
                        {"dur1": 20.0, "amp1": -65.0, "dur2": 3.0, "amp2": -20.0,
                         "rs": 500.0}]],
             "tstop": 30.0}
    model["point"][0][3]["del"] = 1.0
    dv, ref = compare(model, lib)
    assert ref.max() > 0.0
    assert dv <= TOLERANCE_MV, f"max |dV| = {dv} mV"


def test_real_cell_with_several_translated_mechanisms(compiled):
    lib, _, _ = compiled
    model = {"swc": str(DATA / "morphologies" / "real" / "ko20x-07.CNG.swc"),
             "nseg": None, "d_lambda": 0.1,
             "insert": [["hh_t", {}], ["kchan", {}], ["nalocal", {"gbar": 0.001}],
                        ["caeca", {"gbar": 0.0005}], ["caacc", {}], ["kcai", {"gbar": 0.002}]],
             "point": [["Exp2Syn_t", "apic[0]", 0.5, {"tau1": 0.3, "tau2": 3.0}],
                       ["wsyn", "soma[0]", 0.5, {}]],
             "iclamp": [2.0, 15.0, 0.5],
             "netstim": [1.0, 4.0, 6, [[0, 0.02, 1.0], [1, 0.005, 2.0]]],
             "record": [["soma[0]", 0.5], ["dend[3]", 0.5]], "tstop": 25.0}
    dv, ref = compare(model, lib)
    assert ref[0].max() > 0.0
    assert dv <= TOLERANCE_MV, f"max |dV| = {dv} mV"


def test_weight_vectors_and_self_events(compiled, tmp_path):
    """One NetStim (every 0.9 ms, 8 spikes) onto four point processes on an hh soma:
    fdsyn through two NetCons (each with its own facilitation and depression), pulsesyn
    (pulses of 1.1 ms that overlap, each ended by the self-event of the last event),
    countsyn given the weight vector (0.003, 7): NEURON sets entry 1 to 0 at
    finitialize, as there is no INITIAL in its NET_RECEIVE; and pulsetrain, a current
    pulse train timed by net_send from INITIAL, which ignores the NetCon's events."""
    lib, _, _ = compiled
    model = {"swc": soma(tmp_path), "insert": [["hh", {}]],
             "point": [["fdsyn", "soma[0]", 0.5, {"tau_fac": 50.0}],
                       ["pulsesyn", "soma[0]", 0.5, {"gmax": 0.002}],
                       ["countsyn", "soma[0]", 0.5, {}],
                       ["pulsetrain", "soma[0]", 0.5, {"amp": 0.2, "n": 3}]],
             "netstim": [3.0, 0.9, 8, [[0, 0.01, 1.0], [0, 0.004, 0.3], [1, 1.0, 0.5],
                                       [2, [0.0005, 7.0], 1.0], [3, 1.0, 0.2]]],
             "tstop": 40.0}
    dv, ref = compare(model, lib)
    assert ref.max() > 0.0, "the soma should spike: the comparison must cover a spike"
    assert dv <= TOLERANCE_MV, f"max |dV| = {dv} mV"


def test_net_receive_arguments_hide_variables_of_their_names(compiled, tmp_path):
    """hidesyn: NET_RECEIVE(w, tlast, nev) where tlast and nev are also the point process's
    RANGE variables, read by BREAKPOINT. Two NetCons with their own timing: if NET_RECEIVE
    wrote the RANGE variables, the current would change at every event."""
    lib, _, _ = compiled
    model = {"swc": soma(tmp_path), "insert": [["hh", {}]],
             "point": [["hidesyn", "soma[0]", 0.5, {}]],
             "netstim": [3.0, 0.9, 8, [[0, 0.01, 1.0], [0, 0.004, 0.3]]],
             "tstop": 30.0}
    dv, ref = compare(model, lib)
    assert ref.max() > 0.0, "the soma should spike: the comparison must cover a spike"
    assert dv <= TOLERANCE_MV, f"max |dV| = {dv} mV"
