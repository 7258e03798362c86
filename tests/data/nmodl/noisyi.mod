: A noisy current (an Ornstein-Uhlenbeck walk drawn with normrand in a PROCEDURE that
: BREAKPOINT SOLVEs, plus white noise drawn in BREAKPOINT itself, which NEURON evaluates
: twice per step) and a PROCEDURE that sets the seed of NEURON's random-number stream.
NEURON {
    POINT_PROCESS NoisyI
    NONSPECIFIC_CURRENT i
    RANGE m, sd, tau, white, x, i
}
PARAMETER {
    m = -0.1 (nA)
    sd = 0.2 (nA)
    tau = 2 (ms)
    white = 0.0001 (nA)
}
ASSIGNED { v (mV) i (nA) x (nA) }
INITIAL { x = m }
BREAKPOINT {
    SOLVE walk
    i = x + white*normrand(0, 1)
}
PROCEDURE walk() {
    x = x + (1 - exp(-dt/tau))*(m - x) + sqrt(1 - exp(-2*dt/tau))*sd*normrand(0, 1)
}
PROCEDURE seed(s) {
    set_seed(s)
}
