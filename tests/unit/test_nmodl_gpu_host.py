"""Mechanisms translated from NMODL files on the GPU engine: its kernel built as host C++
(``HINESBATCH_GPU_EMULATION``) gives the serial CPU engine's numbers bit for bit, and the
generated CUDA compiles with nvcc for sm_90. Files: NEURON's own (the wheel's
``share/modfile`` and ``share/nrn/demo/release``, whose release.mod is a KINETIC scheme, and
``tests/data/nmodl``), and files written here (a nonlinear KINETIC scheme, coupled
derivimplicit)."""
from __future__ import annotations

import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest

neuron = pytest.importorskip("neuron", reason="NMODL files are read with neuron.nmodl")

from gpu_engine_cases import weight_vector_run  # noqa: E402

import hinesbatch as hb  # noqa: E402
from hinesbatch import mechanisms  # noqa: E402
from hinesbatch.engine.gpu.devices import EMULATION_ENV  # noqa: E402
from hinesbatch.engine.gpu.source import field_roles, kernel_source  # noqa: E402

DATA = Path(neuron.__file__).parent / ".data" / "share"
DEMO = DATA / "nrn" / "demo" / "release"
MODFILES = DATA / "modfile"
HERE = Path(__file__).parents[1] / "data"
SWC = HERE / "morphologies" / "real" / "ko20x-07.CNG.swc"
NVCC = shutil.which("nvcc")

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="the host build of the GPU kernel needs g++")


@pytest.fixture(autouse=True)
def translated(monkeypatch):
    """NEURON's demo channels, syn1 and the wheel's hh.mod, expsyn.mod (replacing the
    built-ins); the registry is restored afterwards."""
    monkeypatch.setenv(EMULATION_ENV, "2")
    before = set(mechanisms._REGISTERED)
    with warnings.catch_warnings():     # the notices about files that do not translate
        warnings.simplefilter("ignore")
        names = hb.load_mechanisms(DEMO, strict=False)
    names += hb.load_mechanisms(HERE / "nmodl" / "syn1.mod")
    for f in ("hh.mod", "expsyn.mod"):
        names += hb.load_mechanisms(MODFILES / f, replace=True)
    yield names
    for name in set(mechanisms._REGISTERED) - before:
        mechanisms.unregister(name)
    for name in before:
        mechanisms.unregister(name)


def _model(backend, channels, seed):
    rng = np.random.default_rng(seed)
    cells = []
    for k in range(4):
        c = hb.Cell(SWC, nseg=1 + k % 2)
        c.insert("hh")
        for name in channels:
            c.insert(name)
        c.place("IClamp", "soma[0](0.5)", delay=1.0, dur=3.0, amp=float(rng.uniform(0.3, 1)))
        cells.append(c)
    sim = hb.Simulation(cells, backend=backend, devices=2 if backend == "gpu" else None)
    syn = cells[3].place("syn1", "soma[0](0.5)", onset=5.0, tau=1.0, gmax=0.01)
    exp = cells[2].place("ExpSyn", "soma[0](0.5)", tau=2.0)
    sim.connect((0, "soma[0](0.5)"), exp, weight=0.02, delay=1.5)
    keys = [sim.record("v", cell=k) for k in range(4)]
    keys += [sim.record("i", target=syn), sim.record("g", target=exp)]
    spikes = [sim.record_spikes(sim.spike_source(k)) for k in range(4)]
    return sim.run(25.0), keys, spikes


def test_translated_mechanisms_on_the_gpu_engine_equal_serial(translated, seed):
    channels = [n for n in translated if mechanisms.get(n).kind == "density"
                and n not in ("hh",)]
    assert {"HHk", "HHna", "cachan1", "capump"} <= set(channels), translated  # cai readers
    a, keys, spikes = _model("serial", channels, seed)
    b, _, _ = _model("gpu", channels, seed)
    for k in keys:
        assert np.array_equal(a.traces[k], b.traces[k]), k
    for k in spikes:
        assert np.array_equal(a.spikes[k], b.spikes[k]), k
    assert sum(a.spikes[k].size for k in spikes) > 0


@pytest.mark.nvcc
@pytest.mark.skipif(NVCC is None, reason="nvcc is not on the PATH")
@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_translated_mechanisms_compile_for_sm90(translated, precision, tmp_path):
    mechs = sorted((mechanisms.get(n) for n in translated), key=lambda m: m.order)
    roles = {m.name: field_roles(m, np.array([[f.default] * 2 for f in m.fields])
                                 .reshape(len(m.fields), 2), True) for m in mechs}
    src = tmp_path / "engine.cu"
    src.write_text(kernel_source(mechs, roles, precision=precision, tables=True, dt=0.025,
                                 celsius=6.3, block_threads=128))
    fmad = ["--fmad=false"] if precision == "float64" else []
    out = subprocess.run([NVCC, "-arch=sm_90", "-std=c++17", *fmad, "-c", str(src), "-o",
                          str(tmp_path / "engine.o")], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr


#: a TABLE that depends on dt (also compared with NEURON in tests/validation)
DT_TABLE = (HERE / "nmodl" / "kdt.mod").read_text()

SIDE_GLOBAL = """
NEURON { SUFFIX kq USEION k READ ek WRITE ik GLOBAL tadj }
PARAMETER { gbar = 0.02 (S/cm2) }
ASSIGNED { v (mV) ek (mV) ik (mA/cm2) ninf tadj celsius (degC) }
STATE { n }
INITIAL { tab(v) n = ninf }
BREAKPOINT {
    SOLVE states METHOD cnexp
    ik = tadj*gbar*n*n*(v - ek)
}
DERIVATIVE states { tab(v) n' = (ninf - n)*tadj/3 }
PROCEDURE tab(v (mV)) {
    TABLE ninf DEPEND celsius FROM -100 TO 100 WITH 100
    tadj = 2^((celsius - 16)/10)
    ninf = 1/(1 + exp(-(v + 40)/7))
}
"""


@pytest.mark.parametrize("tables", [True, False])
@pytest.mark.parametrize("name, text", [("kdt", DT_TABLE), ("kq", SIDE_GLOBAL)])
def test_tables_of_dt_and_side_globals_on_the_gpu_engine_equal_serial(translated, name, text,
                                                                    tables, tmp_path):
    """A TABLE procedure that reads dt (its exact form and its table builder take dt), and
    one that also writes a GLOBAL (its value from the table's construction)."""
    path = tmp_path / f"{name}.mod"
    path.write_text(text)
    hb.load_mechanisms(path)
    traces = [_soma_run(name, backend, tables=tables)[0] for backend in ("serial", "gpu")]
    assert np.array_equal(traces[0], traces[1]) and traces[0].max() > 0.0


def _soma_run(name, backend, *fields, **sim_kw):
    """hh and mechanism ``name`` in the soma of a real cell with a clamp, 15 ms: v and the
    mechanism's ``fields`` recorded there."""
    c = hb.Cell(SWC, nseg=1)
    c.insert("hh")
    c.insert(name, region="soma")
    c.place("IClamp", "soma[0](0.5)", delay=1.0, dur=10.0, amp=0.5)
    sim = hb.Simulation(c, backend=backend, **sim_kw)
    keys = [sim.record("v")] + [sim.record(f"{f}_{name}") for f in fields]
    res = sim.run(15.0)
    return [np.asarray(res[k]) for k in keys]


CALCIUM = ("caeca.mod", "caacc.mod", "kcai.mod", "icaread.mod", "cacum.mod")


@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_calcium_kept_per_node_on_the_gpu_engine_equals_serial(translated, precision):
    """Calcium written by caacc (cnexp) and cacum (derivimplicit) from the ica summed over
    mechanisms, read back as eca, cai and ica, on three cells split over two emulated
    devices: the host build gives the serial engine's bits (float64), and in float32 its
    ion arrays and instance copies stay finite and close."""
    for f in CALCIUM:
        hb.load_mechanisms(HERE / "nmodl" / f)
    runs = {}
    for backend in ("serial", "gpu"):
        cells = []
        for k in range(3):
            c = hb.Cell(SWC, nseg=1 + k % 2)
            c.insert("hh")
            for name in ("caeca", "caacc", "icaread"):
                c.insert(name)
            c.insert("kcai", region="soma")
            if k == 1:
                c.insert("cacum", region="dend")
                c.insert("cachan1")
            c.place("IClamp", "soma[0](0.5)", delay=1.0, dur=20.0, amp=1.0 + 0.5 * k)
            cells.append(c)
        kw = {"precision": precision, "devices": 2} if backend == "gpu" else {}
        sim = hb.Simulation(cells, backend=backend, **kw)
        keys = [sim.record("v", cell=k) for k in range(3)]
        keys += [sim.record("cai_caacc", cell=0, location="soma[0](0.5)"),
                 sim.record("eca_caeca", cell=1, location="soma[0](0.5)")]
        runs[backend] = (sim.run(25.0), keys, sim._ions["ca"].copy())
    (a, keys, ions_a), (b, _, ions_b) = runs["serial"], runs["gpu"]
    assert a[keys[0]].max() > 0.0 and a[keys[3]].max() > 2 * a[keys[3]][0]
    for k in keys:
        if precision == "float64":
            assert np.array_equal(a[k], b[k]), k
        else:
            assert np.all(np.isfinite(b[k])), k
    if precision == "float64":
        assert np.array_equal(ions_a, ions_b)
    np.testing.assert_allclose(b[keys[3]], a[keys[3]], rtol=0.05, atol=1e-6)


#: tests/data/nmodl: a nonlinear KINETIC scheme (Newton passes, CONSERVE, COMPARTMENT, a
#: flux, the nonlinear STEADYSTATE) and derivimplicit of coupled equations (NEURON's Newton
#: iteration): the generated code's guarded passes on the GPU engine
NEWTON = ("kbg", "kcg")


@pytest.mark.parametrize("name", NEWTON)
def test_newton_solves_on_the_gpu_engine_equal_serial(translated, name):
    hb.load_mechanisms(HERE / "nmodl" / f"{name}.mod")
    state = "XB" if name == "kbg" else "m"
    traces = [_soma_run(name, backend, state) for backend in ("serial", "gpu")]
    assert all(np.array_equal(a, b) for a, b in zip(*traces))
    assert traces[0][0].max() > 0.0 and np.ptp(traces[0][1]) > 0.0


def test_loops_and_writing_functions_on_the_gpu_engine_equal_serial(translated):
    """tests/data/nmodl: kloop (a FROM loop whose bound is a PARAMETER, set per region, and
    a FUNCTION that writes a RANGE variable, used as a value), pulses (a WHILE loop in
    BREAKPOINT), vring (array elements indexed by values known only during the run) and
    gdiam (the segment's diam): the generated ``while`` loops, element selections and the
    diameters the engine sets, on the GPU engine."""
    for name in ("kloop", "pulses", "vring", "gdiam"):
        hb.load_mechanisms(HERE / "nmodl" / f"{name}.mod")

    def run(backend):
        c = hb.Cell(SWC, nseg=1)
        c.insert("hh")
        c.insert("kloop", npow=4)
        c.set("npow_kloop", 2, region="dend")
        c.insert("vring", region="soma", nav=7, g=0.0002)
        c.insert("gdiam", region="dend", g0=0.0001)
        p = c.place("pulses", "soma[0](0.5)", period=6.0, amp=1.5)
        sim = hb.Simulation(c, backend=backend)
        keys = [sim.record("v"), sim.record("v", location="dend[0](0.5)"),
                sim.record("ntau_kloop"), sim.record("cycles", target=p),
                sim.record("vavg_vring"), sim.record("g_gdiam", location="dend[0](0.5)")]
        res = sim.run(15.0)
        return [np.asarray(res[k]) for k in keys]

    serial, gpu = run("serial"), run("gpu")
    assert all(np.array_equal(a, b) for a, b in zip(serial, gpu))
    assert serial[0].max() > 0.0 and serial[3].max() == 2.0 and np.ptp(serial[2]) > 0.0
    assert np.ptp(serial[4]) > 10.0 and serial[5][0] > 0.0


@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_weight_vectors_on_the_gpu_engine_equal_serial(translated, precision):
    """NET_RECEIVE with weight vectors (tests/data/nmodl fdsyn: per-NetCon state set by
    NET_RECEIVE's INITIAL; countsyn: an entry without one) on three cells over two
    emulated devices, driven by a cell's spikes and a NetStim: the host build gives the
    serial engine's bits (float64) and its weight vectors come back to the NetCons."""
    for f in ("fdsyn", "countsyn"):
        hb.load_mechanisms(HERE / "nmodl" / f"{f}.mod")
    runs = {b: weight_vector_run(b, number=8, dur=20.0, tstop=30.0,
                                 **({"precision": precision, "devices": 2}
                                    if b == "gpu" else {}))
            for b in ("serial", "gpu")}
    (a, keys, _, wa), (b, _, _, wb) = runs["serial"], runs["gpu"]
    assert a[keys[1]].max() > 0.0 and wa[2].tolist() == [0.01, 8.0]
    assert wa[0][3] > 0.0 and wa[1][3] > wa[0][3]     # both NetCons of fdsyn delivered
    if precision == "float64":
        assert all(np.array_equal(a[k], b[k]) for k in keys)
        assert all(np.array_equal(x, y) for x, y in zip(wa, wb))
    else:           # float32 moves the spikes a little; the NetStim's NetCons stay close
        assert all(np.isfinite(b[k]).all() for k in keys)
        assert wb[2].tolist() == [0.01, 8.0]
        np.testing.assert_allclose(wb[1], wa[1], rtol=1e-4)


#: FUNCTION tables (three in one mechanism, one depending on a fixed PARAMETER), a
#: tabulated procedure writing RANGE variables besides its outputs, FUNCTIONs writing one
#: before using it, a STATE set from a table, a table reading a value INITIAL computes
#: (built twice with the DEPEND, once without) (tests/data/nmodl, also compared with
#: NEURON in tests/validation)
TABLE_FILES = ("cafun", "ktcorr", "kfside", "nastate", "kinit", "kinitr")


@pytest.mark.parametrize("tables", [True, False])
@pytest.mark.parametrize("name", TABLE_FILES)
def test_function_tables_and_side_writes_on_the_gpu_engine_equal_serial(translated, name,
                                                                        tables):
    """Everywhere on a real cell, so that the first instance (which a table's side writes
    reach) and the others differ; v at the soma and at a dendrite."""
    hb.load_mechanisms(HERE / "nmodl" / f"{name}.mod")
    traces = []
    for backend in ("serial", "gpu"):
        c = hb.Cell(SWC, nseg=1)
        c.insert("hh")
        c.insert(name, gbar=0.001)
        c.place("IClamp", "soma[0](0.5)", delay=1.0, dur=10.0, amp=0.5)
        sim = hb.Simulation(c, backend=backend, tables=tables)
        keys = [sim.record("v"), sim.record("v", location="dend[0](0.5)")]
        res = sim.run(15.0)
        traces.append(np.array([res[k] for k in keys]))
    assert np.array_equal(traces[0], traces[1]) and traces[0][0].max() > 0.0
