: A calcium-activated potassium channel whose INITIAL reloads cai from the ion in a
: VERBATIM block, as nocmodl has just loaded it: C that changes nothing.

NEURON {
    SUFFIX kcareload
    USEION k READ ek WRITE ik
    USEION ca READ cai
    RANGE gbar
}

PARAMETER {
    gbar = 0.0005 (S/cm2)
    kd = 0.0002 (mM)
    tau = 5 (ms)
}

ASSIGNED {
    v (mV)
    ek (mV)
    ik (mA/cm2)
    cai (mM)
}

STATE { o }

INITIAL {
    VERBATIM
    cai = _ion_cai;   /* the value nocmodl loaded before the block */
    ENDVERBATIM
    o = cai/(cai + kd)
}

BREAKPOINT {
    SOLVE s METHOD cnexp
    ik = gbar*o*(v - ek)
}

DERIVATIVE s { o' = (cai/(cai + kd) - o)/tau }
