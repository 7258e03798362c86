: A synapse that writes, into every NetCon onto it, the place FOR_NETCONS visits it at,
: written for hinesbatch's tests: entry 1 of each weight vector collects the places
: (rank*10 + place), so the weights after a run show NEURON's order of the NetCons.
NEURON {
    POINT_PROCESS ordsyn
    RANGE tau, e, i
    NONSPECIFIC_CURRENT i
}
PARAMETER {
    tau = 3 (ms)
    e = 0 (mV)
}
ASSIGNED { v (mV) i (nA) }
STATE { g (uS) }
INITIAL { g = 0 }
BREAKPOINT {
    SOLVE state METHOD cnexp
    i = g*(v - e)
}
DERIVATIVE state { g' = -g/tau }
NET_RECEIVE(w (uS), rank) {
    LOCAL k
    INITIAL { rank = 0 }
    g = g + w
    k = 0
    FOR_NETCONS(wk, rk) {
        k = k + 1
        rk = rk*10 + k
    }
}
