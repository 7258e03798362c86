"""Communicators, spike exchange, remote delivery, epochs and abort, in one process."""
import math
import sys

import numpy as np
import pytest

from hinesbatch.network import (
    SPIKE_OFFSET,
    EventQueue,
    NetConTable,
    advance_time,
    parallel,
    time_grid,
)
from hinesbatch.network.parallel import (
    Communicator,
    LateSpikeError,
    SerialCommunicator,
    abort_on_error,
    deliver_remote,
    epoch_steps,
    exchange_spikes,
    launched_by_mpi,
    world,
)

LAUNCHER_VARIABLES = ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                      "PMIX_RANK")


@pytest.fixture
def no_launcher(monkeypatch):
    for name in LAUNCHER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


# --- communicators -------------------------------------------------------------------------

def test_serial_communicator_has_the_interface():
    comm = SerialCommunicator()
    assert isinstance(comm, Communicator)
    assert (comm.rank, comm.size) == (0, 1)
    assert comm.allgather(("a", 1)) == [("a", 1)]
    assert comm.bcast({"x": 2}) == {"x": 2}
    assert comm.gather({"y": 3}) == [{"y": 3}]
    assert comm.barrier() is None
    with pytest.raises(ValueError, match="root must be a rank in 0 .. 0, got 1"):
        comm.bcast(3, root=1)
    with pytest.raises(ValueError, match="root must be a rank in 0 .. 0, got 1"):
        comm.gather(3, root=1)


def test_serial_allgather_spikes_copies_and_converts():
    gids = np.array([3, 1], dtype=np.int32)
    times = np.array([1.0, 2.0], dtype=np.float32)
    g, t = SerialCommunicator().allgather_spikes(gids, times)
    assert g.dtype == np.int64 and t.dtype == np.float64
    g[0] = 99
    assert gids[0] == 3


def test_serial_abort_prints_and_exits(capsys):
    with pytest.raises(SystemExit) as info:
        SerialCommunicator().abort("it broke", code=3)
    assert info.value.code == 3
    assert capsys.readouterr().err == "it broke\n"


def test_world_without_launcher_is_serial_and_does_not_import_mpi4py(no_launcher):
    no_launcher.setattr(parallel, "MPICommunicator",
                        lambda: pytest.fail("MPI started outside a launcher"))
    assert isinstance(world(), SerialCommunicator)
    assert isinstance(world(mpi=False), SerialCommunicator)


def test_world_under_a_one_process_launcher_is_serial(no_launcher):
    no_launcher.setenv("PMI_RANK", "0")
    no_launcher.setenv("PMI_SIZE", "1")
    no_launcher.setattr(parallel, "MPICommunicator",
                        lambda: pytest.fail("MPI started for one process"))
    assert isinstance(world(), SerialCommunicator)


def _hide_mpi4py(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)  # `import mpi4py` raises ImportError
    monkeypatch.setitem(sys.modules, "mpi4py.MPI", None)


def test_world_under_a_launcher_without_mpi4py_refuses(no_launcher):
    # the ranks would each run the whole network
    no_launcher.setenv("OMPI_COMM_WORLD_RANK", "1")
    no_launcher.setenv("OMPI_COMM_WORLD_SIZE", "4")
    _hide_mpi4py(no_launcher)
    with pytest.raises(RuntimeError, match=r"MPI launcher \(4 processes\) but mpi4py cannot "
                                           r"be imported.*hinesbatch\[mpi\]"):
        world()


def test_without_mpi4py_one_process_works_and_mpi_true_says_why(no_launcher):
    _hide_mpi4py(no_launcher)
    comm = world()
    assert isinstance(comm, SerialCommunicator)
    g, t = exchange_spikes(comm, [2, 1], [0.5, 0.5])
    assert g.tolist() == [1, 2] and t.tolist() == [0.5, 0.5]
    with pytest.raises(ImportError):
        world(mpi=True)


def test_world_rejects_a_non_bool_choice():
    with pytest.raises(TypeError, match="mpi must be True, False or None"):
        world(mpi="yes")


@pytest.mark.parametrize("env, expected", [
    ({}, (False, None)),
    ({"PMI_RANK": "0", "PMI_SIZE": "2"}, (True, 2)),
    ({"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "8"}, (True, 8)),
    ({"PMIX_RANK": "0"}, (True, None)),
    ({"PMI_RANK": "0", "PMI_SIZE": "many"}, (True, None)),
])
def test_launched_by_mpi_reads_the_launchers_variables(env, expected):
    assert launched_by_mpi(env) == expected


# --- exchange ----------------------------------------------------------------------------

def test_exchange_sorts_by_time_then_gid(seed):
    rng = np.random.default_rng(seed)
    gids = rng.integers(0, 50, size=300)
    times = rng.integers(0, 20, size=300) * 0.025  # many equal times
    g, t = exchange_spikes(SerialCommunicator(), gids, times)
    assert g.dtype == np.int64 and t.dtype == np.float64
    pairs = list(zip(t.tolist(), g.tolist()))
    assert pairs == sorted(zip(times.tolist(), gids.tolist()))


def test_exchange_result_does_not_depend_on_the_input_order(seed):
    rng = np.random.default_rng(seed)
    gids = rng.integers(0, 50, size=200)
    times = rng.integers(0, 20, size=200) * 0.1
    perm = rng.permutation(200)
    a = exchange_spikes(SerialCommunicator(), gids, times)
    b = exchange_spikes(SerialCommunicator(), gids[perm], times[perm])
    assert a[0].tobytes() == b[0].tobytes() and a[1].tobytes() == b[1].tobytes()


def test_exchange_of_no_spikes():
    g, t = exchange_spikes(SerialCommunicator(), np.empty(0, np.int64), [])
    assert g.shape == t.shape == (0,) and g.dtype == np.int64 and t.dtype == np.float64


@pytest.mark.parametrize("gids, times, error, match", [
    ([1, 2], [0.5], ValueError, "2 spike gids but 1 spike times"),
    ([[1]], [[0.5]], ValueError, "must be 1-D"),
    ([1.5], [0.5], TypeError, "spike gids must be integers"),
    ([-1], [0.5], ValueError, "spike 0 has gid -1"),
    ([4, 7], [0.5, math.inf], ValueError, r"spike 1 \(gid 7\) has time inf"),
    ([4], ["a"], TypeError, "spike times must be numbers"),
])
def test_exchange_refuses_bad_spikes(gids, times, error, match):
    with pytest.raises(error, match=match):
        exchange_spikes(SerialCommunicator(), gids, times)


# --- delivery of exchanged spikes -----------------------------------------------------------

def test_deliver_remote_queues_local_netcons_in_spike_order():
    table = NetConTable()
    table.add(7, 0, weight=0.1, delay=2.0)   # sources are gids
    table.add(3, 1, weight=0.2, delay=1.0)
    table.add(7, 2, weight=0.3, delay=1.0)
    q = EventQueue()
    gids, times = exchange_spikes(SerialCommunicator(), [7, 3, 9], [1.0, 1.0, 0.5])
    # gid 9 has no NetCons here: skipped; gid 3 before gid 7 at equal times
    assert deliver_remote(gids, times, table, q, t_solved=1.0) == 3
    events = q.pop_until(10.0)
    assert [(e.te, e.target, e.weight) for e in events] == [
        (2.0, 1, 0.2), (2.0, 2, 0.3), (3.0, 0, 0.1)]


def test_deliver_remote_refuses_an_event_due_before_a_computed_step():
    table = NetConTable()
    table.add(5, 0, weight=1.0, delay=3.0)
    table.add(5, 1, weight=1.0, delay=0.5)
    q = EventQueue()
    with pytest.raises(LateSpikeError, match=r"gid 5 at 2.0 ms reaches NetCon\[1\] at te = "
                                             r"2.5 ms, but the step it acts on is computed "
                                             r"\(delivery done to 2.5 ms\)"):
        deliver_remote([5], [2.0], table, q, t_solved=2.5)
    assert len(q) == 0  # nothing queued from the refused spike


@pytest.mark.parametrize("min_delay, dt, steps", [
    (1.0, 0.025, 40), (0.1, 0.025, 4), (0.025, 0.025, 1), (0.07, 0.025, 2),
    (5.0, 0.1, 50), (1.0125, 0.025, 40),
    (0.3, 0.1, 2)])  # t_3 = 0.30000000000000004 is not below 0.3: an event at 0.3 acts in step 3
def test_first_epoch_takes_the_steps_that_fit_in_the_min_delay(min_delay, dt, steps):
    assert epoch_steps(0.0, min_delay, dt) == steps


@pytest.mark.parametrize("min_delay, dt", [(1.0, 0.025), (5.0, 0.025), (0.3, 0.1),
                                           (0.025, 0.025)])
def test_every_epoch_ends_before_the_first_event_it_can_cause(min_delay, dt):
    # walk a run epoch by epoch: the epoch's last delivery t_end stays below the earliest
    # event of a threshold spike at its start (t_start + 1e-10 + min_delay) and, unless
    # the epoch is the one step it cannot go below, of a generator spike at its start
    # (t_start + min_delay); one more step would not
    tstop = 300.0
    grid = time_grid(tstop, dt)
    n = 0
    while (steps := epoch_steps(grid[n], min_delay, dt, tstop=tstop)) > 0:
        t_start, t_end = grid[n], grid[n + steps]
        assert t_end < (t_start + SPIKE_OFFSET) + min_delay
        if steps > 1:
            assert t_end < t_start + min_delay
        if n + steps + 1 < grid.size:
            assert not grid[n + steps + 1] < t_start + min_delay
        n += steps
    assert n == grid.size - 1  # the whole run, and no more


def test_epoch_steps_follow_the_accumulated_clock_not_a_fixed_count():
    # 200 steps of 0.025 ms from this t end 1.4e-10 ms past t + 5 ms: a threshold spike at
    # t + 1e-10 with delay 5 ms would fall inside a 200-step epoch
    grid = time_grid(8190.0, 0.025)
    t_start = grid[-1]
    assert grid.size - 1 == 327600 and t_start == 8189.999999915882
    t_200 = t_start
    for _ in range(200):
        t_200 = advance_time(t_200, 0.025)[1]
    assert (t_start + SPIKE_OFFSET) + 5.0 <= t_200  # what a fixed count would miss
    assert epoch_steps(t_start, 5.0, 0.025) == 199


def test_epoch_steps_stop_at_tstop():
    assert epoch_steps(0.0, 1.0, 0.025, tstop=0.5) == 20
    grid = time_grid(0.5, 0.025)
    assert epoch_steps(grid[-1], 1.0, 0.025, tstop=0.5) == 0
    # without NetCons the epoch is the rest of the run
    assert epoch_steps(0.25, NetConTable().min_delay(), 0.025, tstop=1.0) == 30


def test_epoch_steps_refuse_bad_input():
    with pytest.raises(ValueError, match="smallest delay 0.01 ms is below dt = 0.025 ms"):
        epoch_steps(0.0, 0.01, 0.025)
    with pytest.raises(ValueError, match="dt must be > 0"):
        epoch_steps(0.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="needs a finite tstop"):
        epoch_steps(0.0, math.inf, 0.025)
    with pytest.raises(ValueError, match="min_delay must be a number"):
        epoch_steps(0.0, math.nan, 0.025)
    with pytest.raises(TypeError, match="t_start"):
        epoch_steps("0", 1.0, 0.025)


# --- abort ----------------------------------------------------------------------------------

class _FakeRanks:
    """A communicator of 3 ranks whose abort records its call instead of ending MPI.

    Its abort returns, so the error goes on to propagate as it would without MPI.
    """

    rank, size = 2, 3

    def __init__(self):
        self.aborted = None

    def abort(self, message, code=1):
        self.aborted = (message, code)


def test_abort_on_error_aborts_all_ranks_with_the_message():
    comm = _FakeRanks()
    with pytest.raises(ValueError), abort_on_error(comm):
        raise ValueError("cell 4 has no soma")
    message, code = comm.aborted
    assert code == 1
    assert message.startswith("[rank 2 of 3] ValueError: cell 4 has no soma\n")
    assert "Traceback" in message and message.endswith("[rank 2 of 3] stopping every rank")


def test_abort_on_error_as_decorator_and_on_memory_error():
    comm = _FakeRanks()

    @abort_on_error(comm)
    def build():
        raise MemoryError("out of memory")

    with pytest.raises(MemoryError):
        build()
    assert comm.aborted[0].startswith("[rank 2 of 3] MemoryError: out of memory")


@pytest.mark.parametrize("exit_code, aborts", [(0, False), (None, False), (2, True)])
def test_abort_on_error_and_system_exit(exit_code, aborts):
    comm = _FakeRanks()
    with pytest.raises(SystemExit), abort_on_error(comm):
        raise SystemExit(exit_code)
    assert (comm.aborted is not None) == aborts


def test_abort_on_error_lets_keyboard_interrupt_through():
    comm = _FakeRanks()
    with pytest.raises(KeyboardInterrupt), abort_on_error(comm):
        raise KeyboardInterrupt
    assert comm.aborted is None


def test_abort_on_error_in_one_process_raises_as_usual():
    with pytest.raises(ValueError, match="bad"), abort_on_error(SerialCommunicator()):
        raise ValueError("bad")


def test_uncaught_exception_hook_aborts_every_rank(monkeypatch):
    # a script written for one process, failing on one rank, must not leave the others
    # waiting: world() installs this hook when it returns an MPI communicator
    calls = []
    monkeypatch.setattr(sys, "excepthook", lambda *exc: calls.append(exc[0]))
    comm = _FakeRanks()
    parallel._abort_on_uncaught(comm)
    parallel._abort_on_uncaught(comm)  # installed once
    hook = sys.excepthook
    try:
        raise ValueError("cell 4 has no soma")
    except ValueError as exc:
        hook(type(exc), exc, exc.__traceback__)
    assert comm.aborted[0].startswith("[rank 2 of 3] ValueError: cell 4 has no soma\n")
    assert "Traceback" in comm.aborted[0]
    hook(KeyboardInterrupt, KeyboardInterrupt(), None)  # to the previous hook
    assert calls == [KeyboardInterrupt]


def test_abort_on_error_does_nothing_without_an_error():
    comm = _FakeRanks()
    with abort_on_error(comm) as c:
        assert c is comm
    assert comm.aborted is None

