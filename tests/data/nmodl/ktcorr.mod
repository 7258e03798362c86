: A potassium channel whose tabulated rate procedure also writes RANGE variables besides
: its outputs (tcorr, and a in the procedure it calls) and depends on one of them. The
: current reads tcorr, so the value each instance holds shows in the voltage. Written for
: hinesbatch's tests (the project's license).
NEURON {
    THREADSAFE
    SUFFIX ktcorr
    USEION k READ ek WRITE ik
    RANGE gbar, tcorr, ninf, ntau
}
PARAMETER {
    gbar = 0.01 (S/cm2)
    q10 = 3
}
ASSIGNED { v (mV) ek (mV) ik (mA/cm2) celsius (degC) ninf ntau (ms) tcorr a (/ms) }
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
    TABLE ninf, ntau DEPEND celsius, tcorr FROM -100 TO 100 WITH 200
    tcorr = q10^((celsius - 20)/10)
    alpha(v)
    ntau = 1/(tcorr*(a + 0.125*exp(-(v + 65)/80)))
    ninf = a*ntau*tcorr
}
PROCEDURE alpha(v (mV)) {
    a = 0.01*(v + 55.3)/(1 - exp(-(v + 55.3)/10))
}
