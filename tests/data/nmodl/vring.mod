: A leak towards the mean voltage of the last `nav` steps, kept in a ring buffer: array
: elements indexed by values known only during the run, in a FROM loop whose bound is a
: PARAMETER.
NEURON {
    SUFFIX vring
    NONSPECIFIC_CURRENT i
    RANGE g, nav, vavg
}
PARAMETER {
    g = 0.002 (S/cm2)
    nav = 5
}
ASSIGNED { v (mV) i (mA/cm2) buf[16] (mV) k vavg (mV) }
INITIAL {
    LOCAL j
    k = 0
    FROM j = 0 TO 15 { buf[j] = v }
    vavg = v
}
BREAKPOINT {
    SOLVE store
    i = g*(v - vavg)
}
PROCEDURE store() {
    LOCAL j, at, s
    buf[k] = v
    s = 0
    FROM j = 0 TO nav - 1 {
        at = fmod(k + 16 - j, 16)
        s = s + buf[at]
    }
    vavg = s/nav
    k = fmod(k + 1, 16)
}
