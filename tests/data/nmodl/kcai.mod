NEURON { SUFFIX kcai USEION k READ ek WRITE ik USEION ca READ cai RANGE gbar }
PARAMETER { gbar = 0.01 (S/cm2) kd = 0.001 (mM) }
ASSIGNED { v (mV) ek (mV) ik (mA/cm2) cai (mM) }
BREAKPOINT { ik = gbar*cai/(cai + kd)*(v - ek) }
