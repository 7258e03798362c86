"""The CPU backends' time loop: stretches of steps run by the generated kernels
(:mod:`.kernels`), with Python between them only to deliver the events the kernels do not
run and to queue the spikes a stretch produced.

A stretch is as long as no spike it produces can act within it (the smallest delay from a
threshold source). The queued events of its steps whose NET_RECEIVE the kernel runs
(:func:`.kernels.kernel_receivers`: synapses that send nothing, such as ExpSyn and
Exp2Syn) go with it, each to the start of the step NEURON delivers it before; the stretch
ends before the step of the first event the kernel does not run (a NetStim's or VecStim's
spike, an artificial cell's event, a NET_RECEIVE that sends), which the host delivers, so
every event keeps NEURON's order. A network run of NEURON's ringtest thus makes one kernel
call per exchange (102 in 100 ms), where a call per event time made 451 for 128 cells
(docs/decisions/024-cpu-kernel-events.md).

:class:`CpuLoop` is part of :class:`~.simulation.Simulation` (``serial`` and
``multicore``); :class:`~.epochs.EpochSimulation` runs its stretches between a network's
spike exchanges through :meth:`CpuLoop._free_steps` and :meth:`CpuLoop._epoch`.
"""
from __future__ import annotations

import math
import sys

import numpy as np

from .events import SPIKE_OFFSET
from .kernels import kernel_receivers

__all__ = ["CpuLoop", "progress_line"]


class CpuLoop:
    """Stepping on the CPU (a mixin of :class:`~.simulation.Simulation`, whose run state
    it reads: ``_km``, ``_tgrid``, ``_chunk_off``, ``_node_ord``, the event queue)."""

    def _run_cpu(self, lay, run, progress: bool) -> None:
        """The CPU time loop: epochs of the generated kernels between events (``run``: the
        run's arrays, :class:`~.simulation.Simulation`'s ``_initialize``)."""
        dt, celsius = self.dt, self.celsius
        n_steps = run.tgrid.size - 1
        sources, src_off, rec_off, rec_buf = run.sources, run.src_off, run.rec_off, run.rec_buf
        rec = (run.rec_m, run.rec_f, run.rec_i, run.rec_every)
        src = (run.src_node, run.src_thr, run.src_flag)
        km, model, tgrid = self._km, run.model, run.tgrid
        if self._watches:
            self._watches.steps(self, lay, run, 0, n_steps)
            return
        # threshold -> synapse delays bound how far cells may run on their own
        delays = [nc.delay for s in sources for nc in s.netcons]
        min_delay = min(delays) if delays else math.inf
        step = 0
        chunk = max(1, n_steps // 50) if progress else self.MAX_EPOCH
        while step < n_steps:
            t = tgrid[step]
            if progress:
                progress_line(t, tgrid[n_steps])
            n = self._free_steps(tgrid, step, n_steps, min_delay, chunk)
            if n > 0:
                step = self._epoch(km, lay, step, n, sources, src, src_off, rec, rec_off,
                                   rec_buf, model)
            elif self._queue.next_time() <= t + 0.5 * dt:
                self._deliver(t + 0.5 * dt)
            else:   # a delay below dt/2: stop at every threshold crossing
                fired = np.zeros(max(len(sources), 1), dtype=np.int64)
                bad = np.zeros(len(lay.cells), dtype=np.bool_)
                _, step, t, status, info = km.advance(
                    n_steps - step, step, t, self._queue.next_time(), 0, dt, celsius,
                    len(lay.cells), *src, fired, *rec, rec_buf, bad, *model)
                if status == 1:
                    for k in fired[:info]:
                        self._fire(sources[k], t + SPIKE_OFFSET)
                elif status == 3:
                    self._non_finite(lay, int(info), t)

    #: Longest stretch run by one call of the epoch kernel [steps].
    MAX_EPOCH = 8192

    def _free_steps(self, tgrid, step: int, n_steps: int, min_delay: float,
                    chunk: int) -> int:
        """Steps from ``step`` in which no spike of the stretch can act (NEURON's rule: an
        event acts on the first step with te <= t_n + dt/2); :meth:`_epoch` ends the
        stretch sooner where a queued event the kernel does not run is due."""
        stop = min(n_steps, step + chunk)
        # every spike of the stretch has te >= t_step + 1e-10 + min_delay
        te = (tgrid[step] + SPIKE_OFFSET) + min_delay
        return int(np.searchsorted(self._tlimit[step:stop], te, side="left"))

    def _epoch(self, km, lay, step, n, sources, src, src_off, rec, rec_off, rec_buf,
               model) -> int:
        """Run up to ``n`` steps from ``step`` with the queued events the kernel runs
        (module docstring), then, where an event the kernel does not run ended the stretch
        sooner, deliver the events due at the next step's start; returns the step reached."""
        whole = n
        n, events, weights, host = self._stretch_events(step, n)
        if n > 0:
            self._kernel_stretch(km, lay, step, n, events, sources, src, src_off, rec,
                                 rec_off, rec_buf, model)
            ev_w = events[-2]           # what NET_RECEIVE wrote, back to the NetCons
            for w, row in weights:
                w[:] = ev_w[row, :w.size]
        step += n
        if n < whole:
            for event in host:      # taken before the one the kernel does not run
                self._net_receive(event)
            self._deliver(self._tlimit[step])
        return step

    def _kernel_stretch(self, km, lay, step, n, events, sources, src, src_off, rec, rec_off,
                        rec_buf, model) -> None:
        """One call of the epoch kernel: ``n`` steps from ``step``, the stretch's spikes
        fired (queued or sent) after it."""
        cap = n // 2 + 2
        spike_t = np.empty((max(len(sources), 1), cap))
        spike_n = np.zeros(max(len(sources), 1), dtype=np.int64)
        bad_step = np.zeros(len(lay.cells), dtype=np.int64)
        args = (n, step, self._tgrid[step], self.dt, self.celsius, self._chunk_off,
                self._node_ord, *src, src_off, spike_t, spike_n, *rec, rec_off, rec_buf,
                bad_step, *events, *model)
        if self.backend == "multicore":
            import numba

            # chunks handed to threads one at a time as they finish, not split in equal
            # shares up front: a thread slowed by other work on its core, or given larger
            # cells, no longer holds the others back at the epoch's end
            before = numba.set_parallel_chunksize(1)
            try:
                km.advance_epoch(*args)
            finally:
                numba.set_parallel_chunksize(before)
        else:
            km.advance_epoch(*args)
        if bad_step.any():
            gid = int(np.argmin(np.where(bad_step > 0, bad_step, np.iinfo(np.int64).max)))
            self._non_finite(lay, gid, self._tgrid[bad_step[gid]])
        spikes = sorted((float(spike_t[k, i]), k) for k in np.flatnonzero(spike_n).tolist()
                        for i in range(int(spike_n[k])))
        for ts, k in spikes:
            self._fire(sources[k], ts)

    # ---- the events the kernel runs ------------------------------------------------------
    def _kernel_events_setup(self, km, lay) -> None:
        """Which mechanisms' NET_RECEIVE the kernel runs (index in the module), the chunk
        of each of their instances, and the arrays of a stretch without events."""
        self._ev_mech = {km.codes[k].mech.name: k for k in kernel_receivers(km.codes)}
        n_cells = len(lay.cells)
        self._ev_chunk = {
            m: np.searchsorted(self._chunk_off, np.repeat(np.arange(n_cells),
                                                          np.diff(lay.offsets[m])),
               side="right") - 1 for m in self._ev_mech}
        self._ev_width = max([c.mech.weight_size for c in km.codes
                              if c.mech.name in self._ev_mech], default=1)
        self._ev_none = (np.zeros(self._chunk_off.size, dtype=np.int64),
                         np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
                         np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0),
                         np.zeros(0, dtype=np.int64), np.zeros((0, self._ev_width)),
                         np.zeros((1, 3)))

    def _kernel_target(self, event):
        """``(index in the module, mechanism, instance)`` of an event the kernel runs;
        None for the others (generators' events, artificial cells', WATCH events,
        mechanisms whose NET_RECEIVE sends)."""
        if event.kind == "net":
            m, j = self._instance_of(self._event_target(event))
        elif event.kind == "self" and len(event.target) == 2:
            m, j = event.target
        else:
            return None
        k = self._ev_mech.get(m)
        return None if k is None else (k, m, j)

    def _stretch_events(self, step: int, n: int) -> tuple:
        """Take from the queue the events of steps ``[step, step + n)`` the kernel runs.

        Returns ``(n, events, weights, host)``: the steps the kernel may take (fewer where
        an event it does not run is due: the stretch ends before that event's step), the
        kernel's event arguments (:data:`.kernels.EVENT_ARGS`, with ``ev_off``), the
        NetCons' weight vectors with their rows of ``ev_w``, and the events taken for the
        step after the stretch, which the host delivers in their order.
        """
        queue = self._queue
        limits = self._tlimit[step:step + n]
        if queue.next_time() > limits[-1]:
            return n, self._ev_none, [], []
        taken = []
        while (event := queue.peek()) is not None and event.te <= limits[-1]:
            m = int(np.searchsorted(limits, event.te, side="left"))
            target = self._kernel_target(event)
            if target is None:
                n = m
                break
            queue.pop_next(event.te)
            taken.append((step + m, target, event))
        host = [e for s, _, e in taken if s >= step + n]
        taken = [t for t in taken if t[0] < step + n]
        if not taken:
            return n, self._ev_none, [], host
        return (n, *self._event_arrays(taken), host)

    def _event_arrays(self, taken) -> tuple:
        """The kernel's event arguments for ``taken`` (``(step, target, event)`` in
        delivery order), grouped by chunk, and the NetCons' weight vectors with their rows
        of ``ev_w`` (one per NetCon; a self-event from INITIAL gets a row of zeros)."""
        table = self._receive_table
        rows: dict = {}
        vectors = []
        ev_row = np.empty(len(taken), dtype=np.int64)
        for e, (_, _, event) in enumerate(taken):
            if event.netcon >= 0:
                if event.netcon not in rows:
                    rows[event.netcon] = len(vectors)
                    vectors.append(table.weight_vector(event.netcon))
                ev_row[e] = rows[event.netcon]
            else:           # a self-event from INITIAL: a vector of zeros of its own
                ev_row[e] = len(vectors)
                vectors.append(None)
        ev_w = np.zeros((len(vectors), self._ev_width))
        for r, w in enumerate(vectors):
            if w is not None:
                ev_w[r, :w.size] = w
        chunk = np.array([self._ev_chunk[m][j] for _, (_, m, j), _ in taken], dtype=np.int64)
        order = np.argsort(chunk, kind="stable")        # a chunk's events in delivery order
        ev_off = np.searchsorted(chunk[order], np.arange(self._chunk_off.size)).astype(np.int64)
        events = (ev_off,
                  np.array([taken[i][0] for i in order], dtype=np.int64),
                  np.array([taken[i][1][0] for i in order], dtype=np.int64),
                  np.array([taken[i][1][2] for i in order], dtype=np.int64),
                  np.array([taken[i][2].te for i in order], dtype=np.float64),
                  np.array([taken[i][2].flag for i in order], dtype=np.float64),
                  ev_row[order], ev_w, self._ev_none[-1])
        return events, [(w, r) for r, w in enumerate(vectors) if w is not None]


def progress_line(t: float, tstop: float, *, end: bool = False) -> None:
    """One line on stderr: simulated time and percentage."""
    pct = 100.0 * t / tstop if tstop > 0 else 100.0
    sys.stderr.write(f"\rsimulated {t:10.3f} of {tstop:g} ms ({pct:5.1f} %)"
                     + ("\n" if end else ""))
    sys.stderr.flush()
