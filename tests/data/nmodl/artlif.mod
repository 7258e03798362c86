: A leaky integrate-and-fire cell without a membrane: m decays to 0 with time constant
: tau between events (solved exactly), each NetCon event adds its weight; m above 1
: fires (net_event), resets m to 0 and ignores NetCon events for refrac ms (a
: self-event of flag 1 ends that). Written for hinesbatch's tests.
NEURON {
    ARTIFICIAL_CELL artlif
    RANGE tau, refrac, m
}
PARAMETER {
    tau = 5 (ms)
    refrac = 2 (ms)
}
ASSIGNED { m t0 (ms) refractory }
INITIAL {
    m = 0
    t0 = t
    refractory = 0
}
NET_RECEIVE(w) {
    if (flag == 0) {
        if (refractory == 0) {
            m = m*exp(-(t - t0)/tau) + w
            t0 = t
            if (m > 1) {
                net_event(t)
                refractory = 1
                m = 0
                net_send(refrac, 1)
            }
        }
    } else if (flag == 1) {
        refractory = 0
        t0 = t
    }
}
