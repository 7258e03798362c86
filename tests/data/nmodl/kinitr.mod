: kinit without the DEPEND: NEURON builds the table once, before INITIAL (tcorr still
: 0), and uses it for the whole run. Written for hinesbatch's tests (the project's license).
NEURON {
    THREADSAFE
    SUFFIX kinitr
    USEION k READ ek WRITE ik
    RANGE gbar, tcorr
}
PARAMETER {
    gbar = 0.01 (S/cm2)
    q10 = 3
}
ASSIGNED { v (mV) ek (mV) ik (mA/cm2) celsius (degC) ninf ntau (ms) tcorr }
STATE { n }
INITIAL {
    tcorr = q10^((celsius - 20)/10)
    rates(v)
    n = ninf
}
BREAKPOINT {
    SOLVE states METHOD cnexp
    ik = gbar*n*n*n*n*(v - ek)
}
DERIVATIVE states {
    rates(v)
    n' = (ninf - n)/ntau
}
PROCEDURE rates(v (mV)) {
    LOCAL a, b
    TABLE ninf, ntau FROM -100 TO 100 WITH 200
    a = 0.01*(v + 55.3)/(1 - exp(-(v + 55.3)/10))
    b = 0.125*exp(-(v + 65)/80)
    ntau = 1/((1 + tcorr)*(a + b))
    ninf = a/(a + b*(1 + tcorr))
}
