"""NMODL POINTERs against NEURON: the same files compiled by ``nrnivmodl``, the POINTERs
set with ``h.setpointer``.

Files (``tests/data/nmodl``, written for these tests): ``ptgap`` (a gap junction half,
``i = g*(v - vgap)``), ``ptdgap`` (the same per area, a density mechanism), ``ptrel`` (a
transmitter concentration ``T`` following the local voltage, cnexp) and ``ptsyn`` (a
synapse reading ``C`` in INITIAL, the BREAKPOINT, a FUNCTION and its cnexp state), and a
copy of ``ptsyn`` named ``ptasyn``, which comes before ``ptrel`` in the type order (both
simulators number a folder's files in name order): it reads the ``T`` of the step before,
``ptsyn`` the ``T`` that ``ptrel``'s state update of the step just wrote.

Protocol: two one-compartment somas (L = diam = 20 µm) with hh; a current clamp on cell 0
(del 1 ms, dur 20 ms, 0.3 nA), a weaker one on cell 1 (del 8 ms, dur 10 ms, 0.05 nA);
a gap junction pair (``ptgap`` on each, each reading the other's v), ``ptdgap`` on cell 1
reading cell 0's v, ``ptrel`` on cell 0, ``ptsyn`` and ``ptasyn`` on cell 1 reading its
``T``;
dt 0.025 ms, 40 ms; serial and multicore. Then each file alone under the standard protocol
of ``nmodl_compare`` (a partner cell the POINTER reads). Acceptance: max |ΔV| <= 1e-9 mV
at every step (explicit methods), the synapse's R the same, identical spike times.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import warnings

import nmodl_compare as nc
import numpy as np
import pytest

pytestmark = [pytest.mark.neuron,
              pytest.mark.filterwarnings("ignore::UserWarning")]

TOLERANCE_MV = 1e-9
FILES = ("ptgap.mod", "ptdgap.mod", "ptrel.mod", "ptsyn.mod")

_CHILD = r"""
import json, sys
import numpy as np
from neuron import h
spec = json.loads(sys.argv[1])
h.nrn_load_dll(spec["lib"])
from hinesbatch.bench.neuron_models import build_cell
h_, secs = build_cell(spec["swc"], ra=35.4, cm=1.0, nseg=1)
soma0 = secs["soma[0]"]
soma1 = h.Section(name="cell1")
for i in range(soma0.n3d()):
    h.pt3dadd(soma0.x3d(i), soma0.y3d(i), soma0.z3d(i), soma0.diam3d(i), sec=soma1)
soma1.Ra, soma1.cm, soma1.nseg = 35.4, 1.0, 1
somas = [soma0, soma1]
keep = []
for sec, (delay, dur, amp) in zip(somas, spec["clamps"]):
    sec.insert("hh")
    stim = h.IClamp(sec(0.5))
    stim.delay, stim.dur, stim.amp = delay, dur, amp
    keep.append(stim)
g0, g1 = h.ptgap(soma0(0.5)), h.ptgap(soma1(0.5))
g0.g = g1.g = spec["g_gap"]
h.setpointer(soma1(0.5)._ref_v, "vgap", g0)
h.setpointer(soma0(0.5)._ref_v, "vgap", g1)
soma1.insert("ptdgap")
h.setpointer(soma0(0.5)._ref_v, "vgap", soma1(0.5).ptdgap)
soma0.insert("ptrel")
syn = h.ptsyn(soma1(0.5))
syn.gmax = spec["gmax"]
h.setpointer(soma0(0.5).ptrel._ref_T, "C", syn)
early = h.ptasyn(soma1(0.5))
early.gmax = spec["gmax"]
h.setpointer(soma0(0.5).ptrel._ref_T, "C", early)
vecs = [h.Vector().record(s(0.5)._ref_v) for s in somas] + [
    h.Vector().record(syn._ref_R), h.Vector().record(early._ref_R)]
spikes = []
for s in somas:
    nc = h.NetCon(s(0.5)._ref_v, None, sec=s)
    nc.threshold = 10.0
    t = h.Vector()
    nc.record(t)
    keep += [nc]
    spikes.append(t)
h.dt, h.celsius = spec["dt"], 6.3
h.steps_per_ms = 1.0 / spec["dt"]
h.finitialize(-65.0)
h.continuerun(spec["tstop"])
np.save(spec["out"], np.array([np.array(v) for v in vecs]))
json.dump([list(t) for t in spikes], open(spec["out"] + ".json", "w"))
"""

SPEC = {"clamps": [[1.0, 20.0, 0.3], [8.0, 10.0, 0.05]], "g_gap": 0.004, "gmax": 0.02,
        "dt": 0.025, "tstop": 40.0}


compiled = nc.compiled_fixture(FILES, prepare=lambda folder: nc.renamed(
    nc.DATA_NMODL / "ptsyn.mod", "ptsyn", "ptasyn", folder / "ptasyn.mod"))


def _neuron(lib, swc) -> tuple:
    with tempfile.TemporaryDirectory() as tmp:
        spec = dict(SPEC, lib=lib, swc=swc, out=os.path.join(tmp, "v.npy"))
        env = dict(os.environ, PYTHONPATH=str(nc.ROOT / "src"))
        proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(spec)], env=env,
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"NEURON run failed:\n{proc.stderr[-3000:]}")
        traces = np.load(spec["out"])
        with open(spec["out"] + ".json") as f:
            spikes = json.load(f)
    return traces, spikes


def _hinesbatch(swc, backend) -> tuple:
    import hinesbatch as hb

    cells = []
    for delay, dur, amp in SPEC["clamps"]:
        cell = hb.Cell(swc, nseg=1, ra=35.4, cm=1.0).insert("hh")
        cell.place("IClamp", "soma[0](0.5)", delay=delay, dur=dur, amp=amp)
        cells.append(cell)
    g0 = cells[0].place("ptgap", "soma[0](0.5)", g=SPEC["g_gap"])
    g1 = cells[1].place("ptgap", "soma[0](0.5)", g=SPEC["g_gap"])
    cells[1].insert("ptdgap")
    cells[0].insert("ptrel")
    syn = cells[1].place("ptsyn", "soma[0](0.5)", gmax=SPEC["gmax"])
    early = cells[1].place("ptasyn", "soma[0](0.5)", gmax=SPEC["gmax"])
    sim = hb.Simulation(cells, dt=SPEC["dt"], backend=backend)
    sim.set_pointer(g0, "vgap", "v", cell=1)
    sim.set_pointer(g1, "vgap", "v", cell=0)
    sim.set_pointer((1, "soma[0](0.5)", "ptdgap"), "vgap", "v", cell=0)
    sim.set_pointer(syn, "C", "T_ptrel", cell=0)
    sim.set_pointer(early, "C", "T_ptrel", cell=0)
    keys = [sim.record("v", cell=0), sim.record("v", cell=1), sim.record("R", target=syn),
            sim.record("R", target=early)]
    spikes = [sim.record_spikes(sim.spike_source(k, "soma[0](0.5)", 10.0)) for k in (0, 1)]
    res = sim.run(SPEC["tstop"])
    return np.array([res[k] for k in keys]), [res.spikes[k].tolist() for k in spikes]


@pytest.mark.parametrize("backend", ["serial", "multicore"])
def test_gap_junction_pair_and_transmitter_pointer_match_neuron(compiled, tmp_path, backend):
    lib = compiled.lib
    swc = nc.one_point_soma(tmp_path)
    ref, ref_spikes = _neuron(lib, swc)
    got, got_spikes = _hinesbatch(swc, backend)
    assert ref.shape == got.shape
    assert np.max(np.abs(ref - got)) <= TOLERANCE_MV
    assert len(ref_spikes[1]) >= 1 and len(ref_spikes[0]) >= 2   # the pair interacts
    assert got_spikes == ref_spikes
    assert np.max(ref[2]) > 0.1          # the synapse opened: it read T through C
    assert np.max(np.abs(ref[2] - ref[3])) > 1e-6   # the type order shows


@pytest.mark.parametrize("name", ["ptgap", "ptdgap", "ptsyn"])
def test_each_pointer_file_under_the_standard_protocol(compiled, tmp_path, name):
    """The partner protocol of nmodl_compare: the file's POINTER reads a second cell."""
    import hinesbatch as hb

    lib, folder = compiled.lib, compiled.folder
    swc = nc.one_point_soma(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = nc.standard_model(hb.mechanisms.get(name), swc, folder / f"{name}.mod")
    assert model["pointer"] and model["partner"]
    dv, ref = nc.compare(model, lib)
    assert dv <= TOLERANCE_MV
    assert np.isfinite(ref).all()


def test_the_standard_protocol_sees_the_pointer(compiled, tmp_path):
    """The partner's drive reaches the traces through the POINTER: without its clamp
    NEURON's trace of the gap junction's cell changes."""
    import hinesbatch as hb

    lib, folder = compiled.lib, compiled.folder
    swc = nc.one_point_soma(tmp_path)
    model = nc.standard_model(hb.mechanisms.get("ptgap"), swc, folder / "ptgap.mod")
    driven = nc.run_neuron(model, lib)
    quiet = nc.run_neuron(dict(model, partner=[3.0, 20.0, 0.0]), lib)
    assert np.max(np.abs(driven - quiet)) > 1e-3


def test_density_pointers_on_every_segment_of_a_real_cell(compiled):
    """ptdgap in every segment of ko20x-07 (d_lambda 0.1), each instance's POINTER set to
    the partner soma's v (NEURON: ``h.setpointer`` per segment), hh everywhere."""
    import hinesbatch as hb

    lib, folder = compiled.lib, compiled.folder
    swc = str(nc.ROOT / "tests" / "data" / "morphologies" / "real" / "ko20x-07.CNG.swc")
    model = nc.standard_model(hb.mechanisms.get("ptdgap"), swc, folder / "ptdgap.mod")
    model.update(d_lambda=0.1, nseg=None, record=[["soma[0]", 0.5], ["dend[3]", 0.5]])
    dv, ref = nc.compare(model, lib)
    assert dv <= TOLERANCE_MV
    assert np.isfinite(ref).all()
