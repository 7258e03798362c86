: A spike source: from start on, a spike every interval ms (net_event), timed by
: self-events with flag 1; NetCon events (flag 0) count in nin. Written for hinesbatch's
: tests.
NEURON {
    POINT_PROCESS ticker
    RANGE start, interval, number, count, nin
}
PARAMETER {
    start = 1 (ms)
    interval = 2 (ms)
    number = 5
}
ASSIGNED { count nin }
INITIAL {
    count = 0
    nin = 0
    if (number > 0) {
        net_send(start, 1)
    }
}
NET_RECEIVE(w) {
    if (flag == 1) {
        count = count + 1
        net_event(t)
        if (count < number) {
            net_send(interval, 1)
        }
    } else {
        nin = nin + 1
    }
}
