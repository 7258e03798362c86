: Each event of a NetCon adds weight*n, n counting that NetCon's events: a weight vector
: entry without an INITIAL block in NET_RECEIVE (NEURON sets it to 0 at finitialize).
: Written for hinesbatch's tests.
NEURON {
    POINT_PROCESS countsyn
    RANGE tau, e, i
    NONSPECIFIC_CURRENT i
}
PARAMETER {
    tau = 2 (ms)
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
NET_RECEIVE(weight (uS), n) {
    n = n + 1
    g = g + weight*n
}
