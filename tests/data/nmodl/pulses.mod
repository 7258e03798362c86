: A current clamp repeating its pulse every `period` ms: the time within the period is
: found by a WHILE loop.
NEURON {
    POINT_PROCESS pulses
    ELECTRODE_CURRENT i
    RANGE del, dur, amp, period, i, cycles
}
PARAMETER {
    del = 1 (ms)
    dur = 2 (ms)
    amp = 0.3 (nA)
    period = 7 (ms)
}
ASSIGNED { i (nA) cycles }
INITIAL { i = 0 cycles = 0 }
BREAKPOINT {
    LOCAL phase
    phase = t
    cycles = 0
    WHILE (phase >= period) {
        phase = phase - period
        cycles = cycles + 1
    }
    if (phase >= del && phase < del + dur) {
        i = amp
    } else {
        i = 0
    }
}
