: Calcium in three shells under the membrane with a mobile buffer (a test file of
: hinesbatch, the project's license): STATE arrays, an indexed COMPARTMENT, radial
: diffusion between the shells written in FROM loops, buffering, and the array form of
: LONGITUDINAL_DIFFUSION for the calcium and for both forms of the buffer (two statements,
: one with two species).

NEURON {
    SUFFIX cashell
    USEION ca READ cai, ica WRITE cai
    RANGE DCa, DBuf, total
    GLOBAL vrat
}

DEFINE NSHELL 3

UNITS {
    (mM) = (milli/liter)
    (um) = (micron)
    (mA) = (milliamp)
    FARADAY = (faraday) (10000 coulomb)
    PI = (pi) (1)
}

PARAMETER {
    DCa = 0.6 (um2/ms)
    DBuf = 0.05 (um2/ms)
    kf = 10 (/mM-ms)
    kb = 0.01 (/ms)
    total = 0.05 (mM)
    taur = 50 (ms)
    cainf = 5e-5 (mM)
}

ASSIGNED {
    diam (um)
    ica (mA/cm2)
    cai (mM)
    vrat[NSHELL] (1)
}

LOCAL frat[NSHELL]

STATE {
    ca[NSHELL] (mM) <1e-8>
    buf[NSHELL] (mM)
    cabuf[NSHELL] (mM)
}

INITIAL {
    geometry()
    FROM i = 0 TO NSHELL - 1 {
        ca[i] = cai
        buf[i] = total/(1 + kf*cai/kb)
        cabuf[i] = total - buf[i]
    }
}

PROCEDURE geometry() {
    LOCAL r, dr
    : shell k of a cylinder of diameter 1: its area per unit length, and the coupling
    : to the shell inside it (area of the boundary over the distance of the centres)
    r = 0.5
    dr = r/NSHELL
    FROM i = 0 TO NSHELL - 1 {
        vrat[i] = PI*(r*r - (r - dr)*(r - dr))
        frat[i] = 2*PI*(r - dr)/dr
        r = r - dr
    }
}

BREAKPOINT {
    SOLVE shells METHOD sparse
}

LOCAL dsq

KINETIC shells {
    COMPARTMENT i, diam*diam*vrat[i] {ca buf cabuf}
    LONGITUDINAL_DIFFUSION i, DCa*diam*diam*vrat[i] {ca}
    LONGITUDINAL_DIFFUSION i, DBuf*diam*diam*vrat[i] {buf cabuf}
    ~ ca[0] << (-ica*PI*diam/(2*FARADAY) + (cainf - ca[0])*diam*diam*vrat[0]/taur)
    FROM i = 0 TO NSHELL - 2 {
        ~ ca[i] <-> ca[i+1] (DCa*frat[i], DCa*frat[i])
    }
    dsq = diam*diam
    FROM i = 0 TO NSHELL - 1 {
        ~ ca[i] + buf[i] <-> cabuf[i] (kf*dsq*vrat[i], kb*dsq*vrat[i])
    }
    cai = ca[0]
}
