NEURON { SUFFIX caeca USEION ca READ eca WRITE ica RANGE gbar }
PARAMETER { gbar = 0.002 (S/cm2) }
ASSIGNED { v (mV) eca (mV) ica (mA/cm2) minf mtau (ms) }
STATE { m }
INITIAL { rates(v) m = minf }
BREAKPOINT { SOLVE states METHOD cnexp  ica = gbar*m*m*(v - eca) }
DERIVATIVE states { rates(v) m' = (minf - m)/mtau }
PROCEDURE rates(v (mV)) { minf = 1/(1 + exp(-(v + 30)/6)) mtau = 1.5 }
