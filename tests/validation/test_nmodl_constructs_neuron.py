"""NMODL statements beyond assignments against NEURON: the same files compiled by
``nrnivmodl``.

Files (``tests/data/nmodl``, written for these tests): ``sdsyn.mod``, a rise-and-decay
synapse whose NET_RECEIVE jumps its states with ``state_discontinuity`` and which prints
with ``printf``; ``pulses.mod``, a current clamp repeating its pulse, the phase found by a
WHILE loop; ``kloop.mod``, a potassium channel whose conductance is ``n^npow`` by a FROM
loop bounded by a PARAMETER (set per region), its rates from a FUNCTION that also writes
a RANGE variable; ``vring.mod``, a leak towards the mean voltage of the last steps, kept
in a ring buffer (ASSIGNED array elements indexed by values known only during the run);
``gdiam.mod``, a leak whose conductance grows with the segment's ``diam``.

Protocol: a one-compartment soma (L = diam = 20 µm) with hh, dt 0.025 ms, 30 ms; synapses
driven by a NetStim. Acceptance: max |ΔV| <= 1e-9 mV at every step.
"""
from __future__ import annotations

from pathlib import Path

import nmodl_compare as nc
import pytest

pytestmark = [pytest.mark.neuron,
              pytest.mark.filterwarnings("ignore::UserWarning")]  # notices, SWC notes

DATA = Path(__file__).parents[1] / "data" / "nmodl"
TOLERANCE_MV = 1e-9
FILES = ("sdsyn.mod", "pulses.mod", "kloop.mod", "vring.mod", "gdiam.mod")


compiled = nc.compiled_fixture(FILES)


soma = nc.one_point_soma
compare = nc.compare


def test_state_discontinuity_synapse(compiled, tmp_path):
    lib = compiled.lib
    model = {"swc": soma(tmp_path), "insert": [["hh", {}]],
             "point": [["sdsyn", "soma[0]", 0.5, {"tdecay": 2.5}]],
             "netstim": [2.0, 6.0, 4, [[0, 0.004, 1.0]]], "tstop": 30.0}
    dv, ref = compare(model, lib)
    assert ref.max() > -60.0, "the synapse should depolarize the soma"
    assert dv <= TOLERANCE_MV, f"max |dV| = {dv} mV"


def test_loops_writing_functions_and_indexed_elements(compiled, tmp_path):
    lib = compiled.lib
    model = {"swc": soma(tmp_path),
             "insert": [["hh", {}], ["kloop", {"npow": 2}], ["vring", {"nav": 7}],
                        ["gdiam", {}]],
             "point": [["pulses", "soma[0]", 0.5, {"period": 9.0, "amp": 0.4}]],
             "tstop": 30.0}
    dv, ref = compare(model, lib)
    assert ref.max() > 0.0, "the soma should spike: the comparison must cover a spike"
    assert dv <= TOLERANCE_MV, f"max |dV| = {dv} mV"


def test_loops_and_a_writing_function_on_a_real_cell(compiled):
    """kloop, vring, gdiam (each segment's diameter), pulses and sdsyn on ko20x-07
    (d_lambda 0.1)."""
    lib = compiled.lib
    model = {"swc": str(DATA.parent / "morphologies" / "real" / "ko20x-07.CNG.swc"),
             "nseg": None, "d_lambda": 0.1,
             "insert": [["hh", {}], ["kloop", {"npow": 4, "gbar": 0.005}], ["vring", {}],
                        ["gdiam", {"g0": 0.0001}]],
             "point": [["pulses", "soma[0]", 0.5, {"period": 8.0, "amp": 0.8}],
                       ["sdsyn", "apic[0]", 0.5, {}]],
             "netstim": [1.0, 4.0, 6, [[1, 0.01, 1.0]]],
             "record": [["soma[0]", 0.5], ["dend[3]", 0.5]], "tstop": 25.0}
    dv, ref = compare(model, lib)
    assert ref[0].max() > 0.0
    assert dv <= TOLERANCE_MV, f"max |dV| = {dv} mV"
