"""Mechanisms translated from NMODL files on a CUDA device against the serial CPU engine.

The files are NEURON's own (the wheel's ``share/nrn/demo/release``, ``share/modfile``) and
``tests/data/nmodl``: ion concentrations read, calcium written from the summed ica and read
back (kept per node), TABLEs that depend on ``dt`` or write a GLOBAL, a NET_RECEIVE synapse,
NET_RECEIVE with weight vectors. float64: traces within 1e-6 mV and identical spike times, recordings
poisoned with NaN on the device before each run (``gpu_engine_cases.compare``). Needs
``neuron`` for ``neuron.nmodl`` (``scripts/gpu-check`` installs it from ``.whl/``).
"""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from gpu_engine_cases import compare, weight_vector_run
from nmodl_files import artificial_pair

import hinesbatch as hb
from hinesbatch import mechanisms

neuron = pytest.importorskip("neuron", reason="NMODL files are read with neuron.nmodl")

pytestmark = pytest.mark.gpu

FP64_MV = 1e-6
SHARE = Path(neuron.__file__).parent / ".data" / "share"
DATA = Path(__file__).parents[1] / "data"
SWC = DATA / "morphologies" / "real"
#: calcium kept per node: written from the summed ica, read as eca, cai and ica
CALCIUM = ("caeca.mod", "caacc.mod", "kcai.mod", "icaread.mod", "cacum.mod")


@pytest.fixture(scope="module")
def translated():
    """NEURON's demo channels, syn1, kdt, the calcium files, the wheel's hh.mod and
    expsyn.mod (replacing the built-ins); the registry is restored afterwards."""
    before = set(mechanisms._REGISTERED)
    with warnings.catch_warnings():     # the notices about files that do not translate
        warnings.simplefilter("ignore")
        names = hb.load_mechanisms(SHARE / "nrn" / "demo" / "release", strict=False)
    for f in ("syn1.mod", "kdt.mod") + CALCIUM:
        names += hb.load_mechanisms(DATA / "nmodl" / f)
    for f in ("hh.mod", "expsyn.mod"):
        names += hb.load_mechanisms(SHARE / "modfile" / f, replace=True)
    yield names
    for name in set(mechanisms._REGISTERED) - before:
        mechanisms.unregister(name)
    for name in before:
        mechanisms.unregister(name)


def _run(backend, channels, seed, tables, precision="float64", amp=(0.5, 1.5)):
    """Four real cells with hh and ``channels`` (name -> parameters; in every section of
    cells 0 and 2, in the soma of 1 and 3), a clamp, syn1 and an ExpSyn driven by cell 0."""
    rng = np.random.default_rng(seed)
    files = ("ko20x-07.CNG.swc", "c91662.swc", "tc200.CNG.swc", "ko20x-07.CNG.swc")
    if not isinstance(channels, dict):
        channels = {name: {} for name in channels}
    cells = []
    for k, f in enumerate(files):
        c = hb.Cell(SWC / f, nseg=1 + k % 2)
        c.insert("hh")
        for name, params in channels.items():
            c.insert(name, region="soma" if k % 2 else "all", **params)
        c.place("IClamp", "soma[0](0.5)", delay=1.0, dur=30.0, amp=float(rng.uniform(*amp)))
        cells.append(c)
    kw = {"precision": precision} if backend == "gpu" else {}
    sim = hb.Simulation(cells, backend=backend, tables=tables, **kw)
    syn = cells[3].place("syn1", "soma[0](0.5)", onset=5.0, tau=1.0, gmax=0.01)
    exp = cells[2].place("ExpSyn", "soma[0](0.5)", tau=2.0)
    sim.connect((0, "soma[0](0.5)"), exp, weight=0.02, delay=1.5)
    keys = [sim.record("v", cell=k) for k in range(len(cells))]
    keys += [sim.record("i", target=syn), sim.record("g", target=exp)]
    spikes = [sim.record_spikes(sim.spike_source(k)) for k in range(len(cells))]
    return sim.run(40.0), keys, spikes


@pytest.mark.parametrize("tables", [True, False])
def test_translated_mechanisms_fp64(translated, seed, tables):
    calcium = {Path(f).stem for f in CALCIUM}
    channels = [n for n in translated if mechanisms.get(n).kind == "density"
                and n != "hh" and n not in calcium]
    assert {"HHk", "HHna", "cachan1", "capump", "kdt"} <= set(channels), translated
    a, keys, spikes = _run("serial", channels, seed, tables)
    b, _, _ = _run("gpu", channels, seed, tables)
    worst, same = compare(a, b, keys, spikes)
    assert sum(a.spikes[k].size for k in spikes) >= 4
    assert worst <= FP64_MV and same, (worst, same)


@pytest.mark.parametrize("tables", [True, False])
def test_calcium_kept_per_node_fp64(translated, seed, tables):
    """caacc (cnexp) and NEURON's cacum (derivimplicit) integrate cai from the ica that
    caeca and cachan1 write, summed per node; caeca reads eca (recomputed every step), kcai
    cai, icaread the ica summed so far."""
    channels = {"caeca": {}, "cachan1": {"imax": 0.05}, "icaread": {}, "kcai": {"gbar": 0.0005},
                "caacc": {}, "cacum": {"depth": 10.0}}
    a, keys, spikes = _run("serial", channels, seed, tables, amp=(1.5, 2.5))
    b, _, _ = _run("gpu", channels, seed, tables, amp=(1.5, 2.5))
    worst, same = compare(a, b, keys, spikes)
    assert sum(a.spikes[k].size for k in spikes) >= 4
    assert worst <= FP64_MV and same, (worst, same)


@pytest.mark.parametrize("name", ["kbg", "kcg"])
def test_newton_solves_fp64(translated, seed, name):
    """A nonlinear KINETIC scheme by sparse (with STEADYSTATE) and derivimplicit of coupled
    equations: the unrolled Newton passes on the device give the CPU's traces within 1e-6 mV
    and its spike times."""
    hb.load_mechanisms(DATA / "nmodl" / f"{name}.mod")
    try:
        a, keys, spikes = _run("serial", {name: {}}, seed, True)
        b, _, _ = _run("gpu", {name: {}}, seed, True)
    finally:
        mechanisms.unregister(name)
    worst, same = compare(a, b, keys, spikes)
    assert sum(a.spikes[k].size for k in spikes) >= 4
    assert worst <= FP64_MV and same, (worst, same)



def test_weight_vectors_fp64(translated, seed):
    """NET_RECEIVE with weight vectors on the device (tests/data/nmodl fdsyn: per-NetCon
    state set by NET_RECEIVE's INITIAL; countsyn: an entry without one), driven by cell 0's
    spikes and a NetStim: the CPU's traces within 1e-6 mV, its spike times, and the same
    weight vectors back on the NetCons."""
    for f in ("fdsyn", "countsyn"):
        hb.load_mechanisms(DATA / "nmodl" / f"{f}.mod")
    try:
        runs = {b: weight_vector_run(b, number=12, dur=30.0, tstop=40.0)
                for b in ("serial", "gpu")}
    finally:
        for f in ("fdsyn", "countsyn"):
            mechanisms.unregister(f)
    (a, keys, spikes, wa), (b, _, _, wb) = runs["serial"], runs["gpu"]
    worst, same = compare(a, b, keys, spikes)
    assert sum(a.spikes[k].size for k in spikes) >= 2 and wa[2][1] == 12.0
    assert worst <= FP64_MV and same, (worst, same)
    for x, y in zip(wa, wb):
        np.testing.assert_allclose(y, x, rtol=1e-12, atol=1e-12)


def test_artificial_cells_fp64(translated):
    """Artificial cells (tests/data/nmodl artstim, with exprand draws, and artlif) run on
    the host queue beside the device's cells: an artstim onto cell 0's ExpSyn and into an
    artlif, the artlif onto cell 1's, cell 0's spikes stopping the artstim. The CPU's
    traces within 1e-6 mV and its spike times, the same draws taken."""
    names = hb.load_mechanisms(DATA / "nmodl" / "artstim.mod")
    names += hb.load_mechanisms(DATA / "nmodl" / "artlif.mod")

    def run(backend):
        cells = [hb.Cell(SWC / "ko20x-07.CNG.swc", nseg=1).insert("hh") for _ in range(2)]
        syns = [c.place("ExpSyn", "soma[0](0.5)") for c in cells]
        sim = hb.Simulation(cells, backend=backend)
        a, lif = artificial_pair(sim, syns, number=15, weights=(0.05, 0.05))
        spikes = [sim.record_spikes(x) for x in (a, lif, sim.spike_source(0),
                                                 sim.spike_source(1))]
        keys = [sim.record("v", cell=k) for k in range(2)]
        return sim.run(30.0), keys, spikes, sim.random_state

    try:
        (a, keys, spikes, ra), (b, _, _, rb) = run("serial"), run("gpu")
    finally:
        for n in names:
            mechanisms.unregister(n)
    worst, same = compare(a, b, keys, spikes)
    assert a.spikes[spikes[0]].size >= 3 and a.spikes[spikes[1]].size >= 1
    assert worst <= FP64_MV and same, (worst, same)
    assert ra == rb != 1
