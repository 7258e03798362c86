: A synapse whose every event scales the weights of all NetCons onto it and counts them,
: written for hinesbatch's tests: FOR_NETCONS alone (the loop also reads the event's own
: weight, which it changes through the event's own NetCon).
NEURON {
    POINT_PROCESS allsyn
    RANGE tau, e, i, f, seen
    NONSPECIFIC_CURRENT i
}
PARAMETER {
    tau = 3 (ms)
    e = 0 (mV)
    f = 0.9
}
ASSIGNED { v (mV) i (nA) seen }
STATE { g (uS) }
INITIAL { g = 0 seen = 0 }
BREAKPOINT {
    SOLVE state METHOD cnexp
    i = g*(v - e)
}
DERIVATIVE state { g' = -g/tau }
NET_RECEIVE(w (uS), n) {
    g = g + w
    FOR_NETCONS(wk, nk) {
        seen = seen + w*nk
        wk = wk*f
        nk = nk + 1
    }
}
