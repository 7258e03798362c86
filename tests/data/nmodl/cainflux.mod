: A calcium current that flows from del to del + dur (a test file of hinesbatch, the
: project's license): the calcium influx at one end of a cell in the diffusion tests.

NEURON {
    SUFFIX cainflux
    USEION ca WRITE ica
    RANGE amp, del, dur
}

UNITS {
    (mA) = (milliamp)
}

PARAMETER {
    amp = 0.002 (mA/cm2)
    del = 1 (ms)
    dur = 5 (ms)
}

ASSIGNED {
    ica (mA/cm2)
}

BREAKPOINT {
    if (t >= del && t < del + dur) {
        ica = -amp
    } else {
        ica = 0
    }
}
