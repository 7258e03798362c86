NEURON { SUFFIX kcg NONSPECIFIC_CURRENT i RANGE g }
PARAMETER { g = 0.005 (S/cm2) k = 0.5 (/ms) }
ASSIGNED { v (mV) i (mA/cm2) }
STATE { m n }
INITIAL { m = 0.1 n = 0.2 }
BREAKPOINT {
    SOLVE s METHOD derivimplicit
    i = g*m*n*(v + 20)
}
DERIVATIVE s {
    m' = exp(v/40)*(1 - m) - k*m*n
    n' = 0.3*m*m - n
}
