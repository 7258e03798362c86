COMMENT
A synapse whose NET_RECEIVE arguments tlast and nev have the names of the point process's
own RANGE variables: inside NET_RECEIVE they are the NetCon's weight-vector entries, so
each NetCon keeps its own time of last event and count, and the RANGE variables, which
BREAKPOINT reads, keep what INITIAL set. Written for hinesbatch's tests.
ENDCOMMENT

NEURON {
    POINT_PROCESS hidesyn
    RANGE tau, e, i, tlast, nev
    NONSPECIFIC_CURRENT i
}

UNITS {
    (nA) = (nanoamp)
    (mV) = (millivolt)
    (uS) = (microsiemens)
}

PARAMETER {
    tau = 2 (ms)
    e = 0 (mV)
}

ASSIGNED {
    v (mV)
    i (nA)
    tlast (ms)
    nev
}

STATE {
    g (uS)
}

INITIAL {
    g = 0
    tlast = -1
    nev = 0
}

BREAKPOINT {
    SOLVE state METHOD cnexp
    i = g*(v - e)*(1 + 0.01*tlast + 0.1*nev)
}

DERIVATIVE state {
    g' = -g/tau
}

NET_RECEIVE(w (uS), tlast (ms), nev) {
    INITIAL {
        tlast = -100
        nev = 0
    }
    g = g + w*(1 + exp(-(t - tlast)/5))/(1 + nev)
    tlast = t
    nev = nev + 1
}
