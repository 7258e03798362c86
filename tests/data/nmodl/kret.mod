: A potassium channel updated by a PROCEDURE (SOLVE of a PROCEDURE), whose PROCEDUREs and
: INITIAL end in VERBATIM returns: C that changes nothing where it stands.

NEURON {
    SUFFIX kret
    USEION k READ ek WRITE ik
    RANGE gbar
    GLOBAL ninf, ntau
}

PARAMETER {
    gbar = 0.01 (S/cm2)
    vhalf = -35 (mV)
}

STATE { n }

ASSIGNED {
    v (mV)
    ik (mA/cm2)
    ek (mV)
    ninf
    ntau (ms)
}

BREAKPOINT {
    SOLVE states
    ik = gbar*n*n*n*n*(v - ek)
}

INITIAL {
    rates(v)
    n = ninf
    VERBATIM
    return;
    ENDVERBATIM
}

PROCEDURE states() {
    rates(v)
    n = n + (1 - exp(-dt/ntau))*(ninf - n)
    VERBATIM
    return 0;
    ENDVERBATIM
}

PROCEDURE rates(v (mV)) {
    TABLE ninf, ntau DEPEND vhalf FROM -100 TO 100 WITH 200
    ninf = 1/(1 + exp(-(v - vhalf)/9))
    ntau = 1 + 4/(1 + exp((v + 40)/15))
    VERBATIM
    return(0);   /* the end of a PROCEDURE, like nocmodl's own return */
    ENDVERBATIM
}
