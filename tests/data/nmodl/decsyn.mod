: A synapse whose NetCon weight shrinks by a factor at each of its events, written for
: hinesbatch's tests: NET_RECEIVE assigns its first argument (NetCon.weight[0]).
NEURON {
    POINT_PROCESS decsyn
    RANGE tau, e, i, f
    NONSPECIFIC_CURRENT i
}
PARAMETER {
    tau = 3 (ms)
    e = 0 (mV)
    f = 0.8
}
ASSIGNED { v (mV) i (nA) }
STATE { g (uS) }
INITIAL { g = 0 }
BREAKPOINT {
    SOLVE state METHOD cnexp
    i = g*(v - e)
}
DERIVATIVE state { g' = -g/tau }
NET_RECEIVE(w (uS)) {
    g = g + w
    w = w*f
}
