"""Run a :class:`~hinesbatch.network.Network` in one process or over the ranks of ``mpiexec``.

The same call runs either way (:func:`~hinesbatch.network.parallel.world` picks the
communicator)::

    res = run_network(net, 100.0)    # python script.py, or mpiexec -n 4 python script.py
    res.save_spikes("spikes.h5")     # one SONATA report, written by rank 0
    res.raster("raster.png")

What every rank does (``hinesbatch.network.parallel`` has the pieces)
    1. ``Network.check`` (unknown gids, delays below dt: refused before anything is
       built), then ``Network.distribute`` (LPT by compartments).
    2. Builds its own cells, their spike sources, its generators, and the NetCons that
       end on its cells (:class:`~.epochs.EpochSimulation`).
    3. Runs epochs of at most the network's smallest delay (``epoch_steps``); after
       each, exchanges the epoch's spikes (``exchange_spikes``: counts, then gids and
       times, sorted by (time, gid)) and queues the local NetCons' events of every spike.
    4. Gathers the recordings on rank 0.

Any exception on one rank, a bad synapse name on a cell only that rank builds included,
stops every rank with its message (``abort_on_error``). The spikes are the same, bit for
bit, for any number of ranks: each cell is stepped alone, and events reach each queue in
(time, gid) order whatever the split.
"""
from __future__ import annotations

import sys
import time

import numpy as np

from ..network.parallel import (
    Communicator,
    abort_on_error,
    epoch_steps,
    exchange_spikes,
    world,
)
from .epochs import EpochSimulation
from .results import Results

__all__ = ["NetworkResults", "run_network"]


class NetworkResults(Results):
    """:class:`~hinesbatch.Results` of a network run, on every rank.

    Every rank holds every spike (keys ``"spikes@<gid>"``); rank 0 also holds every
    trace (keys ``"v@<gid>:soma[0](0.5)"``), the other ranks none. :meth:`save`,
    :meth:`save_spikes`, :meth:`plot` and :meth:`raster` write on rank 0 only (and return
    None elsewhere), so a script runs unchanged under ``mpiexec``.

    ``meta`` adds ``n_ranks``, ``rank_of_gid`` (list), ``loads`` (compartments per rank),
    ``min_delay`` [ms], ``epochs``, and per rank (lists by rank) ``setup_s`` (building the
    engine's arrays and ``finitialize``, until every rank has), ``compute_s`` (stepping the
    epochs) and ``exchange_s`` (the spike exchanges, waiting for the other ranks
    included), in wall-clock seconds.
    """

    def __init__(self, *args, rank: int = 0, **kwargs):
        super().__init__(*args, **kwargs)
        self.rank = int(rank)

    def save(self, path):
        return super().save(path) if self.rank == 0 else None

    def save_spikes(self, path, population: str = "hinesbatch"):
        return super().save_spikes(path, population) if self.rank == 0 else None

    def plot(self, path=None, keys=None):
        return super().plot(path, keys) if self.rank == 0 else None

    def raster(self, path=None):
        return super().raster(path) if self.rank == 0 else None


def run_network(net, tstop: float, *, comm: Communicator | None = None, dt: float = 0.025,
                celsius: float = 6.3, v_init: float = -65.0, tables: bool = True,
                backend: str = "serial", threads: int | None = None,
                precision: str = "float64") -> NetworkResults:
    """Run ``net`` to ``tstop`` [ms] with NEURON's fixed step, split over ``comm``'s ranks.

    Parameters
    ----------
    net : Network
    tstop : float
        End time [ms].
    comm : Communicator, optional
        :func:`~hinesbatch.network.parallel.world` by default: MPI under ``mpiexec``, else one process.
    dt, celsius, v_init, tables, backend, threads, precision
        As for :class:`hinesbatch.Simulation` (dt [ms], celsius [degC], v_init [mV]).
        ``backend`` is the engine within a rank. With ``"gpu"`` each rank takes one GPU:
        rank r the device r mod (devices visible to it), so ranks spread over a machine's
        GPUs by themselves, or each sees its own through ``CUDA_VISIBLE_DEVICES``. A rank
        that sees no GPU runs the ``multicore`` CPU engine and says so on stderr.

    Returns
    -------
    NetworkResults

    Raises
    ------
    NetworkCheckError
        An unknown gid or a delay below ``dt`` (before anything is built).
    """
    comm = world() if comm is None else comm
    with abort_on_error(comm):
        options = {"dt": dt, "celsius": celsius, "v_init": v_init, "tables": tables,
                   "backend": backend, "threads": threads}
        if backend == "gpu":
            options.update(_rank_device(comm.rank, precision), threads=None)
        return _run(net, float(tstop), comm, options)


def _run(net, tstop: float, comm, options: dict) -> NetworkResults:
    dt = float(options["dt"])
    net.check(dt)
    if net.cell_gids.size == 0:
        raise ValueError("the network has no cells")
    dist = net.distribute(comm.size)
    mine = np.flatnonzero(dist.rank_of_cell == comm.rank)
    kinds = [net.kind(int(g)) for g in mine]
    cell_gids = [int(g) for g, k in zip(mine, kinds) if k == "cell"]
    sim = _build(net, cell_gids, [int(g) for g, k in zip(mine, kinds) if k != "cell"],
                 options, EpochSimulation) if cell_gids else None
    min_delay = net.min_delay()
    setup = compute = exchange = 0.0
    got_g: list[np.ndarray] = []
    got_t: list[np.ndarray] = []

    def trade(gids, times):
        nonlocal exchange
        start = time.perf_counter()
        gids, times = exchange_spikes(comm, gids, times)
        if sim is not None:
            sim.receive(gids, times)
        got_g.append(gids)
        got_t.append(times)
        exchange += time.perf_counter() - start

    start = time.perf_counter()
    empty = (np.zeros(0, dtype=np.int64), np.zeros(0))
    outbox = sim.begin(tstop) if sim is not None else empty
    comm.barrier()      # the ranks start stepping together: setup skew is not exchange time
    setup = time.perf_counter() - start
    trade(*outbox)
    t, epochs = 0.0, 0
    while (steps := epoch_steps(t, min_delay, dt, tstop=tstop)) > 0:
        start = time.perf_counter()
        if sim is not None:
            outbox = sim.advance(steps)
            t = sim.t
        else:
            outbox = empty
            t = _advance_clock(t, steps, dt)
        compute += time.perf_counter() - start
        trade(*outbox)
        epochs += 1
    local = sim.finish() if sim is not None else None
    return _gather(net, comm, local, cell_gids, np.concatenate(got_g), np.concatenate(got_t),
                   dist, tstop, options, min_delay, epochs, (setup, compute, exchange))


def _advance_clock(t: float, steps: int, dt: float) -> float:
    """NEURON's accumulated clock after ``steps`` steps (a rank without cells)."""
    for _ in range(steps):
        t = (t + 0.5 * dt) + 0.5 * dt
    return t


def _rank_device(rank: int, precision: str) -> dict:
    """The engine options of a GPU rank: its device, or the CPU engine where none is."""
    from .gpu.devices import device_count

    count, why = device_count()
    if count == 0:
        sys.stderr.write(f"hinesbatch: rank {rank}: no GPU ({why}); this rank runs the "
                         "multicore CPU engine\n")
        return {"backend": "multicore"}
    return {"devices": [rank % count], "precision": precision}


def _build(net, cell_gids: list[int], generator_gids: list[int], options: dict, cls):
    """This rank's engine: its cells, sources, generators, incoming NetCons, recordings."""
    cells = [net.build_cell(g) for g in cell_gids]
    sim = cls(cells, gids=cell_gids, **options)
    local = {g: i for i, g in enumerate(cell_gids)}
    for i, g in enumerate(cell_gids):
        location, threshold = net.source_of(g)
        sim.cell_source(i, location, threshold)
    artificial = {}
    for g in generator_gids:
        kind, params = net.generator(g)
        if kind == "NetStim":
            sim.net_stim(gid=g, **params)
        elif kind == "VecStim":
            sim.vec_stim(params["times"], gid=g, delay=params.get("delay", 0.0))
        else:
            artificial[g] = sim.artificial_cell(kind, gid=g, **params)
    conns = net.connections
    for i, (s, t) in enumerate(zip(conns["source"].tolist(), conns["target"].tolist())):
        if t in local or t in artificial:
            target = artificial[t] if t in artificial else \
                _synapse(cells[local[t]], conns["synapse"][i], i, t)
            sim.add_input(s, target, weight=conns["weight_vectors"].get(
                i, float(conns["weight"][i])),
                          delay=float(conns["delay"][i]))
    for variable, g, location in net.records:
        if g in local:
            sim.record(variable, cell=local[g], location=location)
    return sim


def _synapse(cell, synapse, i: int, gid: int):
    """The point process ``synapse`` (a name or an index) of ``cell``."""
    pps = cell.point_processes
    if isinstance(synapse, str):
        for p in pps:
            if p.name == synapse:
                return p
        names = ", ".join(p.name for p in pps) or "none"
        raise ValueError(f"connection {i}: cell {gid} has no synapse {synapse!r}; its point "
                         f"processes: {names}")
    if not 0 <= synapse < len(pps):
        raise ValueError(f"connection {i}: cell {gid} has {len(pps)} point processes, no "
                         f"index {synapse}")
    return pps[synapse]


def _gather(net, comm, local, cell_gids, gids, times, dist, tstop, options, min_delay,
            epochs, times_s) -> NetworkResults:
    """Spikes by gid on every rank; traces (renamed to global gids) on rank 0."""
    traces, trace_times, units = {}, {}, {}
    if local is not None:
        for key in local:
            variable, rest = key.split("@", 1)
            i, location = rest.split(":", 1)
            new = f"{variable}@{cell_gids[int(i)]}:{location}"
            traces[new], trace_times[new], units[new] = local[key], local.time(key), \
                local.units[key]
    timing = comm.allgather(times_s)
    parts = comm.gather((traces, trace_times, units), root=0)
    wanted = [f"{v}@{g}:{loc}" for v, g, loc in net.records]
    if comm.rank == 0:
        merged = [{}, {}, {}]
        for part in parts:
            for d, m in zip(part, merged):
                m.update(d)
        traces = {k: merged[0][k] for k in wanted}
        trace_times = {k: merged[1][k] for k in wanted}
        units = {k: merged[2][k] for k in wanted}
    else:
        traces, trace_times, units = {}, {}, {}
    spikes, spike_gids = {}, {}
    order = np.argsort(gids, kind="stable")       # by gid, each in time order
    bounds = np.flatnonzero(np.diff(gids[order])) + 1
    for chunk in np.split(order, bounds) if order.size else []:
        g = int(gids[chunk[0]])
        spikes[f"spikes@{g}"] = times[chunk]
        spike_gids[f"spikes@{g}"] = g
    for g in net.cell_gids.tolist() + net.generator_gids.tolist():
        spikes.setdefault(f"spikes@{g}", np.zeros(0))
        spike_gids.setdefault(f"spikes@{g}", g)
    spikes = dict(sorted(spikes.items(), key=lambda kv: spike_gids[kv[0]]))
    spike_gids = {k: spike_gids[k] for k in spikes}
    meta = {"dt": options["dt"], "celsius": options["celsius"], "v_init": options["v_init"],
            "tables": options["tables"], "backend": options["backend"],
            "n_cells": int(net.cell_gids.size), "tstop": float(tstop),
            "n_ranks": comm.size, "rank_of_gid": dist.rank_of_cell.tolist(),
            "loads": dist.loads.tolist(), "min_delay": float(min_delay), "epochs": epochs,
            "setup_s": [t[0] for t in timing], "compute_s": [t[1] for t in timing],
            "exchange_s": [t[2] for t in timing]}
    return NetworkResults(traces, trace_times, units, spikes, spike_gids, meta,
                          rank=comm.rank)
