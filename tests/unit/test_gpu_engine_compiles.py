"""The GPU engine's kernel, generated per model, compiles for a GPU without one (``nvcc``
for sm_90, the options the engine gives NVRTC): the built-in mechanisms in both precisions
and TABLE modes, a network's synapses, clamps and spike sources, and NMODL files translated
(NEURON's demo channels, calcium written and read per node, Newton solves, weight vectors).

The source is the one the runner writes for the model: built on the emulated device of the
host build (``HINESBATCH_GPU_EMULATION``), which generates the same text. Whether the
compiled kernels compute the CPU's answers is ``tests/gpu``'s business on a GPU.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest
from gpu_engine_cases import REAL, clamped_cells, network, wire

import hinesbatch as hb
from hinesbatch import mechanisms
from hinesbatch.engine.gpu.devices import EMULATION_ENV, HostDevice, compile_options

NVCC = shutil.which("nvcc")
pytestmark = [pytest.mark.nvcc, pytest.mark.skipif(NVCC is None, reason="nvcc is not on the PATH")]

DATA = Path(__file__).parents[1] / "data" / "nmodl"
#: Calcium written from the summed ica and read back (kept per node), as in tests/gpu.
CALCIUM = ("caeca", "caacc", "kcai", "icaread", "cacum")


@pytest.fixture(autouse=True)
def emulated(monkeypatch):
    monkeypatch.setenv(EMULATION_ENV, "1")


def _assert_compiles(sim, tmp_path, precision="float64") -> None:
    sim.run(sim.dt)                     # the runner writes its kernel's source
    source = tmp_path / "hb_epoch.cu"
    source.write_text(sim._gpu.source)
    out = subprocess.run([NVCC, "-arch=sm_90", "-c", *compile_options(precision), "-Xptxas",
                          "-v", str(source), "-o", str(tmp_path / "hb_epoch.o")],
                         capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-4000:]
    assert re.findall(r"Compiling entry function '(\w+)'", out.stderr) == ["hb_epoch"], out.stderr


@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize("tables", [True, False])
def test_builtin_mechanisms_compile(seed, precision, tables, tmp_path):
    cells = clamped_cells(np.random.default_rng(seed))
    sim = hb.Simulation(cells, backend="gpu", precision=precision, tables=tables)
    sim.record("m_hh", cell=0)
    _assert_compiles(sim, tmp_path, precision)


@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_trunk_scan_compiles(seed, precision, tmp_path, monkeypatch):
    """Cells with long trunks, as a CUDA device runs them: the trunk's scan and its scratch."""
    monkeypatch.setattr(HostDevice, "trunk_scan", True)
    cells = clamped_cells(np.random.default_rng(seed), ("c91662.swc", "ko20x-07.CNG.swc"))
    sim = hb.Simulation(cells, backend="gpu", precision=precision)
    sim.run(sim.dt)
    assert max(s["tr_node"].size for s in sim._gpu.structs) > 32
    _assert_compiles(sim, tmp_path, precision)


def test_network_compiles(seed, tmp_path):
    rng = np.random.default_rng(seed)
    cells = network(rng, 4)
    sim = hb.Simulation(cells, backend="gpu")
    wire(sim, cells, rng)
    _assert_compiles(sim, tmp_path)


def _translated() -> list:
    neuron = pytest.importorskip("neuron", reason="NMODL files are read with neuron.nmodl")
    share = Path(neuron.__file__).parent / ".data" / "share"
    with warnings.catch_warnings():     # the notices about files that do not translate
        warnings.simplefilter("ignore")
        return hb.load_mechanisms(share / "nrn" / "demo" / "release", strict=False)


def _cells(channels: dict) -> list:
    cells = []
    for k in range(2):
        c = hb.Cell(REAL / "ko20x-07.CNG.swc", nseg=1 + k)
        c.insert("hh")
        for name, params in channels.items():
            c.insert(name, region="soma", **params)
        c.place("IClamp", "soma[0](0.5)", delay=1.0, dur=5.0, amp=1.0)
        cells.append(c)
    return cells


@pytest.mark.usefixtures("builtins_only")
def test_translated_channels_and_synapses_compile(tmp_path):
    names = _translated()
    for f in ("syn1", "kdt", "kbg", "fdsyn", "countsyn"):
        names += hb.load_mechanisms(DATA / f"{f}.mod")
    channels = {n: {} for n in names if mechanisms.get(n).kind == "density"}
    assert {"HHk", "HHna", "cachan1", "capump", "kdt", "kbg"} <= set(channels), names
    cells = _cells(channels)
    sim = hb.Simulation(cells, backend="gpu")
    cells[1].place("syn1", "soma[0](0.5)", onset=1.0, tau=1.0, gmax=0.01)
    for kind in ("fdsyn", "countsyn"):                  # NET_RECEIVE with weight vectors
        sim.connect((0, "soma[0](0.5)"), cells[1].place(kind, "soma[0](0.5)"), weight=0.01,
                    delay=1.0)
    _assert_compiles(sim, tmp_path)


@pytest.mark.usefixtures("builtins_only")
@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_calcium_kept_per_node_compiles(precision, tmp_path):
    names = _translated()
    for f in CALCIUM:
        names += hb.load_mechanisms(DATA / f"{f}.mod")
    channels = {"caeca": {}, "cachan1": {"imax": 0.05}, "icaread": {},
                "kcai": {"gbar": 0.0005}, "caacc": {}, "cacum": {"depth": 10.0}}
    sim = hb.Simulation(_cells(channels), backend="gpu", precision=precision)
    _assert_compiles(sim, tmp_path, precision)
