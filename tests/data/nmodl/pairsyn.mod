: A conductance synapse with pair-based spike-timing-dependent plasticity, written for
: hinesbatch's tests: NET_RECEIVE assigns its weight (depression at each presynaptic
: event), FOR_NETCONS potentiates every NetCon onto the synapse at each postsynaptic
: spike, which a WATCH on the synapse's own v detects (installed from INITIAL).
NEURON {
    POINT_PROCESS pairsyn
    RANGE tau, e, i, aplus, aminus, tplus, tminus, wmax, vpost, npost, tpost
    NONSPECIFIC_CURRENT i
}
PARAMETER {
    tau = 2 (ms)
    e = 0 (mV)
    aplus = 0.002 (uS)
    aminus = 0.0004 (uS)
    tplus = 15 (ms)
    tminus = 25 (ms)
    wmax = 0.02 (uS)
    vpost = -10 (mV)
}
ASSIGNED { v (mV) i (nA) tpost (ms) npost }
STATE { g (uS) }
INITIAL {
    g = 0
    tpost = -1e9
    npost = 0
    net_send(0, 1)
}
BREAKPOINT {
    SOLVE state METHOD cnexp
    i = g*(v - e)
}
DERIVATIVE state { g' = -g/tau }
NET_RECEIVE(w (uS), tpre (ms)) {
    INITIAL { tpre = -1e9 }
    if (flag == 0) {
        g = g + w
        w = w - aminus*exp((tpost - t)/tminus)
        if (w < 0) { w = 0 }
        tpre = t
    } else if (flag == 2) {
        npost = npost + 1
        tpost = t
        FOR_NETCONS(wk, tk) {
            wk = wk + aplus*exp((tk - t)/tplus)
            if (wk > wmax) { wk = wmax }
        }
    } else {
        WATCH (v > vpost) 2
    }
}
