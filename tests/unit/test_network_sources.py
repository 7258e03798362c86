"""Threshold detection and the NetStim and VecStim trains, as NEURON 9.0.2 computes them.

Spike times marked "NEURON 9.0.2" were recorded with NetCon.record in NEURON 9.0.2; the
VecStim ones with vecevent.mod compiled by that version's nrnivmodl.
"""
import math

import numpy as np
import pytest

from hinesbatch.network import (
    SPIKE_OFFSET,
    NetStimGenerator,
    ThresholdDetector,
    VecStimGenerator,
    threshold_check,
)

# --- threshold detection --------------------------------------------------------------

def test_fires_once_per_crossing_and_rearms_at_or_below_threshold():
    det = ThresholdDetector([0], thresholds=10.0)
    trace = [-65.0, 9.0, 10.5, 30.0, 10.0, 11.0, 10.0000001, -5.0, 12.0]
    fired_at = []
    for n, v in enumerate(trace):
        sources, ts = det.check(np.array([v]), float(n))
        if sources.size:
            fired_at.append((n, ts[0]))
    # 10.0 (v - thr == 0) clears the flag, so 11.0 fires again
    assert fired_at == [(2, 2.0 + 1e-10), (5, 5.0 + 1e-10), (8, 8.0 + 1e-10)]


def test_above_threshold_at_init_fires_at_1e_10_and_reset_rearms():
    det = ThresholdDetector([1], thresholds=-70.0)
    v = np.array([0.0, -65.0])
    sources, ts = det.check(v, 0.0)
    assert sources.tolist() == [0] and ts.tolist() == [1e-10]
    assert det.check(v, 0.025)[0].size == 0
    det.reset()  # finitialize
    assert det.check(v, 0.0)[1].tolist() == [SPIKE_OFFSET]


def test_spike_time_is_accumulated_t_plus_1e_10():
    det = ThresholdDetector([0])
    t = 6.925000000000065  # an accumulated t (NEURON's c91662 spike was 6.925000000100065)
    assert det.check(np.array([15.0]), t)[1][0] == 6.925000000100065


def test_nan_clears_the_flag_and_never_fires():
    det = ThresholdDetector([0], thresholds=0.0)
    assert det.check(np.array([1.0]), 0.0)[0].tolist() == [0]
    assert det.check(np.array([math.nan]), 1.0)[0].size == 0
    assert not det.flags[0]


def test_several_sources_and_last_threshold_wins():
    det = ThresholdDetector([2, 0, 2], thresholds=[0.0, 5.0, 20.0])
    det.set_threshold(2, -10.0)
    i = det.add(1, threshold=1.0)
    assert i == 3 and len(det) == 4
    sources, ts = det.check(np.array([6.0, 0.5, 1.0]), 2.0)
    assert sources.tolist() == [0, 1, 2] and ts.tolist() == [2.0 + 1e-10] * 3
    assert det.flags.tolist() == [True, True, True, False]


def test_detector_validation():
    with pytest.raises(ValueError, match="threshold source 1 watches node 5 but v has 3 nodes"):
        ThresholdDetector([0, 5]).check(np.zeros(3), 0.0)
    with pytest.raises(ValueError, match=r"threshold source 0: threshold \[mV\] must be finite"):
        ThresholdDetector([0], thresholds=math.inf)
    with pytest.raises(ValueError, match="nodes must be >= 0"):
        ThresholdDetector([-1])
    with pytest.raises(TypeError, match="integer node indices"):
        ThresholdDetector([0.5])
    with pytest.raises(ValueError, match="threshold source 0: node must be >= 0, got -3"):
        ThresholdDetector().add(-3)
    with pytest.raises(TypeError, match="threshold source 0: node must be an integer"):
        ThresholdDetector().add(1.0)
    with pytest.raises(IndexError, match="threshold source 4 does not exist"):
        ThresholdDetector([0]).set_threshold(4, 0.0)
    with pytest.raises(ValueError, match="v must be 1-D"):
        ThresholdDetector([0]).check(np.zeros((2, 2)), 0.0)


def test_numba_threshold_check_equals_python_check_on_random_traces():
    rng = np.random.default_rng(42)
    n_nodes, k, n_steps = 30, 12, 400
    nodes = rng.integers(0, n_nodes, k)
    thresholds = rng.uniform(-20, 20, k)
    thresholds[:3] = 0.0  # with v hitting exactly 0 below
    det = ThresholdDetector(nodes, thresholds)
    flags = np.zeros(k, dtype=np.bool_)
    out_s = np.full(k, -1, dtype=np.int64)
    out_t = np.full(k, np.nan)
    total = 0
    t = 0.0
    for step in range(n_steps):
        v = rng.normal(0.0, 25.0, n_nodes)
        v[rng.random(n_nodes) < 0.1] = 0.0
        ref_s, ref_t = det.check(v, t)
        count = threshold_check(v, nodes, thresholds, flags, t, out_s, out_t)
        assert count == ref_s.size
        assert out_s[:count].tolist() == ref_s.tolist()
        assert out_t[:count].tolist() == ref_t.tolist()
        assert flags.tolist() == det.flags.tolist()
        total += count
        t += 0.0125
        t += 0.0125
    assert total > 100  # the traces cross often: the comparison is not vacuous


# --- NetStim --------------------------------------------------------------------------

def test_netstim_accumulates_interval():  # NEURON 9.0.2
    ns = NetStimGenerator(start=20, interval=7.3, number=6)
    assert ns.spike_times(100.0).tolist() == [20.0, 27.3, 34.6, 41.9, 49.199999999999996,
                                              56.49999999999999]


@pytest.mark.parametrize("start, interval, number, expected", [  # NEURON 9.0.2
    (5, 0, 3, [5.01, 5.02, 5.029999999999999]),   # interval <= 0 means 0.01 ms
    (5, -1, 2, [6.01, 6.02]),                      # first = (start + 0.01) - interval
    (1, 2, 2.5, [1.0, 3.0, 5.0]),                  # ceil(number) spikes
    (-1, 2, 3, []),                                # negative start: off
    (3, 1e-3, 0, []),                              # number 0: off
    (0.1, 0.3, 4, [0.10000000000000003, 0.4, 0.7, 1.0]),  # (start + i) - i rounds
    (0, 5, 2, [0.0, 5.0]),
])
def test_netstim_edge_cases_match_neuron(start, interval, number, expected):
    ns = NetStimGenerator(start=start, interval=interval, number=number)
    assert ns.spike_times(60.0).tolist() == expected


def test_netstim_defaults_and_incremental_interface():
    ns = NetStimGenerator()
    assert (ns.start, ns.interval, ns.number, ns.noise) == (50.0, 10.0, 10.0, 0.0)
    got = []
    while (t := ns.next_spike()) is not None:
        got.append(t)
    assert got == ns.spike_times(1e9).tolist() and len(got) == 10 and got[0] == 50.0
    assert ns.next_spike() is None
    ns.reset()
    assert ns.next_spike() == 50.0


def test_spike_times_cuts_at_t_end_inclusive():
    ns = NetStimGenerator(start=20.0, interval=5.0, number=5)
    assert ns.spike_times(30.0).tolist() == [20.0, 25.0, 30.0]
    assert ns.spike_times(19.9999999999994).tolist() == []
    ns.next_spike()  # spike_times does not depend on nor move the incremental state
    assert ns.spike_times(20.0).tolist() == [20.0]
    assert ns.next_spike() == 25.0


def test_netstim_noise_refused():
    with pytest.raises(ValueError, match="noise > 0 needs a random stream, not supported"):
        NetStimGenerator(noise=0.5)
    with pytest.raises(ValueError, match="NetStim interval .* must be finite"):
        NetStimGenerator(interval=math.nan)
    with pytest.raises(TypeError, match="NetStim start"):
        NetStimGenerator(start="5")


# --- VecStim --------------------------------------------------------------------------

def test_vecstim_times_follow_vecevent_arithmetic():  # NEURON 9.0.2 with vecevent.mod
    assert VecStimGenerator([0.762, 5.2]).spike_times(10.0).tolist() == [0.762,
                                                                          5.199999999999999]
    assert VecStimGenerator([0.0, 0.0, 1.5, 1.5, 7.3]).spike_times(10.0).tolist() == [
        0.0, 0.0, 1.5, 1.5, 7.300000000000001]


def test_vecstim_random_train_matches_neuron_prefix():  # NEURON 9.0.2 with vecevent.mod
    rng = np.random.default_rng(3)
    train = np.round(np.cumsum(rng.uniform(0, 3, 40)), 4)
    got = VecStimGenerator(train).spike_times(200.0)
    assert got[:6].tolist() == [0.2569, 0.9673999999999999, 3.3711999999999995,
                                5.117699999999999, 5.4001, 6.699499999999999]
    assert got.size == 40
    np.testing.assert_allclose(got, train, rtol=0, atol=1e-13)


def test_vecstim_incremental_and_reset():
    vs = VecStimGenerator([1.0, 2.0])
    assert [vs.next_spike(), vs.next_spike(), vs.next_spike()] == [1.0, 2.0, None]
    vs.reset()
    assert vs.next_spike() == 1.0
    assert VecStimGenerator([]).spike_times(10.0).size == 0


@pytest.mark.parametrize("times, message", [
    ([1.0, math.nan], r"times\[1\] = nan is not finite"),
    ([1.0, math.inf], r"times\[1\] = inf is not finite"),
    ([-0.5, 1.0], r"times\[0\] = -0.5 ms is negative"),
    ([1.0, 3.0, 2.0], r"times\[2\] = 2.0 ms < times\[1\] = 3.0 ms"),
    ([[1.0, 2.0]], "must be 1-D"),
])
def test_vecstim_validation(times, message):
    with pytest.raises(ValueError, match=message):
        VecStimGenerator(times)


def test_vecstim_delay_follows_nocmodls_rounding():  # NEURON 9.0.2, vecevent.mod + delay
    """``net_send(delay + etime - t, 1)`` queues at ``((t + delay) + e) - t``: NEURON
    records 2.0620000000000003, 6.500000000000001, 8.600000000000001 for times 0.762, 5.2,
    7.3 and delay 1.3 (not 6.5, 8.6: ``e + delay``)."""
    got = VecStimGenerator([0.762, 5.2, 7.3], delay=1.3).spike_times(100.0).tolist()
    assert got == [2.0620000000000003, 6.500000000000001, 8.600000000000001]
    # delay 0 gives the times of vecevent.mod without a delay
    assert VecStimGenerator([0.762, 5.2], delay=0.0).spike_times(10.0).tolist() == \
        VecStimGenerator([0.762, 5.2]).spike_times(10.0).tolist()


@pytest.mark.parametrize("delay, error, message", [
    (-0.1, ValueError, "delay = -0.1 ms is negative"),
    (math.nan, ValueError, "VecStim delay"),
    ("1", TypeError, "VecStim delay"),
])
def test_vecstim_delay_validation(delay, error, message):
    with pytest.raises(error, match=message):
        VecStimGenerator([1.0], delay=delay)


def test_vecstim_copies_its_input():
    times = np.array([1.0, 2.0])
    vs = VecStimGenerator(times)
    times[0] = 5.0
    assert vs.times.tolist() == [1.0, 2.0]
    assert not vs.times.flags.writeable
