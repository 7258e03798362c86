: A potassium channel whose rate FUNCTIONs each write the RANGE variable tcorr (with
: different values) before using it, called by a tabulated PROCEDURE. The current reads
: tcorr, so the value each instance holds shows in the voltage. Written for hinesbatch's
: tests (the project's license).
NEURON {
    THREADSAFE
    SUFFIX kfside
    USEION k READ ek WRITE ik
    RANGE gbar, tcorr, q10a, q10b
}
PARAMETER {
    gbar = 0.01 (S/cm2)
    q10a = 3
    q10b = 2
}
ASSIGNED { v (mV) ek (mV) ik (mA/cm2) celsius (degC) ninf ntau (ms) tcorr }
STATE { n }
INITIAL { rates(v) n = ninf }
BREAKPOINT {
    SOLVE states METHOD cnexp
    ik = gbar*(1 + tcorr)*n*n*n*n*(v - ek)
}
DERIVATIVE states {
    rates(v)
    n' = (ninf - n)/ntau
}
PROCEDURE rates(v (mV)) {
    LOCAL a, b
    TABLE ninf, ntau DEPEND celsius, q10a, q10b FROM -100 TO 100 WITH 200
    a = alpha(v)
    b = beta(v)
    ntau = 1/(a + b)
    ninf = a*ntau
}
FUNCTION alpha(v (mV)) (/ms) {
    tcorr = q10a^((celsius - 20)/10)
    alpha = tcorr*0.01*(v + 55.3)/(1 - exp(-(v + 55.3)/10))
}
FUNCTION beta(v (mV)) (/ms) {
    tcorr = q10b^((celsius - 20)/10)
    beta = tcorr*0.125*exp(-(v + 65)/80)
}
