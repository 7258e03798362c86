: A calcium pool under the membrane that diffuses along the cell (a test file of
: hinesbatch, the project's license): one state, its own COMPARTMENT volume, first-order
: removal to a resting level, and LONGITUDINAL_DIFFUSION of the pool between segments.

NEURON {
    SUFFIX capool
    USEION ca READ ica WRITE cai
    RANGE tau, cainf, D
}

UNITS {
    (mM) = (milli/liter)
    (um) = (micron)
    (mA) = (milliamp)
    FARADAY = (faraday) (coulomb)
    PI = (pi) (1)
}

PARAMETER {
    D = 0.6 (um2/ms)
    tau = 20 (ms)
    cainf = 5e-5 (mM)
    depth = 0.2 (um)
}

ASSIGNED {
    diam (um)
    ica (mA/cm2)
    cai (mM)
    shell (um2)
}

STATE {
    cp (mM) <1e-8>
}

INITIAL {
    shell = PI*depth*(diam - depth)
    cp = cainf
    cai = cp
}

BREAKPOINT {
    SOLVE pool METHOD sparse
}

KINETIC pool {
    COMPARTMENT shell {cp}
    LONGITUDINAL_DIFFUSION D*shell {cp}
    ~ cp << (-ica*PI*diam*(1e4)/(2*FARADAY))
    ~ cp << ((cainf - cp)*shell/tau)
    cai = cp
}
