: A sodium channel with standard C headers included at the top level and VERBATIM blocks
: holding only comments: C that changes nothing.

VERBATIM
#include <stdlib.h>  /* declares free() */
#include <math.h>
ENDVERBATIM

NEURON {
    SUFFIX nainc
    USEION na READ ena WRITE ina
    RANGE gbar
}

PARAMETER { gbar = 0.03 (S/cm2) }

STATE { m h }

ASSIGNED {
    v (mV)
    ina (mA/cm2)
    ena (mV)
}

INITIAL {
    m = minf(v)
    h = hinf(v)
}

BREAKPOINT {
    SOLVE states METHOD cnexp
    ina = gbar*m*m*m*h*(v - ena)
}

DERIVATIVE states {
    m' = (minf(v) - m)/0.2
    h' = (hinf(v) - h)/htau(v)
}

FUNCTION minf(v (mV)) { minf = 1/(1 + exp(-(v + 38)/7)) }

FUNCTION hinf(v (mV)) {
    VERBATIM
    /* a comment only */
    ENDVERBATIM
    hinf = 1/(1 + exp((v + 65)/6))
}

FUNCTION htau(v (mV)) (ms) {
    if (v < -60) {
        htau = 5
        VERBATIM
        ENDVERBATIM
    } else {
        htau = 1 + 4*exp(-(v + 60)/20)
    }
}
