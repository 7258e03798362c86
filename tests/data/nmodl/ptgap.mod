: A gap junction half: the current from this node to the node whose voltage vgap points at.
NEURON {
    POINT_PROCESS ptgap
    POINTER vgap
    NONSPECIFIC_CURRENT i
    RANGE g, i
}
UNITS {
    (nA) = (nanoamp)
    (mV) = (millivolt)
    (uS) = (microsiemens)
}
PARAMETER {
    g = 0.002 (uS)
}
ASSIGNED {
    v (mV)
    vgap (mV)
    i (nA)
}
BREAKPOINT {
    i = g*(v - vgap)
}
