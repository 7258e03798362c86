: A potassium channel whose conductance is n^npow, the power taken by a FROM loop whose
: bound is a PARAMETER (settable per region), and whose rates come from a FUNCTION that
: also writes the RANGE variable ntau.
NEURON {
    SUFFIX kloop
    USEION k READ ek WRITE ik
    RANGE gbar, npow, ninf, ntau
}
PARAMETER {
    gbar = 0.01 (S/cm2)
    npow = 3
}
ASSIGNED { v (mV) ek (mV) ik (mA/cm2) ninf ntau (ms) }
STATE { n }
INITIAL {
    ninf = ninf_tau(v)
    n = ninf
}
BREAKPOINT {
    LOCAL g, k
    SOLVE states METHOD cnexp
    g = gbar
    FROM k = 1 TO npow {
        g = g*n
    }
    ik = g*(v - ek)
}
DERIVATIVE states {
    ninf = ninf_tau(v)
    n' = (ninf - n)/ntau
}
FUNCTION ninf_tau(v (mV)) {
    LOCAL a, b
    a = 0.01*exp((v + 55)/12)
    b = 0.125*exp(-(v + 65)/80)
    ntau = 1/(a + b)
    ninf_tau = a*ntau
}
