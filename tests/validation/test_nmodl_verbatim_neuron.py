"""VERBATIM blocks that change nothing, and NEURON's VecStim file, against NEURON: the same
files compiled by ``nrnivmodl``.

Files (``tests/data/nmodl``): ``kret.mod``, a potassium channel updated by a PROCEDURE
(``SOLVE states``) whose PROCEDUREs end in ``VERBATIM return 0; ENDVERBATIM`` and
``return(0);`` (one of them tabulated) and whose INITIAL ends in ``return;``;
``nainc.mod``, a sodium channel including ``stdlib.h`` and ``math.h`` at the top level,
with VERBATIM blocks of comments only in its FUNCTIONs; ``kcareload.mod``, a
calcium-activated potassium channel whose INITIAL reloads ``cai`` from the ion in C (with
``caacc.mod`` integrating cai from the ica of ``caeca.mod``); ``vecevent.mod``, NEURON's
VecStim, which NEURON compiles and hinesbatch replaces by its built-in VecStim.

Protocol: a one-compartment soma (L = diam = 20 µm) with hh, dt 0.025 ms, 30 ms; the
channels with a current clamp (del 1 ms, dur 20 ms, 0.3 nA), tables on and off; an
ExpSyn driven by a VecStim playing a train with a repeated time. Acceptance: max |ΔV| <=
1e-9 mV at every step.
"""
from __future__ import annotations

from pathlib import Path

import nmodl_compare as nc
import pytest

pytestmark = [pytest.mark.neuron,
              pytest.mark.filterwarnings("ignore::UserWarning")]  # notices, SWC notes

DATA = Path(__file__).parents[1] / "data" / "nmodl"
TOLERANCE_MV = 1e-9
FILES = ("kret.mod", "nainc.mod", "kcareload.mod", "caacc.mod", "caeca.mod",
         "vecevent.mod")


compiled = nc.compiled_fixture(FILES)


def test_vecevent_is_not_registered(compiled):
    names = compiled.names
    assert sorted(names) == ["caacc", "caeca", "kcareload", "kret", "nainc"]


@pytest.mark.parametrize("tables", [True, False])
@pytest.mark.parametrize("channel", ["kret", "nainc"])
def test_channel_with_verbatim_that_changes_nothing(compiled, tmp_path, channel, tables):
    lib = compiled.lib
    model = {"swc": nc.one_point_soma(tmp_path), "insert": [["hh", {}], [channel, {}]],
             "iclamp": [1.0, 20.0, 0.3], "tstop": 30.0, "tables": tables}
    dv, ref = nc.compare(model, lib)
    assert ref.max() > 0.0, "the soma should spike: the comparison must cover a spike"
    assert dv <= TOLERANCE_MV, f"max |dV| = {dv} mV"


def test_calcium_reloaded_in_initial(compiled, tmp_path):
    """kcareload reads the cai that caacc integrates (from caeca's ica, which starts at
    1e-4 mM in caacc's INITIAL, before kcareload's: files initialize in name order)."""
    lib = compiled.lib
    model = {"swc": nc.one_point_soma(tmp_path),
             "insert": [["hh", {}], ["caeca", {}], ["caacc", {}], ["kcareload", {}]],
             "iclamp": [1.0, 20.0, 0.3], "tstop": 30.0}
    dv, ref = nc.compare(model, lib)
    assert ref.max() > 0.0, "the soma should spike: the comparison must cover a spike"
    assert dv <= TOLERANCE_MV, f"max |dV| = {dv} mV"


def test_vecstim_file_stands_for_the_builtin(compiled, tmp_path):
    """NEURON's VecStim from the compiled vecevent.mod and hinesbatch's built-in play the
    same train (a repeated time included) into an ExpSyn."""
    lib = compiled.lib
    model = {"swc": nc.one_point_soma(tmp_path), "insert": [["hh", {}]],
             "point": [["ExpSyn", "soma[0]", 0.5, {"tau": 2.0}]],
             "vecstim": [[0.5, 3.25, 3.25, 7.3, 12.0, 19.8], [[0, 0.004, 1.0]]],
             "tstop": 30.0}
    dv, ref = nc.compare(model, lib)
    assert ref.max() > -60.0, "the synapse should depolarize the soma"
    assert dv <= TOLERANCE_MV, f"max |dV| = {dv} mV"
