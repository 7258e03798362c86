: A potassium channel whose rate procedure tabulates 1 - exp(-dt/tau): a TABLE that
: depends on dt. Written for hinesbatch's tests (the project's license).
NEURON { SUFFIX kdt USEION k READ ek WRITE ik RANGE gbar }
PARAMETER { gbar = 0.01 (S/cm2) }
ASSIGNED { v (mV) ek (mV) ik (mA/cm2) ninf nexp }
STATE { n }
INITIAL { rates(v) n = ninf }
BREAKPOINT {
    SOLVE states
    ik = gbar*n*n*n*n*(v - ek)
}
PROCEDURE states() {
    rates(v)
    n = n + nexp*(ninf - n)
}
PROCEDURE rates(v (mV)) {
    LOCAL tau
    TABLE ninf, nexp DEPEND dt, celsius FROM -100 TO 100 WITH 200
    tau = 1 + 4*exp(-((v + 50)/20)^2)
    ninf = 1/(1 + exp(-(v + 45)/9))
    nexp = 1 - exp(-dt/tau)
}
