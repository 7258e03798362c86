"""NEURON's accumulated time and when an event acts (its fixed-step delivery rules).

The expected steps are NEURON 9.0.2's, measured at dt = 0.025 ms.
"""
import math

import numpy as np
import pytest

from hinesbatch.network import (
    INIT_LIMIT,
    EventQueue,
    NetConTable,
    NetStimGenerator,
    ThresholdDetector,
    VecStimGenerator,
    acting_step,
    advance_time,
    deliver,
    end_of_step_limit,
    keeps_stepping,
    prime_generators,
    start_of_step_limit,
    time_grid,
)
from hinesbatch.sim.stimuli import time_grid as passive_time_grid

DT = 0.025


def test_accumulated_time_values():
    t = time_grid(20.0, DT)
    assert t.size == 801
    assert t[0] == 0.0
    assert t[200] == 5.0000000000000373
    assert t[800] == 19.9999999999994
    assert t[800] != 20.0  # not n*dt


def test_advance_time_is_two_half_steps():
    t = 0.0
    for n in range(800):
        t_mid, t_next = advance_time(t, DT)
        assert t_mid == start_of_step_limit(t, DT)
        t = t_next
    assert t == 19.9999999999994
    t_mid, t_next = advance_time(0.1, 0.3)
    assert (t_mid, t_next) == (0.1 + 0.15, (0.1 + 0.15) + 0.15)


def test_time_grid_equals_stepwise_accumulation_and_passive_grid():
    t = time_grid(100.0, DT)
    steps = [0.0]
    while keeps_stepping(steps[-1], 100.0, DT):
        steps.append(advance_time(steps[-1], DT)[1])
    assert t.tolist() == steps
    assert t.size == 4001
    np.testing.assert_array_equal(t, passive_time_grid(100.0, DT)[0])


def test_run_length_rule():
    # steps while t < tstop - dt/2: a run to 20 takes 800 steps and ends below 20
    assert keeps_stepping(19.9999999999994 - DT, 20.0, DT)
    assert not keeps_stepping(19.9999999999994, 20.0, DT)
    assert time_grid(0.0, DT).tolist() == [0.0]
    assert time_grid(0.0125, DT).size == 1  # 0 < 0.0125 - 0.0125 is false
    assert time_grid(0.0126, DT).size == 2


def test_delivery_limits():
    t120 = time_grid(3.0, DT)[120]
    assert start_of_step_limit(t120, DT) == 3.0125000000000091
    t800 = time_grid(20.0, DT)[800]
    assert start_of_step_limit(t800, DT) == 20.0124999999994
    assert end_of_step_limit(t800) == t800
    assert INIT_LIMIT == 0.0


@pytest.mark.parametrize("delay, step", [(0.0124, 800), (0.0125, 801), (0.0126, 801),
                                         (0.025, 801), (1.0, 840)])
def test_netstim_spike_at_20(delay, step):
    assert acting_step(20.0 + delay, DT) == step


def test_tie_that_goes_early():
    assert acting_step(3.0125, DT) == 120
    assert time_grid(3.0, DT)[120] + DT / 2 > 3.0125  # the accumulated t lets it in


def test_ties_follow_accumulated_time_not_n_dt():
    # on an exact grid t_n = n*dt, 20 + 0.0125 would meet t_800 + dt/2 and act on step 800
    assert 20.0 + 0.0125 <= 800 * DT + DT / 2
    assert acting_step(20.0 + 0.0125, DT) == 801


@pytest.mark.parametrize("delay, step", [(0.0, 140), (0.0125, 141), (1.0, 180)])
def test_threshold_spike_at_t140(delay, step):
    ts = time_grid(4.0, DT)[140] + 1e-10
    assert ts == pytest.approx(3.5000000001, abs=1e-12)
    assert acting_step(ts + delay, DT) == step


@pytest.mark.parametrize("start, delay, step", [
    (0.0, 0.0124, 0), (0.0, 0.0125, 0), (0.0, 0.0126, 1), (3.0125, 0.025, 121),
    (3.0125, 1.0, 160), (7.3, 0.0125, 292), (7.3, 0.0126, 293),
    (11.111, 1.0765, 488),  # an exact grid t_n = n*dt would say 487
])
def test_netstim_events_near_ties_match_neuron(start, delay, step):
    # NEURON 9.0.2: NetStim(start, interval 10, number 1) -> NetCon(delay) -> ExpSyn; the
    # step is one less than the first sample with g > 0 (330 such cases agreed)
    ts = NetStimGenerator(start=start, interval=10.0, number=1).next_spike()
    assert acting_step(ts + delay, DT) == step


def test_acting_step_definition_on_many_times():
    t = time_grid(30.0, DT)
    rng = np.random.default_rng(0)
    for te in np.concatenate([rng.uniform(0, 29, 200), t[1:1000:7] + DT / 2, t[1:1000:11]]):
        n = acting_step(te, DT)
        assert te <= t[n] + DT / 2
        assert n == 0 or te > t[n - 1] + DT / 2


def test_acting_step_edges():
    assert acting_step(0.0, DT) == 0
    assert acting_step(-1.0, DT) == 0
    assert acting_step(0.0125, DT) == 0
    assert acting_step(0.0125000001, DT) == 1
    with pytest.raises(ValueError, match="event time te"):
        acting_step(math.nan, DT)
    with pytest.raises(ValueError, match="dt must be > 0"):
        acting_step(1.0, 0.0)


def _run(tstop, *, detector=None, v_of_t=None, netcons, generators=None):
    """A step loop with NEURON's order of threshold check and deliveries; returns
    [(step, event)] for every NetCon event, and the generator spikes."""
    queue = EventQueue()
    generators = generators or {}
    acted, spikes = [], []
    step = [None]

    def on_net(event):
        acted.append((step[0], event))

    def on_spike(source, ts):
        spikes.append((source, ts))

    kw = {"netcons": netcons, "on_net": on_net, "generators": generators, "on_spike": on_spike}
    prime_generators(queue, generators)
    if detector is not None:
        detector.reset()
    step[0] = -1  # finitialize
    deliver(queue, INIT_LIMIT, **kw)
    t, n = 0.0, 0
    while keeps_stepping(t, tstop, DT):
        step[0] = n
        if detector is not None:
            for s, ts in zip(*detector.check(v_of_t(n), t)):
                netcons.on_spike(int(s), float(ts), queue)
        deliver(queue, start_of_step_limit(t, DT), **kw)
        _, t = advance_time(t, DT)
        step[0] = n + 0.5  # delivered after the step: acts on step n + 1
        deliver(queue, end_of_step_limit(t), **kw)
        n += 1
    return acted, spikes


def test_step_loop_netstim_delays_act_on_neurons_steps():
    table = NetConTable()
    delays = [0.0124, 0.0125, 0.0126, 0.025, 1.0]
    for i, d in enumerate(delays):
        table.add(0, i, weight=0.1 * (i + 1), delay=d)
    gens = {0: NetStimGenerator(start=20.0, interval=100.0, number=1)}
    acted, spikes = _run(22.0, netcons=table, generators=gens)
    assert spikes == [(0, 20.0)]
    steps = {e.target: math.ceil(s) for s, e in acted}  # end-of-step n+0.5 acts on n+1
    assert steps == {0: 800, 1: 801, 2: 801, 3: 801, 4: 840}
    assert [e.te for _, e in acted] == [20.0 + d for d in sorted(delays)]


def test_step_loop_tie_and_threshold_cases():
    table = NetConTable()
    table.add(1, 10, weight=1.0, delay=0.0)        # NetStim at 3.0125, delay 0
    for i, d in enumerate([0.0, 0.0125, 1.0]):     # threshold source 0
        table.add(0, 20 + i, weight=1.0, delay=d)
    det = ThresholdDetector([0], thresholds=10.0)
    gens = {1: NetStimGenerator(start=3.0125, interval=50.0, number=1)}
    v = lambda n: np.array([20.0 if n >= 140 else -65.0])  # above threshold from t_140 on
    acted, _ = _run(5.0, detector=det, v_of_t=v, netcons=table, generators=gens)
    steps = {e.target: math.ceil(s) for s, e in acted}
    assert steps == {10: 120, 20: 140, 21: 141, 22: 180}


def test_cell_above_threshold_at_init_fires_at_1e_10():
    table = NetConTable()
    table.add(0, 0, weight=1.0, delay=0.0)
    det = ThresholdDetector([0], thresholds=-70.0)
    acted, _ = _run(1.0, detector=det, v_of_t=lambda n: np.array([-65.0]), netcons=table)
    assert [(s, e.te) for s, e in acted] == [(0, 1e-10)]  # once: the flag stays set


def test_netstim_at_zero_is_delivered_by_finitialize():
    table = NetConTable()
    table.add(0, 3, weight=0.5, delay=0.0)
    table.add(0, 4, weight=0.5, delay=0.0125)
    gens = {0: NetStimGenerator(start=0.0, interval=5.0, number=2)}
    acted, spikes = _run(6.0, netcons=table, generators=gens)
    assert spikes == [(0, 0.0), (0, 5.0)]
    assert [(s, e.target) for s, e in acted][:2] == [(-1, 3), (0, 4)]


def test_generator_spike_at_tstop_is_not_delivered():
    # t_800 = 19.9999999999994 < 20: NEURON records no spike at 20 in a run to 20
    gens = {0: NetStimGenerator(start=20.0, interval=5.0, number=3)}
    _, spikes = _run(20.0, netcons=NetConTable(), generators=gens)
    assert spikes == []
    assert gens[0].spike_times(time_grid(20.0, DT)[-1]).size == 0
    _, spikes = _run(25.0, netcons=NetConTable(), generators=gens)
    assert spikes == [(0, 20.0)]


def test_netstim_first_spike_goes_through_a_start_event():
    # NetStim's INITIAL self-event re-queues the firing at the same time, behind events
    # already queued for that time; a VecStim fires directly. At t = 1 the queue holds
    # start(0), spike(1), net 99: start(0) queues spike(0) last, spike(1) queues net 51,
    # net 99 acts, spike(0) queues net 50, then net 51 and net 50 act.
    q = EventQueue()
    gens = {0: NetStimGenerator(start=1.0, number=1), 1: VecStimGenerator([1.0])}
    prime_generators(q, gens)
    q.push(1.0, 99, 0.5)
    order = []
    table = NetConTable()
    table.add(0, 50, weight=1.0, delay=0.0)
    table.add(1, 51, weight=1.0, delay=0.0)
    deliver(q, 1.0, netcons=table, on_net=lambda e: order.append(e.target), generators=gens)
    assert order == [99, 51, 50]  # one-stage NetStim would give [99, 50, 51]


def test_spike_event_without_generator_is_an_error():
    q = EventQueue()
    q.push(1.0, 7, kind="spike")
    with pytest.raises(ValueError, match="source 7"):
        deliver(q, 1.0, netcons=NetConTable(), on_net=lambda e: None, generators={})
