: A synapse whose release facilitates and depresses (per NetCon: the resources x, the
: release probability u and the time of the NetCon's last event), written for
: hinesbatch's tests: NET_RECEIVE with a weight vector and its own INITIAL block.
NEURON {
    POINT_PROCESS fdsyn
    RANGE tau, e, i, U, tau_rec, tau_fac
    NONSPECIFIC_CURRENT i
}
PARAMETER {
    tau = 3 (ms)
    e = 0 (mV)
    U = 0.3
    tau_rec = 40 (ms)
    tau_fac = 20 (ms)
}
ASSIGNED { v (mV) i (nA) }
STATE { g (uS) }
INITIAL { g = 0 }
BREAKPOINT {
    SOLVE state METHOD cnexp
    i = g*(v - e)
}
DERIVATIVE state { g' = -g/tau }
NET_RECEIVE(weight (uS), x, u, tlast (ms)) {
    INITIAL {
        x = 1
        u = U
        tlast = -1e9
    }
    x = 1 - (1 - x)*exp(-(t - tlast)/tau_rec)
    u = U + (u - U)*exp(-(t - tlast)/tau_fac)
    g = g + weight*u*x
    x = x - u*x
    u = u + U*(1 - u)
    tlast = t
}
