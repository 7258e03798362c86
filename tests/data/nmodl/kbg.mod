NEURON { SUFFIX kbg NONSPECIFIC_CURRENT i RANGE g }
PARAMETER { g = 0.0002 (S/cm2) kf = 2 (/ms) kb = 0.1 (/ms) Btot = 2 }
ASSIGNED { v (mV) i (mA/cm2) }
STATE { x B XB }
BREAKPOINT {
    SOLVE kin METHOD sparse
    i = g*XB*(v + 20)
}
INITIAL { x = 0.1 B = 1 SOLVE kin STEADYSTATE sparse }
KINETIC kin {
    ~ x + B <-> XB (kf*exp(v/30), kb)
    ~ x << (0.001)
    COMPARTMENT 2 {B XB}
    CONSERVE B + XB = Btot
}
