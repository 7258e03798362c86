"""Artificial cells (NMODL ``ARTIFICIAL_CELL``) against NEURON: the same files compiled by
``nrnivmodl``.

Files (``tests/data/nmodl``, written for these tests): ``artstim.mod``, a spike train
whose gaps are stretched by ``exprand`` draws (in a FUNCTION that INITIAL's self-event
and NET_RECEIVE reach), restarted and stopped by NetCon events of positive and negative
weight; ``artlif.mod``, a leaky integrate-and-fire cell fed by NetCon events, with a
refractory period ended by a self-event; ``vecdelay.mod``, NEURON's vecevent.mod with
``RANGE delay`` added to every time (the built-in VecStim with a delay stands for it);
``noisyg.mod``, a leak drawing its conductance every step (the stream shared with the
artificial cells' draws).

Protocol (dt 0.025 ms, 60 ms, celsius 6.3, v_init -65 mV): one soma (L = diam = 10 µm,
hh) with two ExpSyns; two artstims (one with draws), one artlif, one NetStim; NetCons
from the artificial cells to the synapses and to each other (artstim -> artlif, NetStim
-> artlif, artlif -> artstim to restart it, NetStim -> artstim with a negative weight to
stop it), delays 0 to 2 ms; ``NetCon.record`` on every artificial cell, and
``Vector.record`` of artlif's ``m`` and the artstims' ``count``. Acceptance:
identical spike times and recorded variables, and max |ΔV| = 0 (one event out of order or one draw out of
NEURON's order changes every spike after it). Also: VecStims with delays onto the soma,
and a network of artificial cells without any section (``Simulation([])``).
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
FILES = ("artstim.mod", "artlif.mod", "vecdelay.mod", "noisyg.mod")

#: artificial cells (kind, parameters) in creation order
CELLS = [("artstim", {"start": 1.0, "mean": 3.0, "number": 20, "jitter": 0.6}),
         ("artstim", {"start": 4.0, "mean": 2.5, "number": 3}),
         ("artlif", {"tau": 4.0, "refrac": 3.0})]
NETSTIM = {"start": 30.0, "interval": 1.5, "number": 4}
#: NetCons (source, target, weight, delay): sources "a<k>" (artificial cell k) or "ns";
#: targets "a<k>" or "s<k>" (ExpSyn k on the soma)
NETCONS = [("a0", "s0", 0.004, 1.0), ("a1", "s1", 0.003, 0.0), ("a0", "a2", 0.7, 0.5),
           ("a1", "a2", 0.5, 0.0), ("ns", "a2", 0.45, 1.0), ("a2", "s1", 0.006, 2.0),
           ("a2", "a1", 1.0, 0.3), ("ns", "a0", -1.0, 0.0)]
TSTOP = 60.0

_NEURON = r"""
import json, sys
from neuron import h
h.nrn_load_dll(sys.argv[1])
spec = json.loads(sys.argv[2])
soma = h.Section(name="soma")
soma.L = soma.diam = 10
soma.insert("hh")
for name in spec.get("insert", []):
    soma.insert(name)
cells = []
for kind, params in spec["cells"]:
    a = getattr(h, kind)()
    for k, x in params.items():
        setattr(a, k, x)
    cells.append(a)
ns = h.NetStim()
for k, x in spec["netstim"].items():
    setattr(ns, k, x)
syns = [h.ExpSyn(soma(0.5)) for _ in range(2)]
def obj(name):
    return ns if name == "ns" else cells[int(name[1:])] if name[0] == "a" else syns[int(name[1:])]
ncs = []
for s, t, w, d in spec["netcons"]:
    nc = h.NetCon(obj(s), obj(t))
    nc.weight[0], nc.delay = w, d
    ncs.append(nc)
recs = []
for a in cells:
    vec = h.Vector()
    nc = h.NetCon(a, None)
    nc.record(vec)
    recs.append((nc, vec))
v = h.Vector().record(soma(0.5)._ref_v)
variables = [h.Vector().record(getattr(cells[k], f"_ref_{name}"))
             for k, name in spec["variables"]]
h.dt, h.celsius = 0.025, 6.3
h.finitialize(-65)
while h.t < spec["tstop"] - h.dt / 2:
    h.fadvance()
print(json.dumps({"v": list(v), "spikes": [list(vec) for _, vec in recs],
                  "variables": [list(vec) for vec in variables]}))
"""

#: variables of artificial cells recorded (cell, name): artlif's m, artstim's count
VARIABLES = [(2, "m"), (0, "count"), (1, "count")]


compiled = nc.compiled_fixture(FILES)


def _neuron(lib, insert=()) -> dict:
    spec = json.dumps({"cells": CELLS, "netstim": NETSTIM, "netcons": NETCONS,
                       "tstop": TSTOP, "variables": VARIABLES, "insert": list(insert)})
    proc = subprocess.run([sys.executable, "-c", _NEURON, lib, spec], capture_output=True,
                          text=True, check=True, env=dict(os.environ))
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _hinesbatch(backend: str, insert=()) -> dict:
    import hinesbatch as hb
    from hinesbatch.model.sections import SectionCell

    cell = SectionCell(["soma[0]"], [-1], [10.0], [10.0]).insert("hh")
    for name in insert:
        cell.insert(name)
    syns = [cell.place("ExpSyn", "soma[0](0.5)") for _ in range(2)]
    sim = hb.Simulation([cell], backend=backend, dt=0.025, celsius=6.3, v_init=-65.0)
    cells = [sim.artificial_cell(kind, **params) for kind, params in CELLS]
    ns = sim.net_stim(**NETSTIM)

    def obj(name):
        if name == "ns":
            return ns
        return cells[int(name[1:])] if name[0] == "a" else syns[int(name[1:])]

    for s, t, w, d in NETCONS:
        sim.connect(obj(s), obj(t), weight=w, delay=d)
    keys = [sim.record_spikes(a) for a in cells]
    kv = sim.record("v")
    kvars = [sim.record(name, target=cells[k]) for k, name in VARIABLES]
    res = sim.run(TSTOP)
    return {"v": res[kv], "spikes": [res.spikes[k] for k in keys],
            "variables": [res[k] for k in kvars]}


@pytest.mark.parametrize("backend", ["serial", "multicore"])
def test_artificial_cells_match_neuron(compiled, backend):
    ref, got = _neuron(compiled.lib), _hinesbatch(backend)
    for k, (r, g) in enumerate(zip(ref["spikes"], got["spikes"])):
        assert len(r) >= 3, f"artificial cell {k} should spike"
        np.testing.assert_array_equal(g, np.array(r), err_msg=f"spikes of cell {k}")
    # the draws took effect: the gaps of the first train differ
    assert np.ptp(np.diff(ref["spikes"][0])) > 0.5
    v_ref, v_got = np.array(ref["v"]), np.asarray(got["v"])
    assert v_ref.shape == v_got.shape
    assert np.ptp(v_ref) > 1.0, "the synapses should move v"
    dv = float(np.max(np.abs(v_ref - v_got)))
    assert dv == 0.0, f"max |dV| = {dv} mV"
    # the artificial cells' variables, sampled as NEURON's Vector.record samples them
    for (k, name), r, g in zip(VARIABLES, ref["variables"], got["variables"]):
        assert len(set(r)) >= 3, f"{name} of cell {k} should change"
        np.testing.assert_array_equal(g, np.array(r), err_msg=f"{name} of cell {k}")


def test_draws_of_artificial_cells_and_of_a_channel_share_neurons_stream(compiled):
    """noisyg (tests/data/nmodl: a leak drawing its conductance with normrand every step)
    on the soma besides the network above: the artstim's exprand draws at its events and
    the channel's draws in each step's state update come from one stream, in NEURON's
    order (events due at a step's start before its update)."""
    ref, got = _neuron(compiled.lib, ["noisyg"]), _hinesbatch("auto", ["noisyg"])
    for k, (r, g) in enumerate(zip(ref["spikes"], got["spikes"])):
        np.testing.assert_array_equal(g, np.array(r), err_msg=f"spikes of cell {k}")
    dv = float(np.max(np.abs(np.array(ref["v"]) - np.asarray(got["v"]))))
    assert dv == 0.0, f"max |dV| = {dv} mV"
    alone = _neuron(compiled.lib)      # without the channel's draws the trains differ
    assert alone["spikes"][0] != ref["spikes"][0]


#: VecStims (times, delay) onto the ExpSyn of an hh soma (weight, NetCon delay); times
#: whose sums with the delays round (0.1 + 0.2, 5.2 after 0.762), a repeated time
VECSTIMS = [([0.762, 5.2, 7.3, 7.3, 12.05, 30.1], 1.3, 0.004, 1.0),
            ([0.3, 0.7, 2.9, 19.9], 0.1, 0.003, 0.0),
            ([1.0, 2.0, 3.0], 0.0, 0.002, 0.5)]

_NEURON_VECSTIM = r"""
import json, sys
from neuron import h
h.nrn_load_dll(sys.argv[1])
spec = json.loads(sys.argv[2])
soma = h.Section(name="soma")
soma.L = soma.diam = 10
soma.insert("hh")
syn = h.ExpSyn(soma(0.5))
keep, recs = [], []
for times, delay, w, d in spec["vecstims"]:
    vs, tv = h.VecStim(), h.Vector(times)
    vs.play(tv)
    vs.delay = delay
    nc = h.NetCon(vs, syn)
    nc.weight[0], nc.delay = w, d
    vec = h.Vector()
    rec = h.NetCon(vs, None)
    rec.record(vec)
    keep += [vs, tv, nc, rec]
    recs.append(vec)
v = h.Vector().record(soma(0.5)._ref_v)
h.dt, h.celsius = 0.025, 6.3
h.finitialize(-65)
while h.t < spec["tstop"] - h.dt / 2:
    h.fadvance()
print(json.dumps({"v": list(v), "spikes": [list(vec) for vec in recs]}))
"""


def test_vecstim_with_a_delay_matches_neuron(compiled):
    """Each time ``delay`` ms later, with NEURON's rounding of ``t + delay + etime - t``:
    identical spike times, max |dV| = 0."""
    import hinesbatch as hb
    from hinesbatch.model.sections import SectionCell

    spec = json.dumps({"vecstims": VECSTIMS, "tstop": 40.0})
    proc = subprocess.run([sys.executable, "-c", _NEURON_VECSTIM, compiled.lib, spec],
                          capture_output=True, text=True, check=True, env=dict(os.environ))
    ref = json.loads(proc.stdout.strip().splitlines()[-1])
    cell = SectionCell(["soma[0]"], [-1], [10.0], [10.0]).insert("hh")
    syn = cell.place("ExpSyn", "soma[0](0.5)")
    sim = hb.Simulation([cell], dt=0.025, celsius=6.3, v_init=-65.0)
    keys = []
    for times, delay, w, d in VECSTIMS:
        vs = sim.vec_stim(times, delay=delay)
        sim.connect(vs, syn, weight=w, delay=d)
        keys.append(sim.record_spikes(vs))
    kv = sim.record("v")
    res = sim.run(40.0)
    for k, (r, key) in enumerate(zip(ref["spikes"], keys)):
        np.testing.assert_array_equal(res.spikes[key], np.array(r), err_msg=f"VecStim {k}")
    # the delay shows: NEURON's times are not the given ones
    assert ref["spikes"][0][0] == 0.762 + 1.3
    # ... and NEURON's rounding of ((t + delay) + etime) - t shows too
    assert ref["spikes"][0][1] != 5.2 + 1.3
    dv = float(np.max(np.abs(np.array(ref["v"]) - res[kv])))
    assert np.ptp(ref["v"]) > 1.0 and dv == 0.0, f"max |dV| = {dv} mV"


_NEURON_NO_CELLS = r"""
import json, sys
from neuron import h
h.nrn_load_dll(sys.argv[1])
spec = json.loads(sys.argv[2])
cells = []
for kind, params in spec["cells"]:
    a = getattr(h, kind)()
    for k, x in params.items():
        setattr(a, k, x)
    cells.append(a)
ncs = [h.NetCon(cells[s], cells[t]) for s, t, _, _ in spec["netcons"]]
for nc, (_, _, w, d) in zip(ncs, spec["netcons"]):
    nc.weight[0], nc.delay = w, d
recs = []
for a in cells:
    vec = h.Vector()
    nc = h.NetCon(a, None)
    nc.record(vec)
    recs.append((nc, vec))
h.dt = 0.025
h.finitialize(-65)
while h.t < spec["tstop"] - h.dt / 2:
    h.fadvance()
print(json.dumps([list(vec) for _, vec in recs]))
"""


def test_artificial_cells_without_any_section_match_neuron(compiled):
    """A network of artificial cells only (no section in NEURON, ``Simulation([])``):
    two drawing trains into two integrate-and-fire cells that excite each other."""
    import hinesbatch as hb

    cells = [("artstim", {"start": 0.5, "mean": 1.5, "number": 30, "jitter": 0.8}),
             ("artstim", {"start": 3.0, "mean": 2.0, "number": 20, "jitter": 0.3}),
             ("artlif", {"tau": 3.0, "refrac": 1.0}), ("artlif", {"tau": 6.0})]
    netcons = [(0, 2, 0.55, 0.3), (1, 2, 0.4, 0.0), (1, 3, 0.35, 1.2), (2, 3, 0.5, 0.5),
               (3, 2, 0.3, 0.7), (3, 0, -1.0, 2.0)]
    spec = json.dumps({"cells": cells, "netcons": netcons, "tstop": 50.0})
    proc = subprocess.run([sys.executable, "-c", _NEURON_NO_CELLS, compiled.lib, spec],
                          capture_output=True, text=True, check=True, env=dict(os.environ))
    ref = json.loads(proc.stdout.strip().splitlines()[-1])
    sim = hb.Simulation([])
    made = [sim.artificial_cell(kind, **params) for kind, params in cells]
    for s, t, w, d in netcons:
        sim.connect(made[s], made[t], weight=w, delay=d)
    keys = [sim.record_spikes(a) for a in made]
    res = sim.run(50.0)
    for k, (r, key) in enumerate(zip(ref, keys)):
        assert len(r) >= 2, f"artificial cell {k} should spike"
        np.testing.assert_array_equal(res.spikes[key], np.array(r), err_msg=f"cell {k}")
