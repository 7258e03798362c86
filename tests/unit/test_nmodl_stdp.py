"""The constructs of STDP synapses: NET_RECEIVE assigning its weight, FOR_NETCONS and WATCH
(the lowering, the refusals, the description's statements, the engines' bookkeeping).
NEURON's answers are in ``tests/validation/test_nmodl_stdp_neuron.py``.

Files: ``tests/data/nmodl/pairsyn.mod`` (all three), ``decsyn.mod`` (an assigned weight),
``allsyn.mod`` (FOR_NETCONS), ``vwatch.mod`` (WATCH).
"""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

pytest.importorskip("neuron.nmodl", reason="the NMODL parser comes with `pip install neuron`")

from nmodl_files import DATA, load

import hinesbatch as hb
from hinesbatch.engine.epochs import EpochSimulation
from hinesbatch.engine.receive import EventConstructError, netcons_order
from hinesbatch.engine.watch import HOC_EPSILON, Watches, WatchSlot
from hinesbatch.mechanisms import Mechanism, Variable
from hinesbatch.mechanisms.codegen import CodegenError, MechanismCode, uses_netcons
from hinesbatch.network import EventQueue, NetConTable
from hinesbatch.nmodl import NmodlError, translate, translate_text

pytestmark = pytest.mark.usefixtures("builtins_only")



# ---- lowering ------------------------------------------------------------------------------
def test_the_three_constructs_are_lowered():
    m = translate(DATA / "pairsyn.mod").mechanism
    assert "weight = (weight - (aminus * exp(((tpost - t) / tminus))))" in m.net_receive
    assert "for wk__fnc, tk__fnc in netcons():" in m.net_receive
    assert "wk__fnc = (wk__fnc + (aplus * exp(((tk__fnc - t) / tplus))))" in m.net_receive
    assert "watch_above(vpost, 2.0)" in m.net_receive
    code = MechanismCode(m)
    assert (code.receive_watches, code.receive_netcons, code.receive_weight_writes) \
        == (1, True, True)


def test_watch_of_a_number_below_v_and_several_conditions():
    m = translate(DATA / "wpair.mod").mechanism
    # (v > a) 2, (b < v) 3: both thresholds the membrane potential rises through
    assert "watch_above(a, 2.0)\n" in m.net_receive
    assert "watch_above(b, 3.0)\n" in m.net_receive
    assert MechanismCode(m).receive_watches == 4     # two statements of two conditions


def test_for_netcons_names_hide_the_mechanisms_and_net_receives():
    m = translate_text(BASE + "NET_RECEIVE(w, g) { FOR_NETCONS(w, g) { g = w + 1 } }",
                       "p.mod").mechanism
    assert "for w__fnc, g__fnc in netcons():\n    g__fnc = (w__fnc + 1.0)" \
        in m.net_receive


BASE = """
NEURON { POINT_PROCESS P RANGE g, x NONSPECIFIC_CURRENT i }
PARAMETER { x = 1 }
ASSIGNED { v (mV) i (nA) g y }
BREAKPOINT { i = g*v }
"""


@pytest.mark.parametrize("block, construct, reason", [
    ("NET_RECEIVE(w) { WATCH (v < x) 2 }", "WATCH", "a condition other than (v > x)"),
    ("NET_RECEIVE(w) { WATCH (g > x) 2 }", "WATCH", "a condition other than (v > x)"),
    ("NET_RECEIVE(w) { WATCH (v > y) 2 }", "WATCH", "a threshold that reads y"),
    ("NET_RECEIVE(w) { x = 2 WATCH (v > x) 2 }", "WATCH", "a threshold that reads x"),
    ("NET_RECEIVE(w) { WATCH (v > exp(x)) 2 }", "WATCH", "a threshold that reads exp"),
    ("NET_RECEIVE(w) { LOCAL v WATCH (v > x) 2 }", "WATCH",
     "a condition other than (v > x)"),
    ("NET_RECEIVE(w) { FOR_NETCONS(a, b) { g = a } }", "FOR_NETCONS",
     "binds 2 weight-vector entries but NET_RECEIVE has 1 arguments"),
    ("NET_RECEIVE(w, n) { FOR_NETCONS(a) { FOR_NETCONS(b) { g = b } } }", "FOR_NETCONS",
     "in FOR_NETCONS (translated directly in NET_RECEIVE only"),
    ("NET_RECEIVE(w) { FOR_NETCONS(a) { net_send(1, 1) } }", "net_send()",
     "sent from FOR_NETCONS are not translated"),
    ("NET_RECEIVE(w) { FOR_NETCONS(a) { WATCH (v > 0) 1 } }", "WATCH",
     "in FOR_NETCONS (translated in NET_RECEIVE only)"),
    ("NET_RECEIVE(w) { FOR_NETCONS(t) { g = t } }", "FOR_NETCONS argument t",
     "has the name of one of NEURON's variables"),
])
def test_refusals_name_the_construct(block, construct, reason):
    with pytest.raises(NmodlError) as err:
        translate_text(BASE + block, "p.mod")
    assert err.value.construct == construct
    assert reason in err.value.reason


def test_a_watch_outside_net_receive_is_refused_where_it_stands():
    text = BASE + "INITIAL {\n  g = 0\n  WATCH (v > 0) 2   : <-- here\n}\n" \
        "NET_RECEIVE(w) { g = w }\n"
    line = text.splitlines().index("  WATCH (v > 0) 2   : <-- here") + 1
    with pytest.raises(NmodlError) as err:
        translate_text(text, "p.mod")
    assert str(err.value).startswith(f"p.mod:{line}: WATCH")


# ---- the description's statements ----------------------------------------------------------
def _mech(net_receive: str, args=("n",)) -> Mechanism:
    return Mechanism(name="stmt", kind="point", order=1, assigned=(Variable("g"),),
                     net_receive=net_receive, net_receive_args=args)


@pytest.mark.parametrize("text, why", [
    ("for a in range(3):\n    g = a", "the only loop is `for a, b in netcons():`"),
    ("for a, b in netcons():\n    for c in netcons():\n        g = c",
     "the only loop is `for a, b in netcons():`"),
    ("for a, b, c in netcons():\n    g = a", "gives 2 entries per NetCon, not 3"),
    ("for a in netcons():\n    watch_above(0.0, 1.0)", "outside its netcons() loop"),
    ("watch_above(1.0)", "watch_above takes 2 arguments"),
])
def test_codegen_refuses_loops_and_watches_outside_the_language(text, why):
    with pytest.raises(CodegenError, match=re.escape(why)):
        MechanismCode(_mech(text)).module_functions()


def test_codegen_refuses_a_weight_written_outside_net_receive():
    mech = Mechanism(name="wi", kind="point", order=1, assigned=(Variable("g"),),
                     initial="weight = 1.0", net_receive="g = weight")
    with pytest.raises(CodegenError, match="cannot assign 'weight'"):
        MechanismCode(mech).module_functions()


def test_uses_netcons_sees_the_loop_anywhere_in_the_block():
    assert uses_netcons("if flag == 2.0:\n    for a, b in netcons():\n        b = 1.0")
    assert not uses_netcons("g = weight")


# ---- NetCon order and shared weight vectors --------------------------------------------------
def test_netcons_order_groups_by_source_in_the_order_of_its_first_netcon():
    sources = np.array([7, 3, 7, 9, 3, 7])
    targets = np.array([0, 0, 0, 0, 0, 1])
    assert netcons_order(sources, targets) == {0: [0, 2, 1, 4, 3], 1: [5]}


def test_shared_weight_vectors_are_one_memory():
    table = NetConTable()
    for s, w in ((0, (0.1, 1.0)), (1, (0.2, 2.0)), (0, (0.3, 3.0))):
        table.add(s, 0, weight=w)
    block = table.share_weights([0, 2, 1], 2)
    assert block.tolist() == [[0.1, 1.0], [0.3, 3.0], [0.2, 2.0]]
    table.weight_vector(2)[0] = 9.0          # through the NetCon...
    assert block[1, 0] == 9.0                # ...is the row
    block[2, 1] = 5.0
    assert table.weight_vector(1)[1] == 5.0
    assert table.weights.tolist() == [0.1, 0.2, 9.0]
    with pytest.raises(ValueError, match=r"NetCon\[0\] has a weight vector of 2 entries, "
                                         "not 3"):
        table.share_weights([0], 3)


# ---- WATCH bookkeeping -----------------------------------------------------------------------
def _watches(v):
    slots = [WatchSlot(0, "m", 0, 0, 0), WatchSlot(0, "m", 0, 1, 0),
             WatchSlot(0, "m", 1, 0, 1)]
    thr, flag = np.zeros(3), np.zeros(3, dtype=np.int64)
    return Watches(slots, np.asarray(v, dtype=float), thr, flag), thr, flag


def test_a_condition_activated_within_hoc_epsilon_counts_as_above():
    w, thr, flag = _watches([-20.0 - 0.5 * HOC_EPSILON, -20.0 - 2.0 * HOC_EPSILON])
    assert thr.tolist() == [math.inf] * 3       # none active yet: nothing can cross
    w.activate("m", 0, [(-20.0, 2.0)])
    w.activate("m", 1, [(-20.0, 2.0)])
    assert thr.tolist() == [-20.0, math.inf, -20.0]
    assert flag.tolist() == [1, 0, 0]


def test_watch_events_come_in_activation_order_and_new_conditions_remove_old_events():
    w, thr, _ = _watches([0.0, 0.0])
    w.activate("m", 1, [(-20.0, 5.0)])
    w.activate("m", 0, [(-20.0, 2.0), (-30.0, 3.0)])
    q = EventQueue()
    w.fire([0, 1, 2], 1.5, q)
    got = q.pop_until(1.5)
    assert [(e.target[:2], e.flag, e.kind, e.netcon) for e in got] == \
        [(("m", 1), 5.0, "self", -1), (("m", 0), 2.0, "self", -1),
         (("m", 0), 3.0, "self", -1)]
    assert w.take(got[0].target) and w.take(got[1].target)
    w.activate("m", 0, [(-10.0, 2.0)])           # while flag 3's event waits
    assert not w.take(got[2].target)
    assert thr.tolist() == [-10.0, math.inf, -20.0]


# ---- the engines ---------------------------------------------------------------------------
def _pairsyn_sim(soma, backend="serial"):
    cell = hb.Cell(str(soma)).insert("hh")
    syn = cell.place("pairsyn")
    cell.place("IClamp", "soma[0](0.5)", delay=2.0, dur=30.0, amp=0.15)
    sim = hb.Simulation(cell, backend=backend)
    a = sim.net_stim(start=1.0, interval=3.7, number=9)
    b = sim.vec_stim([0.5, 6.0, 12.25, 20.0])
    ncs = [sim.connect(a, syn, weight=0.004, delay=1.0),
           sim.connect(b, syn, weight=(0.005, 3.0), delay=0.5),
           sim.connect(a, syn, weight=0.003, delay=2.5)]
    return sim, ncs


def test_learned_weights_are_on_the_netcons_and_the_next_run_starts_from_them(soma):
    load("pairsyn")
    sim, ncs = _pairsyn_sim(soma)
    key = sim.record("v")
    first = sim.run(40.0)[key]
    learned = [nc.weight for nc in ncs]
    assert all(isinstance(w, tuple) and len(w) == 2 for w in learned)
    assert [w[0] for w in learned] != [0.004, 0.005, 0.003]
    assert [w[1] for w in learned] == [sim._netcon_table.weight_vector(i)[1]
                                       for i in range(3)]
    second = sim.run(40.0)[key]      # NEURON keeps NetCon.weight over finitialize
    assert not np.array_equal(first, second)
    sim2, ncs2 = _pairsyn_sim(soma)
    for nc, w in zip(ncs2, learned):
        nc.weight = w
    key2 = sim2.record("v")
    assert np.array_equal(sim2.run(40.0)[key2], second)


def test_multicore_equals_serial(soma):
    load("pairsyn")
    out = []
    for backend in ("serial", "multicore"):
        sim, ncs = _pairsyn_sim(soma, backend)
        key = sim.record("v")
        out.append((sim.run(40.0)[key], [nc.weight for nc in ncs]))
    assert np.array_equal(out[0][0], out[1][0]) and out[0][1] == out[1][1]


def test_a_network_run_by_epochs_equals_one_simulation(soma):
    """pairsyn on gid 2 learns from gid 1's spikes and a NetStim; WATCH, FOR_NETCONS and
    the assigned weights across the epochs of the network engine."""
    from hinesbatch import run_network
    from hinesbatch.network import Network
    from hinesbatch.network.parallel import SerialCommunicator

    load("pairsyn")

    def build(gid):
        cell = hb.Cell(str(soma)).insert("hh")
        cell.place("pairsyn")
        cell.place("IClamp", "soma[0](0.5)", delay=1.0, dur=30.0, amp=0.12 + 0.04 * gid)
        return cell

    net = Network()
    stim = net.net_stim(start=1.0, interval=2.5, number=10)         # gid 0
    net.add_cells(2, build=build, compartments=1)                    # gids 1, 2
    conns = [(stim, 2, 0.003, 0.5), (1, 2, (0.004, 0.0), 1.0), (stim, 2, 0.002, 2.0)]
    for s, t, w, d in conns:
        net.connect(s, t, "pairsyn[0]", weight=w, delay=d)
    key = net.record("v", 2, "soma[0](0.5)")
    got = run_network(net, 30.0, comm=SerialCommunicator())[key]

    one = hb.Simulation([build(1), build(2)], backend="serial")
    ns = one.net_stim(start=1.0, interval=2.5, number=10)
    sources = {stim: ns, 1: one.spike_source(0)}
    for s, t, w, d in conns:
        one.connect(sources[s], one.cells[t - 1].point_processes[0], weight=w, delay=d)
    key2 = one.record("v", cell=1)
    spikes = one.record_spikes(sources[1])
    res = one.run(30.0)
    assert res.spikes[spikes].size > 0, "gid 1 must fire for its NetCon to act"
    assert got.tobytes() == res[key2].tobytes()


def test_epoch_engine_runs_watch(soma):
    load("vwatch")

    def run(epochs: bool):
        cell = hb.Cell(str(soma)).insert("hh")
        pp = cell.place("vwatch")
        cell.place("IClamp", "soma[0](0.5)", delay=1.0, dur=30.0, amp=0.3)
        sim = EpochSimulation([cell], gids=[0]) if epochs else hb.Simulation(cell)
        key = sim.record("v")
        n = sim.record("n", target=pp)
        if not epochs:
            res = sim.run(30.0)
            return res[key], res[n]
        sim.receive(*sim.begin(30.0))
        while sim.t < 30.0 - 0.0125:
            sim.receive(*sim.advance(min(37, sim.n_steps - round(sim.t / 0.025))))
        res = sim.finish()
        return res[key], res[n]

    v_ref, n_ref = run(False)
    v, n = run(True)
    assert n_ref[-1] >= 2, "the soma should spike: WATCH must fire"
    assert np.array_equal(v, v_ref) and np.array_equal(n, n_ref)


@pytest.mark.parametrize("name, construct", [
    ("decsyn", "an assigned NetCon weight"), ("allsyn", "FOR_NETCONS"),
    ("vwatch", "WATCH"), ("pairsyn", "WATCH")])
def test_the_gpu_engine_refuses_them_before_the_run(soma, monkeypatch, name, construct):
    from hinesbatch.engine.gpu.devices import EMULATION_ENV

    monkeypatch.setenv(EMULATION_ENV, "1")
    load(name)
    cell = hb.Cell(str(soma)).insert("pas")
    cell.place(name)
    with pytest.raises(EventConstructError,
                       match=f"mechanism {name}: {construct}.* is not run by the gpu "
                             "backend; use backend 'serial' or 'multicore'") as err:
        hb.Simulation(cell, backend="gpu").run(1.0)
    assert (err.value.mechanism, err.value.engine) == (name, "gpu")
    assert err.value.construct == construct.split(" (")[0]


@pytest.mark.parametrize("name, what", [
    ("decsyn", r"an assigned NetCon weight \(NET_RECEIVE's first argument\)"),
    ("allsyn", r"FOR_NETCONS \(netcons\(\)\) and WATCH")])
def test_the_c_emitter_refuses_them(name, what):
    from hinesbatch.mechanisms.c_emitter import emit_c

    with pytest.raises(CodegenError, match=f"mechanism {name}: {what}.* not emitted as C"):
        emit_c(translate(DATA / f"{name}.mod").mechanism)
    with pytest.raises(CodegenError, match=r"mechanism stmt: FOR_NETCONS \(netcons\(\)\) "
                                           r"and WATCH \(watch_above\) are not emitted"):
        emit_c(_mech("if flag == 1.0:\n    watch_above(-20.0, 2.0)"))


@pytest.mark.parametrize("backend", ["serial", "multicore"])
def test_each_cell_watches_its_own_v(soma, backend):
    """vwatch on the second of two cells (the first quiet, with its own vwatch that must
    not fire) equals that cell alone."""
    load("vwatch")

    def cell(amp):
        c = hb.Cell(str(soma)).insert("hh")
        c.place("vwatch")
        c.place("IClamp", "soma[0](0.5)", delay=1.0, dur=30.0, amp=amp)
        return c

    both = hb.Simulation([cell(0.0), cell(0.3)], backend=backend)
    keys = [both.record("n", target=c.point_processes[0]) for c in both.cells]
    kv = both.record("v", cell=1)
    got = both.run(30.0)
    alone = hb.Simulation(cell(0.3), backend="serial")
    ka, kn = alone.record("v"), alone.record("n", target=alone.cells[0].point_processes[0])
    ref = alone.run(30.0)
    assert got[keys[0]][-1] == 0.0 and ref[kn][-1] >= 2
    assert np.array_equal(got[keys[1]], ref[kn]) and np.array_equal(got[kv], ref[ka])
