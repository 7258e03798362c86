: A synapse gated by the transmitter concentration C it reads through a POINTER: in
: INITIAL, in the BREAKPOINT (directly and through a FUNCTION) and in the state update.
NEURON {
    POINT_PROCESS ptsyn
    POINTER C
    NONSPECIFIC_CURRENT i
    RANGE R, g, gmax, e, alpha, beta, kd
}
UNITS {
    (nA) = (nanoamp)
    (mV) = (millivolt)
    (uS) = (microsiemens)
    (mM) = (milli/liter)
}
PARAMETER {
    gmax = 0.01 (uS)
    e = 0 (mV)
    alpha = 2 (/ms mM)
    beta = 0.5 (/ms)
    kd = 0.3 (mM)
}
ASSIGNED {
    v (mV)
    C (mM)
    i (nA)
    g (uS)
}
STATE {
    R
}
INITIAL {
    R = alpha*C/(alpha*C + beta)
}
BREAKPOINT {
    SOLVE states METHOD cnexp
    g = gmax*R*(1 + occupancy())
    i = g*(v - e)
}
DERIVATIVE states {
    R' = alpha*C*(1 - R) - beta*R
}
FUNCTION occupancy() {
    occupancy = C/(C + kd)
}
