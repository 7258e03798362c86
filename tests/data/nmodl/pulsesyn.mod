: A transmitter pulse of duration Cdur per event, ended by a self-event (net_send) whose
: flag names the event that started it, so that overlapping events extend the pulse;
: written for hinesbatch's tests.
NEURON {
    POINT_PROCESS pulsesyn
    RANGE Cdur, alpha, beta, gmax, e, i, T
    NONSPECIFIC_CURRENT i
}
PARAMETER {
    Cdur = 1.1 (ms)
    alpha = 2 (/ms)
    beta = 0.3 (/ms)
    gmax = 0.004 (uS)
    e = 0 (mV)
}
ASSIGNED { v (mV) i (nA) T }
STATE { r }
INITIAL {
    r = 0
    T = 0
}
BREAKPOINT {
    SOLVE bind METHOD cnexp
    i = gmax*r*(v - e)
}
DERIVATIVE bind { r' = alpha*T*(1 - r) - beta*r }
NET_RECEIVE(weight, count, busy) {
    INITIAL {
        count = 0
        busy = 0
    }
    if (flag == 0) {
        count = count + 1
        if (!busy) {
            busy = 1
            T = weight
        }
        net_send(Cdur, count)
    } else if (flag == count) {
        T = 0
        busy = 0
    }
}
