: A train of n current pulses (amp for ton ms, then off for toff ms) from del on, timed by
: self-events sent from INITIAL and NET_RECEIVE with flag 1; NetCon events (flag 0) are
: ignored. Written for hinesbatch's tests.
NEURON {
    POINT_PROCESS pulsetrain
    RANGE del, ton, toff, amp, n, i
    ELECTRODE_CURRENT i
}
PARAMETER {
    del = 2 (ms)
    ton = 1.5 (ms)
    toff = 3 (ms)
    amp = 0.3 (nA)
    n = 4
}
ASSIGNED { i (nA) on left }
INITIAL {
    i = 0
    on = 0
    left = n
    if (left > 0) {
        net_send(del, 1)
    }
}
BREAKPOINT { i = amp*on }
NET_RECEIVE(w) {
    if (flag == 1) {
        if (on == 0) {
            on = 1
            net_send(ton, 1)
        } else {
            on = 0
            left = left - 1
            if (left > 0) {
                net_send(toff, 1)
            }
        }
    }
}
