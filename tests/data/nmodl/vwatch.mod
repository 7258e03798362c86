: A point process that answers each rise of its v through a threshold with a decaying
: outward current, written for hinesbatch's tests: WATCH alone (installed from INITIAL by
: net_send), the self-event's time shows in the membrane potential.
NEURON {
    POINT_PROCESS vwatch
    RANGE thr, gk, tau, i, n, tlast
    NONSPECIFIC_CURRENT i
}
PARAMETER {
    thr = -30 (mV)
    gk = 0.01 (uS)
    tau = 5 (ms)
    ek = -80 (mV)
}
ASSIGNED { v (mV) i (nA) n tlast (ms) }
STATE { g (uS) }
INITIAL {
    g = 0
    n = 0
    tlast = -1
    net_send(0, 1)
}
BREAKPOINT {
    SOLVE state METHOD cnexp
    i = g*(v - ek)
}
DERIVATIVE state { g' = -g/tau }
NET_RECEIVE(w) {
    if (flag == 1) {
        WATCH (v > thr) 2
    } else if (flag == 2) {
        g = g + gk
        n = n + 1
        tlast = t
    }
}
