: An artificial spike source: from start on, number spikes (net_event) mean ms apart,
: each gap stretched by a draw (exprand) where jitter > 0. A NetCon event of positive
: weight restarts a finished train at once, one of negative weight stops it.
: Written for hinesbatch's tests.
NEURON {
    ARTIFICIAL_CELL artstim
    RANGE start, mean, number, jitter, count
}
PARAMETER {
    start = 2 (ms)
    mean = 4 (ms)
    number = 6
    jitter = 0
}
ASSIGNED { count running }
INITIAL {
    count = 0
    running = 0
    if (number > 0) {
        running = 1
        net_send(start, 1)
    }
}
FUNCTION gap() (ms) {
    if (jitter > 0) {
        gap = mean*(1 - jitter) + mean*jitter*exprand(1)
    } else {
        gap = mean
    }
}
NET_RECEIVE(w) {
    if (flag == 0) {
        if (w > 0 && running == 0) {
            count = 0
            running = 1
            net_send(0, 1)
        } else if (w < 0) {
            running = 0
        }
    } else if (flag == 1 && running == 1) {
        count = count + 1
        net_event(t)
        if (count < number) {
            net_send(gap(), 1)
        } else {
            running = 0
        }
    }
}
