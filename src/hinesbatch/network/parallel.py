"""Networks over several processes: communicators, spike exchange and fault handling.

A network split over ``N`` ranks (processes started by ``mpiexec -n N``) runs in epochs of
at most the network's minimum delay, as NEURON and Arbor do. Within an epoch no spike can
reach any target before the epoch ends (every delay is at least the epoch), so each rank
steps its own cells alone; at the epoch's end the ranks trade the spikes they produced::

    comm = world()                                   # MPI under mpiexec, else one process
    gids, times = finitialize()                      # the engine; spikes at t = 0 too
    gids, times = exchange_spikes(comm, gids, times)
    deliver_remote(gids, times, netcons, queue, t_solved=INIT_LIMIT)
    t = 0.0
    while (steps := epoch_steps(t, min_delay, dt, tstop=tstop)) > 0:
        t_solved, t, gids, times = run_local(steps)  # the engine: local cells, generators
        gids, times = exchange_spikes(comm, gids, times)   # every spike of every rank
        deliver_remote(gids, times, netcons, queue, t_solved=t_solved)
        deliver(queue, t, ...)                       # events due at the epoch's end

``t_solved`` is the start-of-step delivery limit of the epoch's last step. An exchanged
event is due after it (every delay is at least the epoch), but may be due by the epoch's
end ``t`` when the epoch's one step is longer than the smallest delay on the accumulated
clock (a delay of ``dt`` and a VecStim on the step grid): the last ``deliver`` gives it
the end-of-step delivery NEURON gives it.

What is built here
    - :class:`SerialCommunicator` (one process) and :class:`MPICommunicator` (mpi4py's
      ``COMM_WORLD``), with one interface: ``rank``, ``size``, ``allgather_spikes``,
      ``allgather``, ``gather``, ``bcast``, ``barrier``, ``abort``; :func:`world` picks one.
    - :func:`exchange_spikes`: counts with ``Allgather``, then gids and times with one
      ``Allgatherv`` each; the result is sorted by (time, gid), so it is the same, bit for
      bit, on every rank and for any number of ranks.
    - :func:`deliver_remote`: queues ``te = ts + delay`` for the local NetCons of each
      exchanged spike, in (time, gid) order, refusing an event due before a step already
      computed.
    - :func:`epoch_steps`: how many steps the epoch from a given time takes, on NEURON's
      accumulated clock, so that no exchanged event is due before the epoch's last
      delivery (none before its last step, where one step is longer than the delay).
    - :func:`abort_on_error`: a failing rank prints its error and stops every rank; under
      MPI, :func:`world` also makes an uncaught exception do so.

The engine's side (not here)
    The engine runs its local cells one epoch at a time (``epoch_steps`` steps, the
    network's minimum delay ``min_delay`` being the same on every rank). Every spike of a
    local source, threshold sources and generators alike, goes to the epoch's outbox
    instead of straight to the NetCons (generators are delivered with an empty
    :class:`~.netcon.NetConTable`, so they only queue their own next spike); after the
    exchange, :func:`deliver_remote` queues the events of every spike, local ones included.
    Local and remote spikes thus reach the event queue in one order, (time, gid), which
    does not depend on how the cells are split: events at equal times act in the same
    order, and the spikes are the same for 1, 2 or 4 ranks. NetCon source ids are gids.
    Fanning spikes out at once, as a one-process run does, gives the same events at the
    same times; only events at one time may come in another order. ``tests/mpi/
    toy_network.py`` runs this loop on event-driven cells as a worked example.
    :func:`deliver_remote` loops in Python; an engine with many spikes per epoch may fan
    out with :meth:`~.netcon.NetConTable.fan_out` in compiled code, in the same order.

Which communicator
    :func:`world` uses MPI only when the process was started by an MPI launcher (``mpiexec``
    sets ``PMI_RANK``, Open MPI ``OMPI_COMM_WORLD_RANK``, PMIx ``PMIX_RANK``) and the job
    has more than one process; otherwise it returns a :class:`SerialCommunicator` without
    importing mpi4py, so a plain ``python script.py`` never initialises MPI. Under a launcher
    with several processes but without mpi4py it raises: the ranks would otherwise each run
    the whole network.
"""
from __future__ import annotations

import contextlib
import math
import os
import sys
import time
import traceback
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .delivery import advance_time, keeps_stepping
from .events import EventQueue, finite_number
from .netcon import NetConTable

__all__ = [
    "ABORT_GRACE",
    "Communicator",
    "LateSpikeError",
    "MPICommunicator",
    "SerialCommunicator",
    "abort_on_error",
    "deliver_remote",
    "epoch_steps",
    "exchange_spikes",
    "launched_by_mpi",
    "world",
]

#: Environment variables set by MPI launchers for each process they start: rank, size.
_LAUNCHER_VARIABLES = (
    ("PMI_RANK", "PMI_SIZE"),                          # MPICH's hydra, Intel MPI, srun --mpi=pmi2
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),  # Open MPI
    ("PMIX_RANK", None),                               # PMIx launchers (prterun, srun --mpi=pmix)
)


#: Seconds between printing a failing rank's message and ``MPI_Abort`` (see
#: :meth:`MPICommunicator.abort`).
ABORT_GRACE = 0.5


class LateSpikeError(RuntimeError):
    """An exchanged spike's event falls at or before a time already delivered."""


@runtime_checkable
class Communicator(Protocol):
    """What the network code needs of a group of processes."""

    rank: int
    size: int

    def allgather_spikes(self, gids: np.ndarray, times: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray]: ...

    def allgather(self, obj: Any) -> list: ...

    def gather(self, obj: Any, root: int = 0) -> list | None: ...

    def bcast(self, obj: Any, root: int = 0) -> Any: ...

    def barrier(self) -> None: ...

    def abort(self, message: str, code: int = 1) -> None: ...


class SerialCommunicator:
    """A single process: rank 0 of 1. Gathers return the process's own data.

    Examples
    --------
    >>> comm = SerialCommunicator()
    >>> comm.rank, comm.size
    (0, 1)
    >>> comm.allgather({"cells": 3})
    [{'cells': 3}]
    """

    rank = 0
    size = 1

    def __repr__(self) -> str:
        return "SerialCommunicator(rank 0 of 1)"

    def allgather_spikes(self, gids: np.ndarray, times: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray]:
        """Copies of ``gids`` (int64) and ``times`` (float64, ms): the only rank's spikes."""
        return (np.array(gids, dtype=np.int64, copy=True),
                np.array(times, dtype=np.float64, copy=True))

    def allgather(self, obj: Any) -> list:
        """``[obj]``."""
        return [obj]

    def gather(self, obj: Any, root: int = 0) -> list:
        """``[obj]`` (``root`` must be 0)."""
        _check_root(root, 1)
        return [obj]

    def bcast(self, obj: Any, root: int = 0) -> Any:
        """``obj`` (``root`` must be 0)."""
        _check_root(root, 1)
        return obj

    def barrier(self) -> None:
        """Nothing to wait for."""

    def abort(self, message: str, code: int = 1) -> None:
        """Print ``message`` to stderr and exit the process with status ``code``."""
        _print_error(message)
        raise SystemExit(code)


class MPICommunicator:
    """The processes of an MPI communicator (mpi4py), by default ``MPI.COMM_WORLD``.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm, optional
        The communicator; ``MPI.COMM_WORLD`` when omitted.
    """

    def __init__(self, comm=None):
        from mpi4py import MPI

        self._MPI = MPI
        self.comm = MPI.COMM_WORLD if comm is None else comm
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()

    def __repr__(self) -> str:
        return f"MPICommunicator(rank {self.rank} of {self.size})"

    def allgather_spikes(self, gids: np.ndarray, times: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray]:
        """Every rank's spikes, concatenated in rank order.

        One ``Allgather`` of the counts, then one ``Allgatherv`` of the gids (int64) and
        one of the times (float64, ms).
        """
        MPI = self._MPI
        gids = np.ascontiguousarray(gids, dtype=np.int64)
        times = np.ascontiguousarray(times, dtype=np.float64)
        counts = np.empty(self.size, dtype=np.int64)
        self.comm.Allgather([np.array([gids.size], dtype=np.int64), MPI.INT64_T],
                            [counts, MPI.INT64_T])
        displs = np.zeros(self.size, dtype=np.int64)
        np.cumsum(counts[:-1], out=displs[1:])
        total = int(counts.sum())
        all_gids = np.empty(total, dtype=np.int64)
        all_times = np.empty(total, dtype=np.float64)
        self.comm.Allgatherv([gids, MPI.INT64_T], [all_gids, (counts, displs), MPI.INT64_T])
        self.comm.Allgatherv([times, MPI.DOUBLE], [all_times, (counts, displs), MPI.DOUBLE])
        return all_gids, all_times

    def allgather(self, obj: Any) -> list:
        """Every rank's ``obj`` (pickled), in rank order."""
        return self.comm.allgather(obj)

    def gather(self, obj: Any, root: int = 0) -> list | None:
        """Every rank's ``obj`` (pickled), in rank order, on rank ``root``; None elsewhere."""
        _check_root(root, self.size)
        return self.comm.gather(obj, root=root)

    def bcast(self, obj: Any, root: int = 0) -> Any:
        """Rank ``root``'s ``obj`` on every rank (pickled)."""
        _check_root(root, self.size)
        return self.comm.bcast(obj, root=root)

    def barrier(self) -> None:
        """Wait until every rank gets here."""
        self.comm.Barrier()

    def abort(self, message: str, code: int = 1) -> None:
        """Print ``message`` to stderr, then stop every rank (``MPI_Abort``) with ``code``.

        Waits :data:`ABORT_GRACE` seconds in between: the launcher forwards a rank's output
        through a pipe, and an abort that follows the write at once can end the job before
        the message is through.
        """
        _print_error(message)
        time.sleep(ABORT_GRACE)
        self.comm.Abort(code)


def _check_root(root, size: int) -> None:
    if isinstance(root, bool) or not isinstance(root, (int, np.integer)) \
            or not 0 <= root < size:
        raise ValueError(f"root must be a rank in 0 .. {size - 1}, got {root!r}")


def _print_error(message: str) -> None:
    sys.stdout.flush()
    text = message if message.endswith("\n") else message + "\n"
    sys.stderr.write(text)
    sys.stderr.flush()


def launched_by_mpi(environ=None) -> tuple[bool, int | None]:
    """Whether an MPI launcher started this process, and the job's size when it says.

    Parameters
    ----------
    environ : mapping, optional
        The environment to read; ``os.environ`` by default.

    Returns
    -------
    launched : bool
    size : int or None
        Number of processes, or None when the launcher does not say.
    """
    environ = os.environ if environ is None else environ
    for rank_var, size_var in _LAUNCHER_VARIABLES:
        if rank_var in environ:
            size = environ.get(size_var) if size_var else None
            try:
                return True, int(size) if size is not None else None
            except ValueError:
                return True, None
    return False, None


def world(*, mpi: bool | None = None) -> SerialCommunicator | MPICommunicator:
    """The communicator of this job: every process that runs the network.

    Parameters
    ----------
    mpi : bool, optional
        None (default): MPI when started by an MPI launcher with more than one process,
        else one process. True: always mpi4py's ``COMM_WORLD`` (ImportError without
        mpi4py). False: always :class:`SerialCommunicator`.

    Notes
    -----
    With MPI over several processes, an exception that ends a rank's program
    (``sys.excepthook``) prints ``[rank r of N] ...`` and aborts every rank, as
    :func:`abort_on_error` does for a block, so that a script that fails on one rank does
    not leave the others waiting.

    Raises
    ------
    RuntimeError
        Started by an MPI launcher with several processes, but mpi4py cannot be imported.
    """
    if mpi is False:
        return SerialCommunicator()
    if mpi is True:
        return MPICommunicator()
    if mpi is not None:
        raise TypeError(f"mpi must be True, False or None, got {mpi!r}")
    launched, size = launched_by_mpi()
    if not launched or size == 1:
        return SerialCommunicator()
    try:
        comm = MPICommunicator()
    except ImportError as exc:
        raise RuntimeError(
            f"this process was started by an MPI launcher ({size or 'several'} processes) "
            f"but mpi4py cannot be imported ({exc}); install it with "
            "`pip install 'hinesbatch[mpi]'`, or run without mpiexec") from exc
    if comm.size == 1:
        return SerialCommunicator()
    _abort_on_uncaught(comm)
    return comm


def _spike_arrays(gids, times) -> tuple[np.ndarray, np.ndarray]:
    gids = np.asarray(gids)
    times = np.asarray(times)
    if gids.ndim != 1 or times.ndim != 1:
        raise ValueError(f"spike gids and times must be 1-D, got shapes {gids.shape} "
                         f"and {times.shape}")
    if gids.size != times.size:
        raise ValueError(f"{gids.size} spike gids but {times.size} spike times")
    if gids.size and not np.issubdtype(gids.dtype, np.integer):
        raise TypeError(f"spike gids must be integers, got dtype {gids.dtype}")
    if times.size and not (np.issubdtype(times.dtype, np.floating)
                           or np.issubdtype(times.dtype, np.integer)):
        raise TypeError(f"spike times must be numbers, got dtype {times.dtype}")
    gids = gids.astype(np.int64, copy=False)
    times = times.astype(np.float64, copy=False)
    if gids.size and gids.min() < 0:
        i = int(np.argmin(gids))
        raise ValueError(f"spike {i} has gid {gids[i]}; gids are >= 0")
    bad = np.flatnonzero(~np.isfinite(times))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"spike {i} (gid {gids[i]}) has time {times[i]}; times are finite")
    return gids, times


def exchange_spikes(comm: Communicator, gids, times) -> tuple[np.ndarray, np.ndarray]:
    """Every rank's spikes of an epoch, on every rank, sorted by (time, gid).

    Parameters
    ----------
    comm : Communicator
        :func:`world`'s communicator; every rank of it must call.
    gids : (k,) int
        Source gid of each spike this rank produced (>= 0).
    times : (k,) float
        Spike times [ms], finite.

    Returns
    -------
    gids : (m,) int64
    times : (m,) float64
        All ``m`` spikes of all ranks, sorted by time, then gid; the same arrays, bit for
        bit, on every rank and whatever the number of ranks.

    Raises
    ------
    ValueError, TypeError
        Bad spikes on this rank (checked before any communication; use
        :func:`abort_on_error` so that the other ranks stop too).

    Examples
    --------
    >>> exchange_spikes(SerialCommunicator(), [4, 1, 2], [0.5, 0.5, 0.25])
    (array([2, 1, 4]), array([0.25, 0.5 , 0.5 ]))
    """
    gids, times = _spike_arrays(gids, times)
    all_gids, all_times = comm.allgather_spikes(gids, times)
    order = np.lexsort((all_gids, all_times))
    return all_gids[order], all_times[order]


def deliver_remote(gids, times, netcons: NetConTable, queue: EventQueue, *,
                   t_solved: float = -math.inf) -> int:
    """Queue the NetCon events of exchanged spikes: ``te = ts + delay`` per local NetCon.

    The caller then delivers the events due by the epoch's end ``t`` (``te <= t``): they
    exist only when the epoch is one step longer than a delay on the accumulated clock,
    and that delivery is the end-of-step one NEURON gives them.

    Parameters
    ----------
    gids : (m,) int
        Source gids of the spikes, as :func:`exchange_spikes` returns them.
    times : (m,) float
        Their times [ms].
    netcons : NetConTable
        This rank's NetCons (those whose targets live here), source ids being gids.
        Spikes of gids without local NetCons are skipped.
    queue : EventQueue
        This rank's event queue.
    t_solved : float
        The delivery limit [ms] before the epoch's last step was computed: its
        :func:`~.delivery.start_of_step_limit` (:data:`~.delivery.INIT_LIMIT` for the
        exchange of ``finitialize``). An event at or before it should have acted in a step
        already computed.

    Returns
    -------
    int
        Number of events queued.

    Raises
    ------
    LateSpikeError
        An event at ``te <= t_solved``: the epoch is longer than a NetCon's delay.
    """
    gids, times = _spike_arrays(gids, times)
    t_solved = float(t_solved)
    queued = 0
    mine = np.isin(gids, netcons.source_ids())      # every rank gets every rank's spikes
    gids, times = gids[mine], times[mine]
    for gid, ts in zip(gids.tolist(), times.tolist()):
        for i in netcons.of_source(gid):
            te = ts + netcons._delays[i]
            if te <= t_solved:
                raise LateSpikeError(
                    f"the spike of gid {gid} at {ts!r} ms reaches NetCon[{i}] at te = {te!r} "
                    f"ms, but the step it acts on is computed (delivery done to {t_solved!r} "
                    f"ms): an epoch must not be longer than the smallest delay "
                    f"({netcons.min_delay()} ms)")
        queued += netcons.on_spike(gid, ts, queue)
    return queued


def epoch_steps(t_start: float, min_delay: float, dt: float, *,
                tstop: float = math.inf) -> int:
    """Number of steps of the epoch that starts at the accumulated time ``t_start``.

    The epoch takes the steps whose end ``t_{n+1}`` (NEURON's accumulated clock,
    :func:`~.delivery.advance_time`) stays strictly below ``t_start + min_delay``, at least
    one, and none past ``tstop``. Every spike of the epoch has ``ts >= t_start`` (a
    threshold source fires at ``t_n + 1e-10`` with ``t_n >= t_start``; a generator fires
    when its spike is delivered, past the previous epoch's last delivery at ``t_start``,
    or at 0 in ``finitialize``), so each of its events has ``te = ts + delay >= t_start +
    min_delay > t_{n+1}``, also after rounding, and is queued by :func:`deliver_remote`
    before it is due.

    The one step an epoch always takes can itself reach ``t_start + min_delay``: the
    accumulated clock's step is ``dt`` plus rounding, so with ``min_delay = dt`` about half
    the steps do. A spike at ``t_start`` plus rounding (a VecStim time on the step grid
    delivered at the step's start) then has an event due at the step's end; it is still
    after the step's start-of-step delivery, which is what :func:`deliver_remote` checks,
    and the end-of-step delivery that follows the exchange gives it NEURON's delivery.

    A fixed count ``floor(min_delay / dt)`` is not enough: the accumulated clock runs
    ahead of ``m*dt``, e.g. 200 steps of 0.025 ms from t = 8189.999999915882 ms end
    1.4e-10 ms past 5 ms later, beyond the 1e-10 ms of a threshold spike.

    Parameters
    ----------
    t_start : float
        Accumulated time [ms] at the start of the epoch (0 for the first).
    min_delay : float
        Smallest NetCon delay of the whole network [ms] (every rank must pass the same),
        ``>= dt``; ``inf`` (no NetCons) runs to ``tstop`` in one epoch.
    dt : float
        Time step [ms], > 0.
    tstop : float
        End of the run [ms]; NEURON's rule (:func:`~.delivery.keeps_stepping`) stops there.

    Returns
    -------
    int
        Steps to take before the next exchange; 0 when the run is over.

    Raises
    ------
    ValueError
        ``min_delay < dt`` (the ranks would have to exchange within a step), or neither
        ``min_delay`` nor ``tstop`` finite.
    """
    t = finite_number(t_start, "t_start [ms]")
    dt = finite_number(dt, "dt [ms]")
    if dt <= 0:
        raise ValueError(f"dt must be > 0 ms, got {dt}")
    if not isinstance(min_delay, (int, float, np.integer, np.floating)) or math.isnan(min_delay):
        raise ValueError(f"min_delay must be a number of ms, got {min_delay!r}")
    if min_delay < dt:
        raise ValueError(f"the smallest delay {min_delay} ms is below dt = {dt} ms; a network "
                         "split over ranks needs every delay >= dt")
    if math.isinf(min_delay) and math.isinf(tstop):
        raise ValueError("without NetCons (min_delay = inf) an epoch needs a finite tstop")
    limit = t + float(min_delay)
    steps = 0
    while keeps_stepping(t, tstop, dt):
        _, t_next = advance_time(t, dt)
        if steps and not t_next < limit:
            break
        steps += 1
        t = t_next
    return steps


class abort_on_error(contextlib.ContextDecorator):
    """Stop every rank when the code inside fails on one, rather than leave the others waiting.

    On an exception (``MemoryError`` included) or a non-zero ``SystemExit``, prints
    ``[rank r of N] ExceptionType: message`` and the traceback to stderr and calls
    ``comm.abort`` (``MPI_Abort``), which ends all ranks with status 1. With one process
    the exception propagates unchanged.

    Parameters
    ----------
    comm : Communicator

    Examples
    --------
    ::

        comm = world()
        with abort_on_error(comm):
            run_network(comm)

        @abort_on_error(comm)
        def main(): ...
    """

    def __init__(self, comm: Communicator):
        self.comm = comm

    def __enter__(self):
        return self.comm

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None or self.comm.size == 1:
            return False
        if issubclass(exc_type, SystemExit) and exc.code in (None, 0):
            return False
        if not issubclass(exc_type, (Exception, SystemExit)):
            return False  # KeyboardInterrupt: the launcher forwards it to every rank
        self.comm.abort(_failure_message(self.comm, exc_type, exc, tb), 1)
        return False


def _failure_message(comm: Communicator, exc_type, exc, tb) -> str:
    """``[rank r of N] Type: message``, the traceback, and a closing line."""
    trace = "".join(traceback.format_exception(exc_type, exc, tb))
    where = f"[rank {comm.rank} of {comm.size}]"
    summary = traceback.format_exception_only(exc_type, exc)[-1].strip()
    return f"{where} {summary}\n{trace}{where} stopping every rank"


def _abort_on_uncaught(comm: Communicator) -> None:
    """Make an exception that ends this rank's program stop every rank (``sys.excepthook``).

    Without it the rank would finalise MPI and exit while the others wait for it forever.
    Installed once; KeyboardInterrupt goes to the previous hook.
    """
    previous = sys.excepthook
    if getattr(previous, "_aborts_ranks", False):
        return

    def hook(exc_type, exc, tb):
        if issubclass(exc_type, KeyboardInterrupt):
            previous(exc_type, exc, tb)
            return
        comm.abort(_failure_message(comm, exc_type, exc, tb), 1)

    hook._aborts_ranks = True
    sys.excepthook = hook
