"""NEURON's random numbers in NMODL against NEURON: the same files compiled by
``nrnivmodl``, both runs drawing from a fresh stream (state 1).

Files (``tests/data/nmodl``, written for these tests): ``noisyi.mod``, a noisy current
drawing ``normrand`` in the PROCEDURE its BREAKPOINT SOLVEs (once per step) and in the
BREAKPOINT itself (twice per step: NEURON evaluates the current at v + 0.001 and at v);
``expinit.mod``, a leak whose INITIAL sets the seed (where its PARAMETER ``seed`` >= 0) and
draws ``exprand``, ``poisrand`` and ``scop_random``; ``noisyg.mod``, a leak whose
conductance the PROCEDURE its BREAKPOINT SOLVEs draws every step (two mechanisms drawing
in the state update: NEURON's type order).

Every draw of one run comes from one stream, so a single draw out of NEURON's order
(mechanisms in type order, instances in node order, the current's two evaluations,
finitialize's) changes every number after it. Acceptance: max |ΔV| = 0 at every step
(the same operations on the same numbers).

Protocols (dt 0.025 ms, hh everywhere): two one-compartment cells, each with both files'
mechanisms (30 ms); one soma with two NoisyI instances (30 ms); ko20x-07 (d_lambda 0.1)
with expinit in every segment (a conductance drawn per segment in node order) and
NoisyI on the soma and a dendrite (20 ms).
"""
from __future__ import annotations

from pathlib import Path

import nmodl_compare as nc
import numpy as np
import pytest

pytestmark = [pytest.mark.neuron,
              pytest.mark.filterwarnings("ignore::UserWarning")]

DATA = Path(__file__).parents[1] / "data" / "nmodl"
FILES = ("noisyi.mod", "expinit.mod", "noisyg.mod")


compiled = nc.compiled_fixture(FILES)


def test_two_cells_draw_in_neurons_order(compiled):
    lib, folder = compiled.lib, compiled.folder
    models = [{"insert": [["hh", {}], ["expinit", {"seed": 5}], ["noisyg", {}]],
               "point": [["NoisyI", "soma[0]", 0.5, {}]]},
              {"insert": [["hh", {}], ["expinit", {}], ["noisyg", {"gmax": 0.001}]],
               "point": [["NoisyI", "soma[0]", 0.5, {"sd": 0.3}]]}]
    ref, got = nc.run_batch(models, lib, nc.one_point_soma(folder), tstop=30.0)
    assert ref.shape == got.shape
    assert np.ptp(ref[0]) > 1.0 and not np.array_equal(ref[0], ref[1])
    assert np.max(np.abs(ref - got)) == 0.0


def test_two_instances_on_one_node(compiled):
    lib, folder = compiled.lib, compiled.folder
    model = {"swc": nc.one_point_soma(folder), "insert": [["hh", {}]],
             "point": [["NoisyI", "soma[0]", 0.5, {"sd": 0.4}],
                       ["NoisyI", "soma[0]", 0.5, {"m": 0.05, "white": 0.001}]],
             "tstop": 30.0}
    dv, ref = nc.compare(model, lib)
    assert np.ptp(ref) > 1.0
    assert dv == 0.0, f"max |dV| = {dv} mV"


def test_draws_per_segment_on_a_real_cell(compiled):
    lib = compiled.lib
    model = {"swc": str(DATA.parent / "morphologies" / "real" / "ko20x-07.CNG.swc"),
             "nseg": None, "d_lambda": 0.1,
             "insert": [["hh", {}], ["expinit", {"gmax": 0.002}]],
             "point": [["NoisyI", "soma[0]", 0.5, {"sd": 2.0, "m": 0.5}],
                       ["NoisyI", "dend[3]", 0.5, {"sd": 1.0}]],
             "record": [["soma[0]", 0.5], ["dend[3]", 0.5], ["dend[3]", 0.5, "g_expinit"],
                        ["apic[0]", 0.5, "g_expinit"]],
             "tstop": 20.0}
    ref, got = nc.run_neuron(model, lib), nc.run_hinesbatch(model)
    assert ref.shape == got.shape
    assert ref[2, 0] != ref[3, 0]       # the segments drew different conductances
    assert np.max(np.abs(ref - got)) == 0.0


_TWO_CELLS = r"""
import json, sys
from neuron import h
h.nrn_load_dll(sys.argv[1])
cells = []
for c in range(2):
    soma, d0, d1 = (h.Section(name=f"{n}_{c}") for n in ("soma", "d0", "d1"))
    d0.connect(soma(1))
    d1.connect(d0(1))
    soma.L = soma.diam = 10
    d0.L, d0.diam, d0.nseg = 100, 1, 3
    d1.L, d1.diam, d1.nseg = 50, 1, 2
    for s in (soma, d0, d1):
        s.insert("expinit")
    cells.append((soma, d0, d1))
h.finitialize(-65)
print(json.dumps([[c, k, seg.x, seg.g_expinit] for c, secs in enumerate(cells)
                  for k, s in enumerate(secs) for seg in s]))
"""


def test_two_cells_of_several_sections_draw_cell_after_cell(compiled):
    """expinit in every segment of two cells of three sections (nseg 1, 3, 2): NEURON's
    INITIAL draws the first cell's segments in its node order, then the second's."""
    import json
    import os
    import subprocess
    import sys

    import hinesbatch as hb
    from hinesbatch.model.sections import SectionCell

    lib = compiled.lib
    proc = subprocess.run([sys.executable, "-c", _TWO_CELLS, lib], capture_output=True,
                          text=True, check=True, env=dict(os.environ))
    rows = json.loads(proc.stdout.strip().splitlines()[-1])
    cells = [SectionCell(["soma[0]", "dend[0]", "dend[1]"], [-1, 0, 1], [10, 100, 50],
                         [10, 1, 1], nseg=[1, 3, 2]).insert("expinit") for _ in range(2)]
    sim = hb.Simulation(cells, backend="serial")
    names = ("soma[0]", "dend[0]", "dend[1]")
    keys = [sim.record("g_expinit", cell=c, location=f"{names[k]}({x})")
            for c, k, x, _ in rows]
    res = sim.run(0.025)
    ref = np.array([g for *_, g in rows])
    got = np.array([res[key][0] for key in keys])
    assert np.unique(ref).size == ref.size
    np.testing.assert_array_equal(got, ref)
