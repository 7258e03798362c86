: A persistent sodium current whose activation, a STATE, is a TABLE output set in
: BREAKPOINT (no SOLVE integrates it). Written for hinesbatch's tests (the project's
: license).
NEURON {
    SUFFIX nastate
    USEION na READ ena WRITE ina
    RANGE gbar, vhalf
}
PARAMETER {
    gbar = 0.0005 (S/cm2)
    vhalf = -50 (mV)
    k = 4 (mV)
}
ASSIGNED { v (mV) ena (mV) ina (mA/cm2) }
STATE { m }
BREAKPOINT {
    steady(v)
    ina = gbar*m*m*m*(v - ena)
}
PROCEDURE steady(v (mV)) {
    TABLE m DEPEND vhalf, k FROM -120 TO 60 WITH 180
    m = 1/(1 + exp((vhalf - v)/k))
}
