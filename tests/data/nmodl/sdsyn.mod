: A rise-and-decay synapse whose NET_RECEIVE jumps its states with state_discontinuity,
: and prints (printf) at initialization and from a procedure no block calls.
NEURON {
    POINT_PROCESS sdsyn
    NONSPECIFIC_CURRENT i
    RANGE trise, tdecay, e, i, scale
}
PARAMETER {
    trise = 0.4 (ms)
    tdecay = 3 (ms)
    e = 0 (mV)
}
ASSIGNED { v (mV) i (nA) scale }
STATE { a (uS) b (uS) }
INITIAL {
    LOCAL tpeak
    a = 0
    b = 0
    tpeak = trise*tdecay/(tdecay - trise)*log(tdecay/trise)
    scale = 1/(exp(-tpeak/tdecay) - exp(-tpeak/trise))
    printf("sdsyn: scale %g\n", scale)
}
BREAKPOINT {
    SOLVE decay METHOD cnexp
    i = (b - a)*(v - e)
}
DERIVATIVE decay {
    a' = -a/trise
    b' = -b/tdecay
}
NET_RECEIVE(w (uS)) {
    state_discontinuity(a, a + w*scale)
    state_discontinuity(b, b + w*scale)
}
PROCEDURE banner() {
    printf("sdsyn.mod\n")
}
