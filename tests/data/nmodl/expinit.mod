: A leak whose conductance INITIAL draws from NEURON's random-number stream (exprand),
: after setting the stream's seed where the PARAMETER seed is >= 0; it also draws a
: Poisson count and a uniform number into k.
NEURON {
    SUFFIX expinit
    NONSPECIFIC_CURRENT i
    RANGE gmax, e, seed, g, k
}
PARAMETER {
    gmax = 0.0002 (S/cm2)
    e = -70 (mV)
    seed = -1
}
ASSIGNED { v (mV) i (mA/cm2) g (S/cm2) k }
INITIAL {
    if (seed >= 0) {
        set_seed(seed)
    }
    g = gmax*exprand(1)
    k = poisrand(3)
    k = k + scop_random()
}
BREAKPOINT { i = g*(v - e) }
