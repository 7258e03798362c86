"""SOLVEs run in the file's order against NEURON: a PROCEDURE solved with METHOD
after_cvode before a cnexp SOLVE (``tests/data/nmodl/acorder.mod``, written for this
test) sets, from the new v, the value the cnexp step then reads, as in NEURON's
``nrn_state``.

Protocol: a one-compartment soma (L = diam = 20 µm) with hh and the mechanism, a current
clamp (del 1 ms, dur 20 ms, 0.3 nA), dt 0.025 ms, 30 ms. Acceptance: max |ΔV| <= 1e-9 mV
and the same V and x at every step.
"""
from __future__ import annotations

import nmodl_compare as nc
import numpy as np
import pytest

pytestmark = [pytest.mark.neuron,
              pytest.mark.filterwarnings("ignore::UserWarning")]


compiled = nc.compiled_fixture(["acorder.mod"])


def test_after_cvode_procedure_before_cnexp_runs_first(compiled, tmp_path):
    model = {"swc": nc.one_point_soma(tmp_path), "insert": [["hh", {}], ["acorder", {}]],
             "iclamp": [1.0, 20.0, 0.3], "tstop": 30.0,
             "record": [["soma[0]", 0.5], ["soma[0]", 0.5, "V_acorder"],
                        ["soma[0]", 0.5, "x_acorder"]]}
    dv, ref = nc.compare(model, compiled.lib)
    assert dv <= 1e-9
    assert np.max(ref[2]) > 0.5          # x follows V through the spikes
