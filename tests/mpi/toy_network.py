"""A network of event-driven cells and spike generators, split over ranks by epochs.

The cells are leaky integrate-and-fire units driven by events only (NEURON's IntFire1 in
spirit): an event of weight ``w`` at ``te`` sets ``s = s*exp(-(te - t_last)/tau) + w`` and
the cell fires at ``te`` when ``s >= 1`` (then ``s = 0``). They need no membrane solver,
so the epoch loop of :mod:`hinesbatch.network.parallel` can be run without the engine:

    for every epoch (``epoch_steps(t, min_delay, dt)`` steps from its start ``t``):
        step the clock as NEURON does, delivering the local queue at both points of a
        step; generator and cell spikes go to the epoch's outbox
    exchange the outbox (exchange_spikes), queue the local NetCons' events (deliver_remote)
    and deliver those due at the epoch's end (where its one step outruns a delay of dt)

:func:`run_immediate` is the reference without epochs: it fans every spike out within the
half step's delivery in which it happens (no event it makes can be due sooner: delays are
at least dt, a delivery covers dt/2), spikes of one time in gid order, the exchange's
order. Both give the same spikes bit for bit, grid delays (many events at one time)
included. A one-process engine fans a spike out the moment it fires instead: two spikes of
one time then queue their events in firing order, and events of both that reach one cell
at one time can act in the other order (``docs/networks.md``).

Used by ``tests/unit/test_network_parallel_epochs.py`` in one process and by
``tests/mpi/network_check.py`` under ``mpiexec``.
"""
from __future__ import annotations

import math

import numpy as np

from hinesbatch.network import (
    INIT_LIMIT,
    EventQueue,
    NetConTable,
    NetStimGenerator,
    VecStimGenerator,
    advance_time,
    deliver,
    end_of_step_limit,
    keeps_stepping,
    prime_generators,
    start_of_step_limit,
)
from hinesbatch.network.distribution import check_network, distribute
from hinesbatch.network.parallel import deliver_remote, epoch_steps, exchange_spikes

DT = 0.025  # [ms]
TAU = 5.0   # [ms] decay of the cells' state


def build(seed: int, *, n_cells: int = 40, n_netstim: int = 4, n_vecstim: int = 4,
          n_connections: int = 240, grid_delays: bool = True, shortest: int = 40) -> dict:
    """A random network as plain arrays; the same on every rank for one ``seed``.

    Gids ``0 .. n_cells-1`` are cells, then the NetStims, then the VecStims; the first
    VecStim fires at 0. With ``grid_delays`` the delays are ``k*dt``, ``k`` from
    ``shortest`` to 200 (5 ms), so many events share a time; otherwise they are drawn from
    a continuum in [1, 5] ms.
    """
    rng = np.random.default_rng(seed)
    n_gen = n_netstim + n_vecstim
    gens = []
    for _ in range(n_netstim):
        gens.append(("netstim", {"start": float(rng.uniform(0.0, 5.0)),
                                 "interval": float(rng.uniform(2.0, 6.0)), "number": 12}))
    for i in range(n_vecstim):
        times = np.sort(rng.uniform(0.0, 40.0, size=10))
        if i == 0:
            times[0] = 0.0
        gens.append(("vecstim", {"times": times}))
    # every generator drives a few cells; the rest of the connections are recurrent
    n_drive = 4 * n_gen
    sources = np.concatenate([np.repeat(np.arange(n_cells, n_cells + n_gen), 4),
                              rng.integers(0, n_cells, size=n_connections - n_drive)])
    targets = rng.integers(0, n_cells, size=n_connections)
    weights = np.where(sources >= n_cells, rng.uniform(0.5, 1.1, size=n_connections),
                       rng.uniform(0.05, 0.4, size=n_connections))
    if grid_delays:
        delays = rng.integers(shortest, 201, size=n_connections) * DT
        delays[0] = shortest * DT
    else:
        delays = rng.uniform(1.0, 5.0, size=n_connections)
    compartments = rng.integers(1, 200, size=n_cells)
    return {"n_cells": n_cells, "gens": gens, "sources": sources.astype(np.int64),
            "targets": targets.astype(np.int64), "weights": weights, "delays": delays,
            "compartments": compartments}


def _generator(kind: str, params: dict):
    return NetStimGenerator(**params) if kind == "netstim" else VecStimGenerator(**params)


class _Cells:
    """Integrate-and-fire states of the cells that a rank owns, by gid."""

    def __init__(self, gids):
        self.s = {int(g): 0.0 for g in gids}
        self.t_last = {int(g): 0.0 for g in gids}

    def receive(self, gid: int, te: float, w: float) -> bool:
        s = self.s[gid] * math.exp(-(te - self.t_last[gid]) / TAU) + w
        self.t_last[gid] = te
        fired = s >= 1.0
        self.s[gid] = 0.0 if fired else s
        return fired


def run_epochs(net: dict, comm, tstop: float, dt: float = DT) -> tuple[np.ndarray, np.ndarray]:
    """Run ``net`` split over ``comm``'s ranks; every spike (gids, times [ms]) on every rank."""
    n_cells, gens = net["n_cells"], net["gens"]
    all_gids = np.arange(n_cells + len(gens))
    check_network(all_gids, {"source": net["sources"], "target": net["targets"],
                             "delay": net["delays"]}, dt)
    # cells by compartments, generators spread one apiece after them
    weights = np.concatenate([net["compartments"], np.ones(len(gens), dtype=np.int64)])
    dist = distribute(weights, comm.size)
    mine = set(dist.local_cells(comm.rank).tolist())
    cells = _Cells([g for g in mine if g < n_cells])
    generators = {n_cells + i: _generator(*gens[i]) for i in range(len(gens))
                  if n_cells + i in mine}
    netcons = NetConTable()  # the NetCons whose targets live here; source ids are gids
    for src, tgt, w, d in zip(net["sources"].tolist(), net["targets"].tolist(),
                              net["weights"].tolist(), net["delays"].tolist()):
        if tgt in mine:
            netcons.add(src, tgt, weight=w, delay=d)
    min_delay = float(np.min(net["delays"]))  # the network's, not this rank's
    no_fan_out = NetConTable()  # generators only queue their own next spike
    queue = EventQueue()
    out_g: list[int] = []
    out_t: list[float] = []

    def on_net(event):
        if cells.receive(event.target, event.te, event.weight):
            out_g.append(event.target)
            out_t.append(event.te)

    def on_spike(source, ts):
        out_g.append(source)
        out_t.append(ts)

    def deliver_to(limit):
        deliver(queue, limit, netcons=no_fan_out, on_net=on_net, generators=generators,
                on_spike=on_spike)

    got_g, got_t = [], []

    def exchange(t_solved, t_end):
        g, ts = exchange_spikes(comm, np.array(out_g, dtype=np.int64),
                                np.array(out_t, dtype=np.float64))
        out_g.clear()
        out_t.clear()
        deliver_remote(g, ts, netcons, queue, t_solved=t_solved)
        deliver_to(t_end)   # events due at the end of an epoch's one step
        got_g.append(g)
        got_t.append(ts)

    prime_generators(queue, generators)
    deliver_to(INIT_LIMIT)
    exchange(INIT_LIMIT, INIT_LIMIT)  # spikes at t = 0, before the first step
    t = 0.0
    while (steps := epoch_steps(t, min_delay, dt, tstop=tstop)) > 0:
        for _ in range(steps):
            t_solved = start_of_step_limit(t, dt)
            deliver_to(t_solved)
            _, t = advance_time(t, dt)
            deliver_to(end_of_step_limit(t))
        exchange(t_solved, end_of_step_limit(t))
    return np.concatenate(got_g), np.concatenate(got_t)


def run_immediate(net: dict, tstop: float, dt: float = DT) -> tuple[np.ndarray, np.ndarray]:
    """No epochs: spikes fanned out as their delivery ends, of one time by gid; sorted spikes."""
    n_cells, gens = net["n_cells"], net["gens"]
    cells = _Cells(range(n_cells))
    generators = {n_cells + i: _generator(*gens[i]) for i in range(len(gens))}
    netcons = NetConTable()
    for src, tgt, w, d in zip(net["sources"].tolist(), net["targets"].tolist(),
                              net["weights"].tolist(), net["delays"].tolist()):
        netcons.add(src, tgt, weight=w, delay=d)
    no_fan_out = NetConTable()  # generators only queue their own next spike
    queue = EventQueue()
    spikes: list[tuple[float, int]] = []
    fired: list[tuple[float, int]] = []

    def on_net(event):
        if cells.receive(event.target, event.te, event.weight):
            fired.append((event.te, event.target))

    def on_spike(source, ts):
        fired.append((ts, source))

    def deliver_to(limit):
        deliver(queue, limit, netcons=no_fan_out, on_net=on_net, generators=generators,
                on_spike=on_spike)
        for ts, gid in sorted(fired):
            netcons.on_spike(gid, ts, queue)
        spikes.extend(fired)
        fired.clear()

    prime_generators(queue, generators)
    deliver_to(0.0)
    t = 0.0
    while keeps_stepping(t, tstop, dt):
        deliver_to(start_of_step_limit(t, dt))
        _, t = advance_time(t, dt)
        deliver_to(end_of_step_limit(t))
    spikes.sort()
    return (np.array([g for _, g in spikes], dtype=np.int64),
            np.array([ts for ts, _ in spikes], dtype=np.float64))
