: A calcium channel whose rates are FUNCTIONs with TABLEs (one depending on a PARAMETER),
: called from a PROCEDURE and from BREAKPOINT. Written for hinesbatch's tests (the
: project's license).
NEURON {
    SUFFIX cafun
    USEION ca READ eca WRITE ica
    RANGE gbar
    GLOBAL minf, mtau
}
PARAMETER {
    gbar = 0.002 (S/cm2)
    vblock = 20 (mV)
}
ASSIGNED { v (mV) eca (mV) ica (mA/cm2) minf mtau (ms) }
STATE { m }
INITIAL { rates(v) m = minf }
BREAKPOINT {
    SOLVE states METHOD cnexp
    ica = gbar*m*m*block(v)*(v - eca)
}
DERIVATIVE states {
    rates(v)
    m' = (minf - m)/mtau
}
PROCEDURE rates(v (mV)) {
    LOCAL a, b
    a = alpha(v)
    b = beta(v)
    mtau = 1/(a + b)
    minf = a*mtau
}
FUNCTION alpha(v (mV)) (/ms) {
    TABLE FROM -100 TO 60 WITH 160
    alpha = 0.1*vtrap(-(v + 25), 10)
}
FUNCTION beta(v (mV)) (/ms) {
    TABLE FROM -100 TO 60 WITH 80
    beta = 4*exp(-(v + 50)/18)
}
FUNCTION block(v (mV)) {
    TABLE DEPEND vblock FROM -120 TO 80 WITH 200
    block = 1/(1 + exp(-(v + vblock)/8))
}
FUNCTION vtrap(x, y) {
    if (fabs(x/y) < 1e-6) {
        vtrap = y*(1 - x/y/2)
    } else {
        vtrap = x/(exp(x/y) - 1)
    }
}
