: A density coupling: a conductance per area to the voltage vgap points at.
NEURON {
    SUFFIX ptdgap
    POINTER vgap
    NONSPECIFIC_CURRENT i
    RANGE g
}
UNITS {
    (mA) = (milliamp)
    (mV) = (millivolt)
    (S) = (siemens)
}
PARAMETER {
    g = 0.0005 (S/cm2)
}
ASSIGNED {
    v (mV)
    vgap (mV)
    i (mA/cm2)
}
BREAKPOINT {
    i = g*(v - vgap)
}
