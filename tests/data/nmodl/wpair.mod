: A point process with two WATCH conditions active at once, written for hinesbatch's
: tests: (v > a) sends flag 2 and re-activates both conditions, which removes a flag-3
: event of the same check not yet delivered; (b < v) sends flag 3; a NetCon's event
: activates them again at its own time, v above the thresholds or not. Each event adds its
: own conductance, so the membrane potential shows which events acted and when.
NEURON {
    POINT_PROCESS wpair
    RANGE a, b, gk, tau, i
    NONSPECIFIC_CURRENT i
}
PARAMETER {
    a = -20 (mV)
    b = -21 (mV)
    gk = 0.002 (uS)
    tau = 4 (ms)
    ek = -80 (mV)
}
ASSIGNED { v (mV) i (nA) }
STATE { g (uS) }
INITIAL {
    g = 0
    net_send(0, 1)
}
BREAKPOINT {
    SOLVE state METHOD cnexp
    i = g*(v - ek)
}
DERIVATIVE state { g' = -g/tau }
NET_RECEIVE(w) {
    if (flag == 2) {
        g = g + gk
        WATCH (v > a) 2, (b < v) 3
    } else if (flag == 3) {
        g = g + 3*gk
    } else {
        WATCH (v > a) 2, (b < v) 3
    }
}
