: A noisy spike source: from start on, number spikes (net_event) at intervals drawn
: with exprand in a FUNCTION that NET_RECEIVE calls; NET_RECEIVE also draws a jitter
: with normrand and keeps it in last; INITIAL sets the stream's seed where seed > 0.
: Written for hinesbatch's tests.
NEURON {
    POINT_PROCESS noisytick
    RANGE start, mean, number, seed, count, last
}
PARAMETER {
    start = 1 (ms)
    mean = 3 (ms)
    number = 8
    seed = 0
}
ASSIGNED { count last }
INITIAL {
    count = 0
    last = 0
    if (seed > 0) {
        set_seed(seed)
    }
    net_send(start, 1)
}
FUNCTION invl(m (ms)) (ms) {
    invl = m*exprand(1)
}
NET_RECEIVE(w) {
    LOCAL u
    if (flag == 1) {
        count = count + 1
        net_event(t)
        u = normrand(0, 0.01)
        last = u
        if (count < number) {
            net_send(invl(mean) + fabs(u), 1)
        }
    }
}
