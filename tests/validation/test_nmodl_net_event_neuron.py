"""Point processes as spike sources (``net_event``) and random numbers drawn in
NET_RECEIVE and in a FUNCTION it calls, against NEURON: the same files compiled by
``nrnivmodl``.

Files (``tests/data/nmodl``, written for these tests): ``ticker.mod``, a spike every
``interval`` ms timed by self-events; ``noisytick.mod``, spikes at intervals drawn with
``exprand`` in a FUNCTION, plus a ``normrand`` jitter drawn in NET_RECEIVE, its INITIAL
setting the stream's seed where ``seed > 0``.

Protocol (dt 0.025 ms, 40 ms, celsius 6.3, v_init -65 mV): one soma (L = diam = 10 µm,
hh) with a ticker, two noisyticks (the first seeding the stream) and two ExpSyns; NetCons
from each source to the synapses with their own weights and delays, among them a delay 0
and two NetCons leaving one source; ``NetCon.record`` on every source. Acceptance:
identical spike times, and max |ΔV| = 0 (the same operations on the same numbers: one
draw out of NEURON's order changes every spike after it).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nmodl_compare as nc
import numpy as np
import pytest

pytestmark = [pytest.mark.neuron,
              pytest.mark.filterwarnings("ignore::UserWarning")]

DATA = Path(__file__).parents[1] / "data" / "nmodl"
FILES = ("ticker.mod", "noisytick.mod")

#: (source, its parameters) in creation order; NetCons (source, synapse, weight, delay)
SOURCES = [("ticker", {"start": 1.0, "interval": 2.5, "number": 9}),
           ("noisytick", {"seed": 7, "mean": 2.0, "number": 12}),
           ("noisytick", {"start": 0.5, "mean": 4.0, "number": 6})]
NETCONS = [(0, 0, 0.004, 1.0), (0, 1, 0.003, 0.0), (1, 0, 0.006, 0.5), (2, 1, 0.005, 2.0)]
TSTOP = 40.0

_NEURON = r"""
import json, sys
from neuron import h
h.nrn_load_dll(sys.argv[1])
spec = json.loads(sys.argv[2])
h.load_file("stdrun.hoc")
soma = h.Section(name="soma")
soma.L = soma.diam = 10
soma.insert("hh")
sources = []
for kind, params in spec["sources"]:
    pp = getattr(h, kind)(soma(0.5))
    for k, x in params.items():
        setattr(pp, k, x)
    sources.append(pp)
syns = [h.ExpSyn(soma(0.5)) for _ in range(2)]
ncs = []
for s, y, w, d in spec["netcons"]:
    nc = h.NetCon(sources[s], syns[y])
    nc.weight[0], nc.delay = w, d
    ncs.append(nc)
recs = []
for pp in sources:
    vec = h.Vector()
    nc = h.NetCon(pp, None)
    nc.record(vec)
    recs.append((nc, vec))
v = h.Vector().record(soma(0.5)._ref_v)
h.dt, h.celsius = 0.025, 6.3
h.finitialize(-65)
while h.t < spec["tstop"] - h.dt / 2:
    h.fadvance()
print(json.dumps({"v": list(v), "spikes": [list(vec) for _, vec in recs],
                  "last": [pp.last if hasattr(pp, "last") else 0.0 for pp in sources]}))
"""


compiled = nc.compiled_fixture(FILES)


def _neuron(lib) -> dict:
    spec = json.dumps({"sources": SOURCES, "netcons": NETCONS, "tstop": TSTOP})
    proc = subprocess.run([sys.executable, "-c", _NEURON, lib, spec], capture_output=True,
                          text=True, check=True, env=dict(os.environ))
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _hinesbatch() -> dict:
    import hinesbatch as hb
    from hinesbatch.model.sections import SectionCell

    cell = SectionCell(["soma[0]"], [-1], [10.0], [10.0]).insert("hh")
    sources = [cell.place(kind, "soma[0](0.5)", **params) for kind, params in SOURCES]
    syns = [cell.place("ExpSyn", "soma[0](0.5)") for _ in range(2)]
    sim = hb.Simulation([cell], backend="serial", dt=0.025, celsius=6.3, v_init=-65.0)
    for s, y, w, d in NETCONS:
        sim.connect(sources[s], syns[y], weight=w, delay=d)
    keys = [sim.record_spikes(pp) for pp in sources]
    kv = sim.record("v")
    klast = [sim.record("last", target=pp) for pp in sources[1:]]
    res = sim.run(TSTOP)
    return {"v": res[kv], "spikes": [res.spikes[k] for k in keys],
            "last": [0.0] + [res[k][-1] for k in klast]}


def test_point_process_spikes_and_draws_in_net_receive_match_neuron(compiled):
    ref, got = _neuron(compiled.lib), _hinesbatch()
    for k, (r, g) in enumerate(zip(ref["spikes"], got["spikes"])):
        assert len(r) >= 5, f"source {k} should spike"
        np.testing.assert_array_equal(g, np.array(r), err_msg=f"spikes of source {k}")
    # the drawn intervals differ from the mean: the draws took effect
    assert np.ptp(np.diff(ref["spikes"][1])) > 0.5
    np.testing.assert_array_equal(got["last"], ref["last"])
    v_ref, v_got = np.array(ref["v"]), np.asarray(got["v"])
    assert v_ref.shape == v_got.shape
    assert np.ptp(v_ref) > 1.0, "the synapses should move v"
    dv = float(np.max(np.abs(v_ref - v_got)))
    assert dv == 0.0, f"max |dV| = {dv} mV"
