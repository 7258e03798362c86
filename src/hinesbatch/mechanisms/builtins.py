"""NEURON's built-in mechanisms (NEURON 9.0.2's hh.mod, passive.mod, stim.mod, svclmp.mod,
expsyn.mod, exp2syn.mod, netstim.mod and vecevent.mod), written as descriptions.

Every code block follows the C that NEURON's ``nocmodl`` writes for the .mod file, so each
expression is evaluated in NEURON's order (``docs/simulator.md``).
"""
from __future__ import annotations

from .description import Cnexp, Function, Ion, Mechanism, Procedure, Table
from .description import Variable as V

__all__ = ["BUILTINS"]

PAS = Mechanism(
    name="pas", kind="density", order=4,
    parameters=(V("g", 0.001, "S/cm2", "leak conductance"),
                V("e", -70.0, "mV", "leak reversal potential")),
    assigned=(V("i", 0.0, "mA/cm2"),),
    currents=("i",),
    breakpoint="i = g*(v - e)",
    doc="Passive leak: i = g·(v − e).",
)

IClamp = Mechanism(
    name="IClamp", kind="point", order=7, electrode=True,
    parameters=(V("del", 0.0, "ms", "onset"), V("dur", 0.0, "ms", "duration"),
                V("amp", 0.0, "nA", "amplitude (positive depolarizes)")),
    assigned=(V("i", 0.0, "nA"),),
    currents=("i",),
    aliases={"delay": "del"},
    initial="i = 0.0",
    breakpoint="""
if t < del_ + dur and t >= del_:
    i = amp
else:
    i = 0.0
""",
    doc="Current clamp: amp from del to del + dur (tested at the step's midpoint).",
)

SEClamp = Mechanism(
    name="SEClamp", kind="point", order=11, electrode=True,
    parameters=(V("rs", 1.0, "MOhm", "series resistance"),
                V("dur1", 0.0, "ms"), V("amp1", 0.0, "mV"),
                V("dur2", 0.0, "ms"), V("amp2", 0.0, "mV"),
                V("dur3", 0.0, "ms"), V("amp3", 0.0, "mV")),
    assigned=(V("i", 0.0, "nA"), V("vc", 0.0, "mV"), V("tc2", 0.0, "ms"),
              V("tc3", 0.0, "ms"), V("on", 0.0, "1")),
    currents=("i",),
    procedures=(
        Procedure("icur", (), """
if on:
    i = (vc - v)/rs
else:
    i = 0.0
"""),
        Procedure("vstim", (), """
on = 1.0
if t < dur1:
    vc = amp1
elif t < tc2:
    vc = amp2
elif t < tc3:
    vc = amp3
else:
    vc = 0.0
    on = 0.0
icur()
"""),
    ),
    initial="tc2 = dur1 + dur2\ntc3 = tc2 + dur3\non = 0.0",
    breakpoint="vstim()",
    after_solve="icur()",
    doc="Single-electrode voltage clamp: three levels amp1..3 for dur1..3, series rs.",
)

ExpSyn = Mechanism(
    name="ExpSyn", kind="point", order=9,
    parameters=(V("tau", 0.1, "ms", "decay time constant"),
                V("e", 0.0, "mV", "reversal potential")),
    states=(V("g", 0.0, "uS"),),
    assigned=(V("i", 0.0, "nA"),),
    currents=("i",),
    initial="g = 0.0",
    breakpoint="i = g*(v - e)",
    cnexp=(Cnexp("g", "0.0", "(-1.0)/tau"),),
    net_receive="g = g + weight",
    doc="Synapse with a single-exponential conductance: each event adds its weight [µS].",
)

Exp2Syn = Mechanism(
    name="Exp2Syn", kind="point", order=10,
    parameters=(V("tau1", 0.1, "ms", "rise time constant"),
                V("tau2", 10.0, "ms", "decay time constant"),
                V("e", 0.0, "mV", "reversal potential")),
    states=(V("A", 0.0, "uS"), V("B", 0.0, "uS")),
    assigned=(V("i", 0.0, "nA"), V("g", 0.0, "uS"), V("factor", 0.0, "1")),
    currents=("i",),
    initial="""
if tau1/tau2 > 0.9999:
    tau1 = 0.9999*tau2
if tau1/tau2 < 1e-9:
    tau1 = tau2*1e-9
A = 0.0
B = 0.0
tp = (tau1*tau2)/(tau2 - tau1)*log(tau2/tau1)
factor = -exp(-tp/tau1) + exp(-tp/tau2)
factor = 1.0/factor
""",
    breakpoint="g = B - A\ni = g*(v - e)",
    cnexp=(Cnexp("A", "0.0", "(-1.0)/tau1"), Cnexp("B", "0.0", "(-1.0)/tau2")),
    net_receive="A = A + weight*factor\nB = B + weight*factor",
    doc="Synapse with a difference of exponentials, normalised to a peak of the weight.",
)

HH = Mechanism(
    name="hh", kind="density", order=17,
    parameters=(V("gnabar", 0.12, "S/cm2"), V("gkbar", 0.036, "S/cm2"),
                V("gl", 0.0003, "S/cm2"), V("el", -54.3, "mV")),
    ions=(Ion("na", read=("ena",), write=("ina",)), Ion("k", read=("ek",), write=("ik",))),
    states=(V("m", 0.0, "1"), V("h", 0.0, "1"), V("n", 0.0, "1")),
    assigned=(V("gna", 0.0, "S/cm2"), V("gk", 0.0, "S/cm2"), V("il", 0.0, "mA/cm2"),
              V("minf", 0.0, "1"), V("hinf", 0.0, "1"), V("ninf", 0.0, "1"),
              V("mtau", 0.0, "ms"), V("htau", 0.0, "ms"), V("ntau", 0.0, "ms")),
    currents=("ina", "ik", "il"),
    functions=(Function("vtrap", ("x", "y"), """
if fabs(x/y) < 1e-6:
    vtrap = y*(1.0 - x/y/2.0)
else:
    vtrap = x/(exp(x/y) - 1.0)
"""),),
    procedures=(Procedure("rates", ("v",), """
q10 = pow(3.0, ((celsius - 6.3)/10.0))
alpha = .1*vtrap(-(v + 40.0), 10.0)
beta = 4.0*exp(-(v + 65.0)/18.0)
sum = alpha + beta
mtau = 1.0/(q10*sum)
minf = alpha/sum
alpha = .07*exp(-(v + 65.0)/20.0)
beta = 1.0/(exp(-(v + 35.0)/10.0) + 1.0)
sum = alpha + beta
htau = 1.0/(q10*sum)
hinf = alpha/sum
alpha = .01*vtrap(-(v + 55.0), 10.0)
beta = .125*exp(-(v + 65.0)/80.0)
sum = alpha + beta
ntau = 1.0/(q10*sum)
ninf = alpha/sum
""", table=Table(("minf", "mtau", "hinf", "htau", "ninf", "ntau"), ("celsius",),
                 -100.0, 100.0, 200)),),
    initial="rates(v)\nm = minf\nh = hinf\nn = ninf",
    breakpoint="""
gna = gnabar*m*m*m*h
ina = gna*(v - ena)
gk = gkbar*n*n*n*n
ik = gk*(v - ek)
il = gl*(v - el)
""",
    state="rates(v)",
    cnexp=(Cnexp("m", "minf/mtau", "(-1.0)/mtau"), Cnexp("h", "hinf/htau", "(-1.0)/htau"),
           Cnexp("n", "ninf/ntau", "(-1.0)/ntau")),
    doc="Hodgkin-Huxley squid axon sodium, potassium and leak channels.",
)

NetStim = Mechanism(
    name="NetStim", kind="artificial", order=19,
    parameters=(V("interval", 10.0, "ms"), V("number", 10.0, "1"), V("start", 50.0, "ms"),
                V("noise", 0.0, "1")),
    doc="Regular spike generator (the event logic is in hinesbatch.network).",
)

VecStim = Mechanism(
    name="VecStim", kind="artificial", order=20,
    doc="Spike generator playing a given train (the event logic is in hinesbatch.network).",
)

BUILTINS = {m.name: m for m in (PAS, IClamp, SEClamp, ExpSyn, Exp2Syn, HH, NetStim, VecStim)}
