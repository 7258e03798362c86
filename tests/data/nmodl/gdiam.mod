: A leak whose conductance grows with the segment's diameter (NEURON's diam), computed in
: INITIAL and read in BREAKPOINT.
NEURON {
    SUFFIX gdiam
    NONSPECIFIC_CURRENT i
    RANGE g0, dref, e, g
}
PARAMETER {
    g0 = 0.0003 (S/cm2)
    dref = 2 (um)
    e = -70 (mV)
}
ASSIGNED { v (mV) i (mA/cm2) diam (um) g (S/cm2) }
INITIAL { g = g0*sqrt(diam/dref) }
BREAKPOINT { i = g*(v - e) }
