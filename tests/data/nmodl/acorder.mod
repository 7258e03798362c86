: A PROCEDURE solved with METHOD after_cvode before a cnexp SOLVE: NEURON runs the SOLVEs
: in the file's order, so the state update reads the V that upd() just set from the new v.
NEURON {
    SUFFIX acorder
    NONSPECIFIC_CURRENT i
    RANGE g, e, tau, V
}
UNITS {
    (mA) = (milliamp)
    (mV) = (millivolt)
    (S) = (siemens)
}
PARAMETER {
    g = 0.002 (S/cm2)
    e = -80 (mV)
    tau = 3 (ms)
}
ASSIGNED {
    v (mV)
    i (mA/cm2)
    V (mV)
}
STATE {
    x
}
INITIAL {
    V = v
    x = 0
}
BREAKPOINT {
    SOLVE upd METHOD after_cvode
    SOLVE states METHOD cnexp
    i = g*x*(v - e)
}
DERIVATIVE states {
    x' = (1/(1 + exp(-(V + 40)/5)) - x)/tau
}
PROCEDURE upd() {
    V = v
}
