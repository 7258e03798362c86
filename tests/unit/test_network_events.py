"""The event queue: time order, FIFO among equal times, validation."""
import math

import numpy as np
import pytest

from hinesbatch.network import EVENT_KINDS, Event, EventQueue


def test_time_order_and_fifo_ties():
    q = EventQueue()
    q.push(1.0, "a", 0.1)
    q.push(0.5, "b", 0.2)
    q.push(1.0, "c", 0.3)
    q.push(1.0, "d", 0.4)
    q.push(0.25, "e", 0.5)
    assert [e.target for e in q.pop_until(1.0)] == ["e", "b", "a", "c", "d"]
    assert len(q) == 0


def test_fifo_ties_survive_interleaved_pushes_and_pops():
    # equal keys keep insertion order even when other events enter and leave in between
    q = EventQueue()
    for i in range(50):
        q.push(2.0, i, 0.0)
        q.push(1.0 + i * 1e-3, -i, 0.0)
    early = q.pop_until(1.5)
    assert [e.target for e in early] == [-i for i in range(50)]
    for i in range(50, 60):
        q.push(2.0, i, 0.0)
    assert [e.target for e in q.pop_until(2.0)] == list(range(60))


def test_pop_until_is_inclusive_and_leaves_later_events():
    q = EventQueue()
    q.push(20.0125, 1, 0.0)
    q.push(20.0124999999994, 2, 0.0)
    assert [e.target for e in q.pop_until(20.0124999999994)] == [2]
    assert q.next_time() == 20.0125
    assert len(q) == 1


def test_event_fields_and_kind():
    q = EventQueue()
    q.push(3, 7, 0.01)
    q.push(4.0, 2, kind="spike")
    assert q.pop_until(10.0) == [Event(3.0, 7, 0.01, "net"), Event(4.0, 2, 0.0, "spike")]
    assert isinstance(q.next_time(), float) and q.next_time() == math.inf


def test_pop_next_sees_events_pushed_meanwhile():
    q = EventQueue()
    q.push(1.0, 0, 0.0)
    first = q.pop_next(1.0)
    q.push(1.0, 1, 0.0)  # queued while delivering, within the limit
    q.push(1.5, 2, 0.0)
    assert first.target == 0
    assert q.pop_next(1.0).target == 1
    assert q.pop_next(1.0) is None
    assert len(q) == 1


def test_clear_empties_and_restarts_order():
    q = EventQueue()
    q.push(1.0, 0, 0.0)
    q.clear()
    assert len(q) == 0 and q.next_time() == math.inf and q.pop_until(1e9) == []
    q.push(1.0, "x", 0.0)
    q.push(1.0, "y", 0.0)
    assert [e.target for e in q.pop_until(1.0)] == ["x", "y"]


@pytest.mark.parametrize("te", [math.nan, math.inf, -math.inf])
def test_non_finite_time_refused(te):
    q = EventQueue()
    with pytest.raises(ValueError, match="event time te"):
        q.push(te, 0, 0.0)
    assert len(q) == 0


def test_bad_weight_kind_and_types_refused():
    q = EventQueue()
    with pytest.raises(ValueError, match="event weight must be finite"):
        q.push(1.0, 0, math.nan)
    with pytest.raises(ValueError, match="valid kinds: net, spike, start, self"):
        q.push(1.0, 0, 0.0, kind="send")
    with pytest.raises(TypeError, match="must be a number"):
        q.push("1.0", 0, 0.0)
    with pytest.raises(TypeError, match="must be a number"):
        q.push(True, 0, 0.0)
    assert len(q) == 0
    assert EVENT_KINDS == ("net", "spike", "start", "self")


def test_numpy_scalars_accepted_as_floats():
    q = EventQueue()
    q.push(np.float32(0.5), 0, np.float64(0.25))
    (e,) = q.pop_until(1.0)
    assert type(e.te) is float and e.te == 0.5 and e.weight == 0.25


def test_peek_shows_the_next_event_and_leaves_it():
    q = EventQueue()
    assert q.peek() is None
    q.push(2.0, 7, 0.5)
    q.push(1.0, 3, 0.25, kind="self", flag=2.0)
    first = q.peek()
    assert (first.te, first.target, first.kind, first.flag) == (1.0, 3, "self", 2.0)
    assert len(q) == 2 and q.pop_next(1.0) == first


def test_a_netcons_event_queues_like_push_in_fifo_order():
    q = EventQueue()
    q.push(1.5, 0, 0.1, kind="net", netcon=4)
    q.push_netcon(1.5, 1, 0.2, 5)
    q.push(1.5, 2, 0.3, kind="net", netcon=6)
    got = q.pop_until(2.0)
    assert [(e.target, e.weight, e.kind, e.netcon, e.flag) for e in got] == [
        (0, 0.1, "net", 4, 0.0), (1, 0.2, "net", 5, 0.0), (2, 0.3, "net", 6, 0.0)]
