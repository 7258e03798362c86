"""NMODL's ``WATCH`` on the CPU engine: thresholds of point processes on their own ``v``.

``WATCH (v > x) f`` in NET_RECEIVE (the description's ``watch_above(x, f)``) activates a
condition of the instance; NEURON's fixed step (``NetCvode::check_thresh``) then checks it
once per step, at the start of the step from ``t_n``, after the spike sources' thresholds
and with the ``v`` of ``t_n``: when ``v - x`` becomes positive (it was not at the last
check) a self-event with flag ``f`` is queued at ``t_n`` itself (no offset, unlike a spike
source's ``t_n + 1e-10``) and acts in that step's first delivery, with no weight vector.
Several conditions firing at one check queue their events in the order the conditions
were activated (a condition activated again moves to the end).

Each instance of a mechanism with WATCH statements has as many slots as its NET_RECEIVE
has WATCH conditions. The slots join the spike sources of the kernels (``src_node``,
``src_thr``, ``src_flag``): a slot's threshold is ``x`` while active and ``+inf``
otherwise, so the kernels' own crossing test ``v - thr > 0`` is NEURON's test of
``(v) - (x)``. A NET_RECEIVE call that runs WATCH statements first removes every
condition of its instance, and its not yet delivered WATCH events (NEURON's
``_nrn_watch_activate`` with ``r == 0``), then activates the new ones; an activated
condition starts "above" when ``v - x >= -1e-11`` (``hoc_epsilon``) at that moment, so it
fires only once ``v`` has gone below and comes back.

Because activation and checking interleave with delivery, a run with WATCH slots steps in
NEURON's phases (:meth:`Watches.steps`): the events due by ``t_n`` are delivered, then the
thresholds are checked at ``t_n``, then the events due by ``t_n + dt/2`` are delivered.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .events import SPIKE_OFFSET

__all__ = ["HOC_EPSILON", "WatchSlot", "Watches", "watch_slots"]

#: NEURON's ``float_epsilon`` (``hoc_epsilon``): a condition activated within this of its
#: threshold counts as already above it.
HOC_EPSILON = 1e-11


@dataclass(eq=False)
class WatchSlot:
    """One WATCH condition of one instance: cell ``gid``, mechanism ``m``, instance
    ``j``, condition ``k`` (0, 1, ... in the order the NET_RECEIVE call ran them),
    ``node`` the instance's node in the model's arrays."""

    gid: int
    m: str
    j: int
    k: int
    node: int
    netcons: tuple = ()          # a slot sends no spikes through NetCons

    @property
    def name(self) -> str:
        return f"{self.gid}:{self.m}[{self.j}] WATCH {self.k}"


def watch_slots(km, lay) -> list:
    """The slots of every instance of the mechanisms whose NET_RECEIVE has WATCH
    statements, grouped by cell."""
    out = []
    for code in km.codes:
        n = code.receive_watches if code.mech.net_receive else 0
        if not n:
            continue
        m = code.mech.name
        offsets, nodes = lay.offsets[m], lay.nodes[m]
        for c in range(len(offsets) - 1):
            for j in range(int(offsets[c]), int(offsets[c + 1])):
                out += [WatchSlot(c, m, j, k, int(nodes[j])) for k in range(n)]
    return out


class Watches:
    """The WATCH conditions of a run and their place among the kernels' spike sources.

    Parameters
    ----------
    sources : list
        The run's spike sources and slots, as the kernels see them.
    v : ndarray
        The model's membrane potentials [mV] (read at activation).
    src_thr, src_flag : ndarray
        The kernels' thresholds and above-threshold flags, updated in place.
    """

    def __init__(self, sources: list, v: np.ndarray, src_thr: np.ndarray,
                 src_flag: np.ndarray):
        self.v, self.thr, self.flag = v, src_thr, src_flag
        self.slots = {q: s for q, s in enumerate(sources) if isinstance(s, WatchSlot)}
        self._where = {(s.m, s.j, s.k): q for q, s in self.slots.items()}
        self._active: dict = {}       # (m, j) -> its active slots
        self._nrflag: dict = {}       # slot -> the flag of its event
        self._order: dict = {}        # slot -> when it was last activated
        self._pending: dict = {}      # (m, j) -> tokens of its queued WATCH events
        self._count = 0
        for q in self.slots:
            self.thr[q] = math.inf

    def __bool__(self) -> bool:
        return bool(self.slots)

    def activate(self, m: str, j: int, rows) -> None:
        """Instance ``j`` of ``m`` ran WATCH statements: ``rows`` of ``(x [mV], flag)``."""
        for q in self._active.pop((m, j), ()):
            self.thr[q] = math.inf
            self.flag[q] = 0
        self._pending.pop((m, j), None)
        active = []
        for k, (x, f) in enumerate(rows):
            q = self._where[(m, j, k)]
            self.thr[q] = x
            self.flag[q] = 1 if self.v[self.slots[q].node] - x >= -HOC_EPSILON else 0
            self._nrflag[q] = f
            self._count += 1
            self._order[q] = self._count
            active.append(q)
        self._active[(m, j)] = active

    def fire(self, fired, t: float, queue) -> None:
        """Queue at ``t`` [ms] the events of the slots among ``fired`` (source indices),
        in activation order."""
        for q in sorted((q for q in fired if q in self.slots), key=self._order.get):
            s = self.slots[q]
            self._count += 1
            self._pending.setdefault((s.m, s.j), set()).add(self._count)
            queue.push(t, (s.m, s.j, self._count), 0.0, kind="self", netcon=-1,
                       flag=self._nrflag[q])

    def take(self, target) -> bool:
        """Whether the WATCH event for ``target`` (``(m, j, token)``) still acts (False:
        its instance's conditions were replaced after it was queued)."""
        m, j, token = target
        pending = self._pending.get((m, j))
        if pending is None or token not in pending:
            return False
        pending.discard(token)
        return True

    def steps(self, sim, lay, run, step: int, stop: int) -> None:
        """Take the steps ``step`` to ``stop`` in NEURON's phases (module docstring),
        ``sim`` a CPU :class:`~.simulation.Simulation` after ``finitialize``; the events
        due by the end of the last step are left to the caller, as are those due by the
        first step's ``t``, which the caller has delivered."""
        km, dt, queue = sim._km, sim.dt, sim._queue
        sources, model, n_steps = run.sources, run.model, stop
        src = (run.src_node, run.src_thr, run.src_flag)
        rec = (run.rec_m, run.rec_f, run.rec_i, run.rec_every)
        fired = np.zeros(max(len(sources), 1), dtype=np.int64)
        bad = np.zeros(len(lay.cells), dtype=np.bool_)
        phase = 1                   # 1: the check at this t is due; 2: done
        while step < n_steps:
            _, step, t, status, info = km.advance(
                n_steps - step, step, run.tgrid[step], queue.next_time(), phase, dt,
                sim.celsius, len(lay.cells), *src, fired, *rec, run.rec_buf, bad, *model)
            if status == 1:             # checked at t: sources crossed
                hits = fired[:info].tolist()
                for q in hits:
                    if q not in self.slots:
                        sim._fire(sources[q], t + SPIKE_OFFSET)
                self.fire(hits, t, queue)
                sim._deliver(t + 0.5 * dt)
                phase = 2
            elif status == 2:
                if queue.next_time() <= t:      # the previous step's last delivery
                    sim._deliver(t)
                    phase = 1
                else:                           # after the check at t
                    sim._deliver(t + 0.5 * dt)
                    phase = 2
            elif status == 3:
                sim._non_finite(lay, int(info), t)
