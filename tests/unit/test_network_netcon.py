"""NetCon fan-out: te = ts + delay per NetCon, creation order, validation."""
import math

import numpy as np
import pytest

from hinesbatch.network import EventQueue, NetConTable


def test_several_netcons_from_one_source_in_creation_order():
    table = NetConTable()
    table.add(0, 3, weight=0.1, delay=1.0)
    table.add(1, 9, weight=9.0, delay=1.0)
    table.add(0, 4, weight=0.2, delay=1.0)
    table.add(0, 5, weight=0.3, delay=0.5)
    table.add(0, 6, weight=0.4, delay=1.0)
    q = EventQueue()
    assert table.on_spike(0, 3.5000000001, q) == 4
    events = q.pop_until(100.0)
    assert [(e.te, e.target, e.weight) for e in events] == [
        (3.5000000001 + 0.5, 5, 0.3),
        (3.5000000001 + 1.0, 3, 0.1), (3.5000000001 + 1.0, 4, 0.2),
        (3.5000000001 + 1.0, 6, 0.4)]
    assert all(e.kind == "net" for e in events)
    assert table.of_source(0) == [0, 2, 3, 4] and table.of_source(7) == []


def test_equal_delay_events_stay_together_between_other_events():
    # a source's events are queued one after the other: nothing falls between them
    table = NetConTable()
    for target in (1, 2, 3):
        table.add(0, target, weight=1.0, delay=2.0)
    q = EventQueue()
    q.push(3.0, 100, 0.0)
    table.on_spike(0, 1.0, q)
    q.push(3.0, 200, 0.0)
    assert [e.target for e in q.pop_until(3.0)] == [100, 1, 2, 3, 200]


def test_spike_of_source_without_netcons_queues_nothing():
    q = EventQueue()
    assert NetConTable().on_spike(3, 1.0, q) == 0 and len(q) == 0


def test_arrays_and_min_delay():
    table = NetConTable()
    assert table.min_delay() == math.inf
    table.add(0, 1, weight=0.01, delay=1.0)
    table.add(2, 0, delay=0.0123)
    assert table.sources.tolist() == [0, 2] and table.targets.tolist() == [1, 0]
    assert table.weights.tolist() == [0.01, 0.0] and table.delays.tolist() == [1.0, 0.0123]
    assert table.delays.dtype == np.float64 and table.sources.dtype == np.int64
    assert table.min_delay() == 0.0123
    table.set_delay(1, 2.0)
    table.set_weight(0, 0.5)
    assert table.min_delay() == 1.0 and table.weights.tolist() == [0.5, 0.0]
    assert len(table) == 2


@pytest.mark.parametrize("delay", [-0.1, math.nan, math.inf])
def test_bad_delay_names_the_netcon(delay):
    table = NetConTable()
    table.add(0, 0, delay=1.0)
    with pytest.raises(ValueError, match=r"NetCon\[1\] delay"):
        table.add(0, 1, delay=delay)
    with pytest.raises(ValueError, match=r"NetCon\[0\] delay"):
        table.set_delay(0, delay)
    assert len(table) == 1 and table.delays.tolist() == [1.0]


def test_bad_weight_and_ids_name_the_netcon():
    table = NetConTable()
    with pytest.raises(ValueError, match=r"NetCon\[0\] weight must be finite"):
        table.add(0, 0, weight=math.nan)
    with pytest.raises(ValueError, match=r"NetCon\[0\] source must be >= 0"):
        table.add(-1, 0)
    with pytest.raises(TypeError, match=r"NetCon\[0\] target must be an integer id"):
        table.add(0, 1.5)
    with pytest.raises(IndexError, match=r"NetCon\[3\] does not exist"):
        table.set_weight(3, 1.0)
    assert len(table) == 0


def test_fan_out_rows_group_netcons_by_source_in_creation_order():
    table = NetConTable()
    for source, target in [(2, 0), (0, 1), (2, 2), (0, 3), (2, 4)]:
        table.add(source, target, weight=1.0, delay=1.0)
    indptr, netcons = table.fan_out()
    assert indptr.tolist() == [0, 2, 2, 5]
    assert netcons.tolist() == [1, 3, 0, 2, 4]
    for s in range(3):
        assert netcons[indptr[s]:indptr[s + 1]].tolist() == table.of_source(s)
    indptr, _ = table.fan_out(n_sources=5)
    assert indptr.tolist() == [0, 2, 2, 5, 5, 5]
    with pytest.raises(ValueError, match="n_sources = 2 but NetCons leave source 2"):
        table.fan_out(n_sources=2)
    empty_ptr, empty = NetConTable().fan_out(n_sources=3)
    assert empty_ptr.tolist() == [0, 0, 0, 0] and empty.size == 0


def test_source_ids_follow_the_table():
    """The sorted sources a rank filters exchanged spikes by, renewed after each add."""
    table = NetConTable()
    assert table.source_ids().size == 0
    table.add(7, 1)
    table.add(3, 2)
    table.add(7, 3)
    assert table.source_ids().tolist() == [3, 7]
    table.add(5, 0)
    assert table.source_ids().tolist() == [3, 5, 7]
