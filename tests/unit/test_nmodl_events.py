"""NET_RECEIVE with weight vectors, its INITIAL block, ``flag`` and ``net_send``: the
lowering, the refusals, the event queue with self-events and the engines.

Files: ``tests/data/nmodl/fdsyn.mod`` (a facilitating and depressing synapse whose state
lives in each NetCon's weight vector), ``pulsesyn.mod`` (a transmitter pulse ended by a
self-event with a flag), ``pulsetrain.mod`` (a pulse train started by ``net_send`` in
INITIAL) and ``countsyn.mod`` (a weight-vector entry without an INITIAL block).
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

pytest.importorskip("neuron.nmodl", reason="the NMODL parser comes with `pip install neuron`")

from nmodl_files import DATA, load

import hinesbatch as hb
from hinesbatch.engine.epochs import EpochSimulation
from hinesbatch.engine.receive import SelfEventError
from hinesbatch.mechanisms import Mechanism, Variable
from hinesbatch.mechanisms.codegen import count_net_sends
from hinesbatch.network import EventQueue, NetConTable, deliver
from hinesbatch.nmodl import NmodlError, translate, translate_text

pytestmark = pytest.mark.usefixtures("builtins_only")



# ---- the queue ----------------------------------------------------------------------------
def test_self_events_keep_insertion_order_at_equal_times_and_their_flag():
    q = EventQueue()
    q.push(1.0, 0, 0.5, kind="net", netcon=3)
    q.push(1.0, ("syn", 0), 0.0, kind="self", netcon=-1, flag=2.0)
    q.push(0.5, ("syn", 1), 0.1, kind="self", netcon=3, flag=7.0)
    got = q.pop_until(1.0)
    assert [(e.te, e.kind, e.flag, e.netcon) for e in got] == [
        (0.5, "self", 7.0, 3), (1.0, "net", 0.0, 3), (1.0, "self", 2.0, -1)]


def test_a_zero_delay_self_event_is_delivered_in_the_same_pass():
    q = EventQueue()
    q.push(2.0, 0, 0.1, kind="net", netcon=0)
    q.push(2.0, 1, 0.2, kind="net", netcon=1)
    seen = []

    def on_net(e):
        seen.append((e.kind, e.target, e.flag))
        if e.kind == "net" and e.target == 0:      # net_send(0, 5): te = t, after the
            q.push(e.te + 0.0, ("m", 0), kind="self", netcon=e.netcon, flag=5.0)   # queued

    n = deliver(q, 2.0, netcons=NetConTable(), on_net=on_net)
    assert n == 3 and len(q) == 0
    # the self-event comes after the event already queued for the same time
    assert seen == [("net", 0, 0.0), ("net", 1, 0.0), ("self", ("m", 0), 5.0)]


def test_a_self_event_past_the_limit_waits():
    q = EventQueue()
    q.push(1.0, 0, kind="net", netcon=0)
    deliver(q, 1.0, netcons=NetConTable(),
            on_net=lambda e: e.kind == "net" and q.push(1.0 + 1e-12, ("m", 0), kind="self"))
    assert len(q) == 1 and q.next_time() == 1.0 + 1e-12


def test_a_non_finite_flag_is_refused():
    with pytest.raises(ValueError, match="event flag must be finite"):
        EventQueue().push(1.0, 0, kind="self", flag=math.nan)


# ---- weight vectors in the NetCon table ---------------------------------------------------
def test_netcon_table_keeps_weight_vectors():
    table = NetConTable()
    table.add(0, 1, weight=(0.01, 2.0, 3.0), delay=1.0)
    table.add(0, 2, weight=0.5, delay=2.0)
    assert table.weights.tolist() == [0.01, 0.5]
    assert table.weight_vector(0).tolist() == [0.01, 2.0, 3.0]
    table.resize_weights(1, 3)
    assert table.weight_vector(1).tolist() == [0.5, 0.0, 0.0]
    q = EventQueue()
    table.on_spike(0, 1.0, q)
    assert [(e.netcon, e.weight) for e in q.pop_until(5.0)] == [(0, 0.01), (1, 0.5)]
    with pytest.raises(ValueError, match=r"NetCon\[0\] has a weight vector of 3 entries "
                                         "but its target's NET_RECEIVE takes 2"):
        table.resize_weights(0, 2)
    with pytest.raises(ValueError, match=r"NetCon\[2\] weight\[1\] must be finite"):
        table.add(0, 1, weight=[1.0, math.inf])
    with pytest.raises(ValueError, match=r"NetCon\[2\] weight vector is empty"):
        table.add(0, 1, weight=[])


# ---- lowering -----------------------------------------------------------------------------
def test_weight_vector_and_net_receive_initial_are_lowered():
    m = translate(DATA / "fdsyn.mod").mechanism
    assert m.net_receive_args == ("x", "u", "tlast") and m.weight_size == 4
    assert m.net_receive_initial == "x = 1.0\nu = U\ntlast = (-1000000000.0)\n"
    assert "g = (g + ((weight * u) * x))" in m.net_receive


def test_a_net_receive_with_only_its_initial_block_runs(soma, tmp_path):
    """NET_RECEIVE(w, a) { INITIAL { a = foo } }: an empty body, a weight entry set at
    initialization (NEURON runs such a file; its events change nothing)."""
    path = tmp_path / "nri.mod"
    path.write_text("NEURON { POINT_PROCESS nri  RANGE foo }\nPARAMETER { foo = 3 }\n"
                    "NET_RECEIVE(w, a) {\n  INITIAL { a = foo }\n}\n")
    m = translate(path).mechanism
    assert m.net_receive == "pass" and m.net_receive_args == ("a",)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hb.load_mechanisms(path)
    cell = hb.Cell(soma, nseg=1).insert("hh")
    pp = cell.place("nri", "soma[0](0.5)")
    sim = hb.Simulation(cell)
    nc = sim.connect(sim.net_stim(start=1.0, interval=2.0, number=3), pp, weight=0.5)
    key = sim.record("v")
    v = sim.run(8.0)[key]
    assert np.isfinite(v).all()
    assert tuple(np.ravel(nc.weight)) == (0.5, 3.0)


def test_flag_and_net_send_are_lowered():
    m = translate(DATA / "pulsesyn.mod").mechanism
    assert "if (flag == 0.0):" in m.net_receive
    assert "net_send(Cdur, count)" in m.net_receive
    assert count_net_sends(m.net_receive) == 1
    m = translate(DATA / "pulsetrain.mod").mechanism
    assert "net_send(del_, 1.0)" in m.initial
    assert count_net_sends(m.net_receive) == 2


BASE = """
NEURON { POINT_PROCESS P RANGE g NONSPECIFIC_CURRENT i }
ASSIGNED { v (mV) i (nA) g }
BREAKPOINT { i = g*v }
"""


@pytest.mark.parametrize("block, construct, reason", [
    ("NET_RECEIVE(w, n) { flag = 1 }", "flag", "assigns the event's flag"),
    ("NET_RECEIVE(w, t) { t = 1 }", "NET_RECEIVE argument t", "has the name of one of"),
    ("NET_RECEIVE(w, n) { INITIAL { n = flag } }", "flag",
     "unknown name in NET_RECEIVE INITIAL"),
    ("NET_RECEIVE(w) { INITIAL { net_send(1, 1) } }", "net_send()",
     "sent from NET_RECEIVE INITIAL are not translated"),
    ("NET_RECEIVE(w) { net_send(1) }", "net_send()", "called with 1 argument(s), takes 2"),
    ("NET_RECEIVE(w) { send() }\nPROCEDURE send() { net_send(1, 1) }", "net_send()",
     "sent from PROCEDURE send are not translated"),
    ("NET_RECEIVE(w) { INITIAL { net_event(t) } }", "net_event()",
     "sent from NET_RECEIVE INITIAL are not translated"),
    ("NET_RECEIVE(w) { net_event(t, 1) }", "net_event()", "called with 2 argument(s), takes 1"),
    ("NET_RECEIVE(w) { send() }\nPROCEDURE send() { net_event(t) }", "net_event()",
     "sent from PROCEDURE send are not translated"),
    ("INITIAL { net_event(t) }", "net_event()", "sent from INITIAL are not translated"),
    ("NET_RECEIVE(w) { g = net_event(t) }", "net_event()", "net_event is not translated"),
    ("PARAMETER { flag = 0 }\nNET_RECEIVE(w) { g = 1 }", "flag",
     "a variable named flag besides NET_RECEIVE's event flag"),
])
def test_refusals_name_the_construct(block, construct, reason):
    with pytest.raises(NmodlError) as err:
        translate_text(BASE + block, "p.mod")
    assert err.value.construct == construct
    assert reason in err.value.reason


def test_check_counts_a_written_weight_as_translated(tmp_path):
    from hinesbatch.nmodl.check import coverage

    (tmp_path / "a.mod").write_text(BASE + "NET_RECEIVE(w) { w = 2 }")
    (tmp_path / "b.mod").write_text(BASE.replace("P ", "Q ") + "NET_RECEIVE(x) { x = 1 }")
    (tmp_path / "c.mod").write_text(BASE.replace("P ", "R ") + "NET_RECEIVE(w, n) { n = 1 }")
    got = coverage(tmp_path)
    assert got["translated"] == 3
    assert not got["reasons"]


def test_net_send_in_a_density_mechanisms_initial_is_refused():
    text = """
NEURON { SUFFIX d }
ASSIGNED { x }
INITIAL { net_send(1, 1) }   : <-- here
"""
    with pytest.raises(NmodlError, match=r"d\.mod:4: net_send\(\): self-events sent from "
                                         "a density mechanism's INITIAL"):
        translate_text(text, "d.mod")


def test_description_checks_the_net_receive_arguments():
    with pytest.raises(ValueError, match="need a net_receive block"):
        Mechanism("A", "point", 1, net_receive_args=("n",))
    with pytest.raises(ValueError, match=r"net_receive_args \['g'\] clash"):
        Mechanism("A", "point", 1, states=(Variable("g"),), net_receive="g = g + weight",
                  net_receive_args=("g",))


# ---- the CPU engine ----------------------------------------------------------------------
def fdsyn_reference(times, U=0.3, tau_rec=40.0, tau_fac=20.0):
    """fdsyn.mod's NET_RECEIVE over one NetCon's event times, in Python, with the same
    operations (NEURON's hoc_Exp is math.exp in this range, 0 below -700)."""
    exp = lambda a: 0.0 if a < -700.0 else math.exp(a)
    x, u, tlast = 1.0, U, -1e9
    for t in times:
        x = 1.0 - (1.0 - x)*exp((-(t - tlast))/tau_rec)
        u = U + (u - U)*exp((-(t - tlast))/tau_fac)
        x = x - u*x
        u = u + U*(1.0 - u)
        tlast = t
    return x, u, tlast


@pytest.mark.parametrize("backend", ["serial", "multicore"])
def test_each_netcon_keeps_its_own_weight_vector(soma, backend):
    load("fdsyn")
    cell = hb.Cell(str(soma)).insert("hh")
    syn = cell.place("fdsyn")
    sim = hb.Simulation(cell, backend=backend)
    fast = sim.net_stim(start=1.0, interval=2.0, number=6)
    slow = sim.vec_stim([3.0, 20.0])
    sim.connect(fast, syn, weight=0.01, delay=0.5)
    sim.connect(slow, syn, weight=(0.02, 9.0, 9.0, 9.0), delay=1.0)   # INITIAL resets them
    sim.run(30.0)
    got = [tuple(sim._netcon_table.weight_vector(i)[1:]) for i in range(2)]
    # NetStim's spikes accumulate: start + interval, + interval, ...
    t, fast_times = 1.0, []
    for _ in range(6):
        fast_times.append(t + 0.5)
        t = t + 2.0
    assert got[0] == fdsyn_reference(fast_times)
    assert got[1] == fdsyn_reference([3.0 + 1.0, 20.0 + 1.0])
    assert got[0] != got[1]


def test_net_receive_arguments_hide_the_variables_of_their_names(soma):
    """hidesyn's NET_RECEIVE(w, tlast, nev): each NetCon's entries count its own events;
    the point process's RANGE tlast and nev keep what INITIAL set."""
    load("hidesyn")
    cell = hb.Cell(str(soma)).insert("pas")
    syn = cell.place("hidesyn")
    sim = hb.Simulation(cell)
    sim.connect(sim.vec_stim([1.0, 2.0, 3.0]), syn, weight=0.001, delay=0.5)
    sim.connect(sim.vec_stim([2.25]), syn, weight=0.002, delay=0.5)
    keys = [sim.record("tlast", target=syn), sim.record("nev", target=syn)]
    res = sim.run(5.0)
    assert set(res[keys[0]].tolist()) == {-1.0} and set(res[keys[1]].tolist()) == {0.0}
    assert sim._netcon_table.weight_vector(0).tolist() == [0.001, 3.5, 3.0]
    assert sim._netcon_table.weight_vector(1).tolist() == [0.002, 2.75, 1.0]


def test_entries_without_an_initial_block_start_at_zero(soma):
    load("countsyn")
    cell = hb.Cell(str(soma)).insert("pas")
    syn = cell.place("countsyn")
    sim = hb.Simulation(cell)
    sim.connect(sim.vec_stim([1.0, 2.0, 3.0]), syn, weight=(0.001, 50.0), delay=0.5)
    key = sim.record("g", target=syn)
    g = sim.run(4.0)[key]
    assert sim._netcon_table.weight_vector(0).tolist() == [0.001, 3.0]
    # three events added w, 2w and 3w (decaying between): far below 50 w
    assert 0.003 < g.max() < 0.006


def test_self_events_end_the_pulse_with_the_flag_of_the_last_event(soma):
    load("pulsesyn")
    cell = hb.Cell(str(soma)).insert("pas")
    syn = cell.place("pulsesyn", Cdur=1.0)
    sim = hb.Simulation(cell)
    # 1.0 and 1.5 overlap: the pulse ends 1 ms after the second (flag 2), not the first
    sim.connect(sim.vec_stim([1.0, 1.5, 6.0]), syn, weight=1.0, delay=0.0)
    key = sim.record("T", target=syn)
    res = sim.run(9.0)
    t, T = res.t, res[key]
    on = t[T > 0]      # T is set at delivery: it shows from the sample after te
    assert abs(on[0] - 1.025) < 1e-9 and abs(on[on < 5].max() - 2.5) < 1e-9
    assert abs(on[on > 5].min() - 6.025) < 1e-9 and abs(on.max() - 7.0) < 1e-9


def test_net_send_from_initial_times_a_pulse_train(soma):
    load("pulsetrain")
    cell = hb.Cell(str(soma)).insert("pas")
    stim = cell.place("pulsetrain", n=3, ton=1.0, toff=2.0)
    sim = hb.Simulation(cell)
    key = sim.record("i", target=stim)
    res = sim.run(15.0)
    on = (res[key] > 0).astype(int)
    edges = res.t[1:][np.diff(on) == 1]
    assert edges.size == 3                 # n = 3 pulses, each 1 ms, 2 ms apart
    assert np.allclose(np.diff(edges), 3.0, atol=1e-9)


def test_a_negative_net_send_delay_stops_the_run(soma, tmp_path):
    text = (DATA / "pulsetrain.mod").read_text().replace("POINT_PROCESS pulsetrain",
                                                          "POINT_PROCESS backtrain")
    path = tmp_path / "backtrain.mod"
    path.write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hb.load_mechanisms(path)
    cell = hb.Cell(str(soma)).insert("pas")
    cell.place("backtrain", ton=-1.0)
    with pytest.raises(SelfEventError, match=r"backtrain\[0\]: net_send at t = 2\.0 ms "
                                             r"with delay -1\.0 ms"):
        hb.Simulation(cell).run(5.0)


def test_weight_vectors_are_checked_at_connect(soma):
    load("fdsyn")
    cell = hb.Cell(str(soma)).insert("pas")
    syn, exp = cell.place("fdsyn"), cell.place("ExpSyn")
    sim = hb.Simulation(cell)
    ns = sim.net_stim()
    with pytest.raises(ValueError, match="weight vector of 5 entries; the target's "
                                         "NET_RECEIVE takes 1 to 4"):
        sim.connect(ns, syn, weight=(1, 2, 3, 4, 5))
    with pytest.raises(ValueError, match="takes 1 to 1"):
        sim.connect(ns, exp, weight=(0.1, 0.2))
    with pytest.raises(ValueError, match=r"weight\[1\] must be a finite number"):
        sim.connect(ns, syn, weight=(0.1, math.nan))


def test_epoch_engine_keeps_weight_vectors_on_the_targets_rank(soma):
    load("fdsyn")

    def run(epochs: bool):
        cell = hb.Cell(str(soma)).insert("hh")
        syn = cell.place("fdsyn")
        if not epochs:
            sim = hb.Simulation(cell)
            sim.connect(sim.vec_stim([1.0, 4.0, 5.0]), syn, weight=0.02, delay=1.0)
            key = sim.record("v")
            return sim.run(10.0)[key], sim._netcon_table.weight_vector(0)
        sim = EpochSimulation([cell], gids=[0])
        sim.vec_stim([1.0, 4.0, 5.0], gid=1)
        sim.add_input(1, syn, weight=0.02, delay=1.0)
        key = sim.record("v")
        sim.receive(*sim.begin(10.0))
        while sim.t < 10.0 - 0.0125:
            sim.receive(*sim.advance(min(40, sim.n_steps - round(sim.t / 0.025))))
        return sim.finish()[key], sim.inputs.weight_vector(0)

    v_ref, w_ref = run(False)
    v, w = run(True)
    assert w.tolist() == w_ref.tolist() and w[3] == 6.0
    assert np.array_equal(v, v_ref)


def test_a_network_over_ranks_keeps_weight_vectors(soma):
    """A network description with weight vectors, run by epochs (each NetCon on its
    target's rank), against the one-process engine given the same NetCons."""
    from hinesbatch import run_network
    from hinesbatch.network import Network
    from hinesbatch.network.parallel import SerialCommunicator

    load("fdsyn")

    def build(gid):
        cell = hb.Cell(str(soma)).insert("hh")
        cell.place("fdsyn")
        return cell

    net = Network()
    stim = net.net_stim(start=1.0, interval=2.0, number=6)          # gid 0
    net.add_cells(2, build=build, compartments=1)                    # gids 1, 2
    conns = [(stim, 1, (0.1,), 0.5), (1, 2, (0.08, 5.0, 5.0, 5.0), 1.0),
             (stim, 2, 0.01, 2.0)]
    for s, t, w, d in conns:
        net.connect(s, t, "fdsyn[0]", weight=w, delay=d)
    assert net.connections["weight_vectors"] == {1: (0.08, 5.0, 5.0, 5.0)}
    key = net.record("v", 2, "soma[0](0.5)")
    got = run_network(net, 20.0, comm=SerialCommunicator())[key]

    one = hb.Simulation([build(1), build(2)], backend="serial")
    ns = one.net_stim(start=1.0, interval=2.0, number=6)
    sources = {stim: ns, 1: one.spike_source(0), 2: one.spike_source(1)}
    for s, t, w, d in conns:
        one.connect(sources[s], one.cells[t - 1].point_processes[0], weight=w, delay=d)
    key2 = one.record("v", cell=1)
    spikes = one.record_spikes(sources[1])
    res = one.run(20.0)
    assert res.spikes[spikes].size > 0, "gid 1 must fire for its NetCon to gid 2 to act"
    # the 5.0s given were replaced by NET_RECEIVE's INITIAL, then each event updated them
    arrivals = [ts + 1.0 for ts in res.spikes[spikes].tolist()]
    assert tuple(one._netcon_table.weight_vector(1)[1:]) == fdsyn_reference(arrivals)
    assert got.tobytes() == res[key2].tobytes()


def test_the_gpu_engine_refuses_self_events(soma, monkeypatch):
    from hinesbatch.engine.gpu.devices import EMULATION_ENV

    monkeypatch.setenv(EMULATION_ENV, "1")
    load("pulsesyn")
    cell = hb.Cell(str(soma)).insert("pas")
    cell.place("pulsesyn")
    with pytest.raises(ValueError, match="mechanism pulsesyn: self-events \\(net_send\\) "
                                         "are not run by the gpu backend"):
        hb.Simulation(cell, backend="gpu").run(1.0)


# ---- net_event: a point process as a spike source ------------------------------------------
def test_net_event_is_lowered_and_counted_with_the_self_events():
    from hinesbatch.mechanisms.codegen import MechanismCode

    m = translate(DATA / "ticker.mod").mechanism
    assert "net_event(t)" in m.net_receive
    code = MechanismCode(m)
    assert code.receive_sends == 2 and code.receive_events == 1
    assert count_net_sends(m.net_receive) == 1


def test_net_send_adds_t_to_the_leftmost_term_as_nocmodl_writes_it():
    """nocmodl writes ``net_send(a + b, 1)`` as ``t + a + b``: C rounds ``(t + a) + b``,
    which differs in the last bit from ``t + (a + b)`` (t = 0.1, a = 0.2, b = 0.3)."""
    from hinesbatch.mechanisms.codegen import MechanismCode

    mech = Mechanism(name="nsum", kind="point", order=50, parameters=(Variable("a", 0.2),
                                                                      Variable("b", 0.3)),
                     net_receive="net_send(a + b, 1.0)\nnet_send(a * b, 2.0)\n")
    src = MechanismCode(mech).module_functions()
    assert "_S[_ns, 0] = ((_t + _D_nsum[0, _j]) + _D_nsum[1, _j])" in src
    assert "_S[_ns, 0] = (_t + (_D_nsum[0, _j] * _D_nsum[1, _j]))" in src
    assert (0.1 + 0.2) + 0.3 != 0.1 + (0.2 + 0.3)


@pytest.mark.parametrize("backend", ["serial", "multicore"])
def test_a_point_process_sends_its_spikes_through_its_netcons(soma, backend):
    """ticker A spikes at 1, 3.5, 6, 8.5 ms; its NetCons (delays 0.5 and 0) reach ticker
    B (flag 0 counts in nin) twice per spike; B's own spikes reach nothing."""
    load("ticker")
    cell = hb.Cell(str(soma)).insert("pas")
    a = cell.place("ticker", start=1.0, interval=2.5, number=4)
    b = cell.place("ticker", start=2.0, interval=1.0, number=3)
    sim = hb.Simulation(cell, backend=backend)
    sim.connect(a, b, weight=1.0, delay=0.5)
    sim.connect(a, b, weight=1.0, delay=0.0)
    ka, kb = sim.record_spikes(a), sim.record_spikes(b)
    kn = sim.record("nin", target=b)
    res = sim.run(8.0)
    np.testing.assert_array_equal(res.spikes[ka], [1.0, 3.5, 6.0])
    np.testing.assert_array_equal(res.spikes[kb], [2.0, 3.0, 4.0])
    assert res.spike_gids[ka] == 0 and ka == "spikes@0:ticker[0]"
    # each spike of a arrives twice: at ts (acts at once) and ts + 0.5
    assert res[kn][-1] == 6
    assert res[kn][round(1.0 / 0.025) + 1] == 1      # the delay-0 event at 1 ms
    assert sim.point_source(a) is sim.point_source(a)


def test_only_a_point_process_that_calls_net_event_is_a_source(soma):
    load("ticker", "pulsesyn")
    cell = hb.Cell(str(soma)).insert("pas")
    syn = cell.place("pulsesyn")
    sim = hb.Simulation(cell)
    with pytest.raises(ValueError, match=r"pulsesyn \(pulsesyn\[0\] of cell 0\) is not a "
                                         "spike source: its NET_RECEIVE does not call "
                                         "net_event"):
        sim.connect(syn, syn, weight=1.0)
    with pytest.raises(ValueError, match="is not a spike source"):
        sim.record_spikes(syn)
    other = hb.Cell(str(soma)).place("ticker")
    with pytest.raises(ValueError, match="not part of this simulation"):
        sim.point_source(other)


def test_net_event_without_netcons_sends_nothing(soma):
    load("ticker")
    cell = hb.Cell(str(soma)).insert("pas")
    t = cell.place("ticker", number=3)
    sim = hb.Simulation(cell)
    key = sim.record("count", target=t)
    assert sim.run(10.0)[key][-1] == 3


def test_the_gpu_engine_refuses_net_event(soma, monkeypatch):
    from hinesbatch.engine.gpu.devices import EMULATION_ENV

    monkeypatch.setenv(EMULATION_ENV, "1")
    load("ticker")
    cell = hb.Cell(str(soma)).insert("pas")
    cell.place("ticker")
    with pytest.raises(ValueError, match=r"mechanism ticker: spikes of point processes "
                                         r"\(net_event\) are not run by the gpu backend"):
        hb.Simulation(cell, backend="gpu").run(1.0)


def test_the_c_emitter_refuses_net_event():
    from hinesbatch.mechanisms.c_emitter import emit_c
    from hinesbatch.mechanisms.codegen import CodegenError

    with pytest.raises(CodegenError, match=r"mechanism ticker: .*\(net_event\) are not "
                                           "emitted as C"):
        emit_c(translate(DATA / "ticker.mod").mechanism)
