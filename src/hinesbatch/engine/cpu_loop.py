"""The CPU backends' time loop: stretches of steps that no event can interrupt, run by the
generated kernels (:mod:`.kernels`), with Python between them only to deliver events and
queue the spikes a stretch produced.

:class:`CpuLoop` is part of :class:`~.simulation.Simulation` (``serial`` and
``multicore``); :class:`~.epochs.EpochSimulation` runs its stretches between a network's
spike exchanges through :meth:`CpuLoop._free_steps` and :meth:`CpuLoop._epoch`.
"""
from __future__ import annotations

import math
import sys

import numpy as np

from .events import SPIKE_OFFSET

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
        """Steps from ``step`` in which no queued event acts and no spike of the stretch
        can act (NEURON's rule: an event acts on the first step with te <= t_n + dt/2)."""
        half = 0.5 * self.dt
        stop = min(n_steps, step + chunk)
        te = self._queue.next_time()
        # every spike of the stretch has te >= t_step + 1e-10 + min_delay
        te = min(te, (tgrid[step] + SPIKE_OFFSET) + min_delay)
        lim = np.searchsorted(tgrid[step:stop] + half, te, side="left")
        return int(lim)

    def _epoch(self, km, lay, step, n, sources, src, src_off, rec, rec_off, rec_buf,
               model) -> int:
        cap = n // 2 + 2
        spike_t = np.empty((max(len(sources), 1), cap))
        spike_n = np.zeros(max(len(sources), 1), dtype=np.int64)
        bad_step = np.zeros(len(lay.cells), dtype=np.int64)
        args = (n, step, self._tgrid[step], self.dt, self.celsius, self._chunk_off,
                self._node_ord, *src, src_off, spike_t, spike_n, *rec, rec_off, rec_buf,
                bad_step, *model)
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
        return step + n


def progress_line(t: float, tstop: float, *, end: bool = False) -> None:
    """One line on stderr: simulated time and percentage."""
    pct = 100.0 * t / tstop if tstop > 0 else 100.0
    sys.stderr.write(f"\rsimulated {t:10.3f} of {tstop:g} ms ({pct:5.1f} %)"
                     + ("\n" if end else ""))
    sys.stderr.flush()
