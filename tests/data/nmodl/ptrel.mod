: A transmitter concentration T that follows the local voltage (a sigmoid) with time
: constant tau; another mechanism reads it through a POINTER.
NEURON {
    SUFFIX ptrel
    RANGE T, Tmax, vth, k, tau
}
UNITS {
    (mV) = (millivolt)
    (mM) = (milli/liter)
}
PARAMETER {
    Tmax = 1 (mM)
    vth = -20 (mV)
    k = 2 (mV)
    tau = 1.5 (ms)
}
ASSIGNED {
    v (mV)
}
STATE {
    T (mM)
}
INITIAL {
    T = Tmax/(1 + exp(-(v - vth)/k))
}
BREAKPOINT {
    SOLVE states METHOD cnexp
}
DERIVATIVE states {
    T' = (Tmax/(1 + exp(-(v - vth)/k)) - T)/tau
}
