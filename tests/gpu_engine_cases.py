"""Models that the GPU engine's tests run on the GPU engine and on the serial CPU engine.

Used by ``tests/unit/test_gpu_engine_host.py`` (the kernel built as host C++) and
``tests/gpu/test_gpu_engine.py`` (CUDA devices). Every model is built fresh for each engine.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

import hinesbatch as hb

REAL = Path(__file__).parent / "data" / "morphologies" / "real"
#: Small real cells (nodes at d_lambda 0.1: tens to a few hundred).
SMALL = ("ko20x-07.CNG.swc", "h10.CNG.swc", "mp_ma_40984_gc2.CNG.swc", "1220882a.CNG.swc")


def cell(name, **policy):
    """``hb.Cell`` of a file of ``REAL`` (the reader's warnings about these files silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return hb.Cell(REAL / name, ra=100.0, **policy)


def clamped_cells(rng, files=SMALL, *, d_lambda=0.1):
    """hh everywhere (pas added on dendrites of every other cell), an IClamp of random
    amplitude at the soma, random gnabar per cell: (cells, parameters used)."""
    cells = []
    for k, f in enumerate(files):
        c = cell(f, d_lambda=d_lambda)
        c.insert("hh", gnabar=float(rng.uniform(0.10, 0.14)))
        if k % 2:
            c.insert("pas", region="dend", g=float(rng.uniform(1e-5, 1e-4)), e=-65.0)
        c.place("IClamp", "soma[0](0.5)", delay=float(rng.uniform(1, 5)), dur=50.0,
                amp=float(rng.uniform(0.5, 1.5)))
        cells.append(c)
    return cells


def network(rng, n_cells=20):
    """``n_cells`` small real cells with hh (1 or 3 segments per section); :func:`wire`
    connects them."""
    files = [SMALL[k % len(SMALL)] for k in range(n_cells)]
    cells = []
    for f in files:
        c = cell(f, nseg=1 if rng.random() < 0.5 else 3)
        c.insert("hh")
        cells.append(c)
    return cells


def wire(sim, cells, rng, *, min_delay=1.0):
    """Synapses (ExpSyn and Exp2Syn), NetCons from every soma to three others' synapses
    (delays in [min_delay, min_delay + 4] ms), two NetStims and a VecStim driving them, one
    SEClamp, and recordings; returns the recording keys and the spike keys."""
    n = len(cells)
    synapses = []
    for k, c in enumerate(cells):
        kind = "ExpSyn" if k % 2 else "Exp2Syn"
        params = {"tau": 2.0} if kind == "ExpSyn" else {"tau1": 0.5, "tau2": 4.0}
        synapses.append(c.place(kind, "soma[0](0.5)", **params))
    cells[0].place("SEClamp", "soma[0](0.5)", dur1=3.0, amp1=-50.0, dur2=2.0, amp2=20.0,
                   rs=1.0)
    for k in range(n):
        for j in rng.choice(n, size=3, replace=False):
            if j == k:
                continue
            sim.connect((k, "soma[0](0.5)"), synapses[j], weight=float(rng.uniform(0.01, 0.05)),
                        delay=float(min_delay + rng.uniform(0, 4)))
    s1 = sim.net_stim(start=2.0, interval=5.0, number=8)
    s2 = sim.net_stim(start=1.0, interval=3.3, number=20)
    s3 = sim.vec_stim(np.sort(rng.uniform(0, 60, size=10)))
    for s, w in ((s1, 0.08), (s2, 0.06), (s3, 0.1)):
        for j in rng.choice(n, size=4, replace=False):
            sim.connect(s, synapses[j], weight=w, delay=float(rng.uniform(0.1, 2.0)))
    keys = [sim.record("v", cell=k) for k in range(n)]
    keys.append(sim.record("g", target=synapses[1]))
    keys.append(sim.record("i", target=synapses[2]))
    keys.append(sim.record("ina", cell=3, every=4))
    spikes = [sim.record_spikes(sim.spike_source(k)) for k in range(n)]
    return keys, spikes


def compare(a, b, keys, spikes) -> tuple[float, bool]:
    """Largest |difference| over the recorded traces, and whether every spike train is
    identical."""
    worst = 0.0
    for k in keys:
        assert a.traces[k].shape == b.traces[k].shape, k
        assert np.isfinite(b.traces[k]).all(), f"{k}: unwritten or non-finite samples"
        worst = max(worst, float(np.max(np.abs(a.traces[k] - b.traces[k]))))
    same = all(np.array_equal(a.spikes[k], b.spikes[k]) for k in spikes)
    return worst, same


def weight_vector_run(backend, *, number, dur, tstop, **options):
    """Three one-compartment hh cells (ko20x-07): cell 0, clamped for ``dur`` ms, drives
    fdsyn on cell 1 (per-NetCon state that NET_RECEIVE's INITIAL sets); a NetStim of
    ``number`` spikes drives fdsyn and countsyn on cell 2 (a weight-vector entry without
    INITIAL). The caller loads tests/data/nmodl fdsyn.mod and countsyn.mod. Returns
    ``(results, keys, spike keys, weight vectors)``: keys v of each cell then fdsyn's g,
    the NetCons' weight vectors after the run."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cells = [hb.Cell(REAL / "ko20x-07.CNG.swc", nseg=1).insert("hh") for _ in range(3)]
    cells[0].place("IClamp", "soma[0](0.5)", delay=1.0, dur=dur, amp=0.8)
    sim = hb.Simulation(cells, backend=backend, **options)
    fd = cells[1].place("fdsyn", "soma[0](0.5)")
    count = cells[2].place("countsyn", "soma[0](0.5)")
    ns = sim.net_stim(start=1.0, interval=2.0, number=number)
    sim.connect((0, "soma[0](0.5)"), fd, weight=0.05, delay=1.0)
    sim.connect(ns, fd, weight=0.02, delay=0.5)
    sim.connect(ns, count, weight=(0.01, 3.0), delay=0.5)
    keys = [sim.record("v", cell=k) for k in range(3)] + [sim.record("g", target=fd)]
    spikes = [sim.record_spikes(sim.spike_source(k)) for k in range(3)]
    res = sim.run(tstop)
    return res, keys, spikes, [sim._netcon_table.weight_vector(i).copy() for i in range(3)]
