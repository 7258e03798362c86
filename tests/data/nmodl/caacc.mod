NEURON { SUFFIX caacc USEION ca READ ica WRITE cai RANGE tau, depth }
UNITS { (mM) = (milli/liter) (mA) = (milliamp) F = (faraday) (coulombs) }
PARAMETER { tau = 20 (ms) depth = 0.1 (um) cainf = 1e-4 (mM) }
ASSIGNED { ica (mA/cm2) }
STATE { cai (mM) }
INITIAL { cai = cainf }
BREAKPOINT { SOLVE state METHOD cnexp }
DERIVATIVE state { cai' = -(10000)*ica/(2*F*depth) - (cai - cainf)/tau }
