NEURON { SUFFIX icaread USEION ca READ ica NONSPECIFIC_CURRENT i RANGE k }
PARAMETER { k = 0.1 }
ASSIGNED { v (mV) ica (mA/cm2) i (mA/cm2) }
BREAKPOINT { i = k*ica }
