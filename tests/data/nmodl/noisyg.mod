: A leak whose conductance is drawn anew every step (normrand in the PROCEDURE that
: BREAKPOINT SOLVEs), with a density mechanism's type order among the random draws.
NEURON {
    SUFFIX noisyg
    NONSPECIFIC_CURRENT i
    RANGE gmax, e, g
}
PARAMETER {
    gmax = 0.0003 (S/cm2)
    e = -60 (mV)
}
ASSIGNED { v (mV) i (mA/cm2) g (S/cm2) }
INITIAL { g = gmax }
BREAKPOINT {
    SOLVE jitter
    i = g*(v - e)
}
PROCEDURE jitter() {
    g = gmax*(1 + 0.3*normrand(0, 1))
}
