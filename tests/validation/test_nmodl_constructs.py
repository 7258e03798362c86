"""NMODL statements beyond assignments against NEURON: the same files compiled by
``nrnivmodl``.

Files (``tests/data/nmodl``, written for these tests): ``sdsyn.mod``, a rise-and-decay
synapse whose NET_RECEIVE jumps its states with ``state_discontinuity`` and which prints
with ``printf``.

Protocol: a one-compartment soma (L = diam = 20 µm) with hh, dt 0.025 ms, 30 ms; synapses
driven by a NetStim. Acceptance: max |ΔV| <= 1e-9 mV at every step.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import nmodl_compare as nc
import numpy as np
import pytest

pytestmark = [pytest.mark.neuron,
              pytest.mark.filterwarnings("ignore::UserWarning")]  # notices, SWC notes

DATA = Path(__file__).parents[1] / "data" / "nmodl"
TOLERANCE_MV = 1e-9
FILES = ("sdsyn.mod",)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """The files in one folder, built by nrnivmodl and loaded into hinesbatch."""
    import hinesbatch as hb
    from hinesbatch import mechanisms

    folder = tmp_path_factory.mktemp("mods")
    for name in FILES:
        (folder / name).write_text((DATA / name).read_text())
    lib = nc.compile_mods(sorted(folder.glob("*.mod")))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        names = hb.load_mechanisms(folder)
    yield lib, names
    for n in names:
        mechanisms.unregister(n)


def soma(tmp_path) -> str:
    path = tmp_path / "soma.swc"
    path.write_text("1 1 0 0 0 10 -1\n")
    return str(path)


def compare(model, lib):
    ref = nc.run_neuron(model, lib)
    got = nc.run_hinesbatch(model)
    assert ref.shape == got.shape
    return float(np.max(np.abs(ref - got))), ref


def test_state_discontinuity_synapse(compiled, tmp_path):
    lib, _ = compiled
    model = {"swc": soma(tmp_path), "insert": [["hh", {}]],
             "point": [["sdsyn", "soma[0]", 0.5, {"tdecay": 2.5}]],
             "netstim": [2.0, 6.0, 4, [[0, 0.004, 1.0]]], "tstop": 30.0}
    dv, ref = compare(model, lib)
    assert ref.max() > -60.0, "the synapse should depolarize the soma"
    assert dv <= TOLERANCE_MV, f"max |dV| = {dv} mV"
