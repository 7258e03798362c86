"""NMODL ``ARTIFICIAL_CELL``: lowering (and what it refuses), artificial cells in a
simulation (made without a cell, connected, recorded), the same events on every backend.

Files: ``tests/data/nmodl/artstim.mod`` (a spike train, gaps stretched by exprand draws,
restarted and stopped by NetCon events) and ``artlif.mod`` (a leaky integrate-and-fire
cell fed by NetCon events); refused files are written here. NEURON's numbers for the same
files: ``tests/validation/test_nmodl_artificial_neuron.py``.
"""
from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
from nmodl_files import artificial_pair

pytest.importorskip("neuron", reason="NMODL files are read with neuron.nmodl")

import hinesbatch as hb  # noqa: E402
from hinesbatch import mechanisms  # noqa: E402
from hinesbatch.engine.artificial import ArtificialCell  # noqa: E402
from hinesbatch.model.sections import SectionCell  # noqa: E402
from hinesbatch.nmodl import NmodlError, translate_text  # noqa: E402

DATA = Path(__file__).parents[1] / "data" / "nmodl"


def marked_line(text: str) -> int:
    """The 1-based line holding ``<-- here``."""
    return next(k for k, line in enumerate(text.splitlines(), 1) if "<-- here" in line)


@pytest.fixture
def loaded(tmp_path):
    """artstim and artlif registered (and removed afterwards)."""
    for name in ("artstim.mod", "artlif.mod"):
        shutil.copy(DATA / name, tmp_path / name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        names = hb.load_mechanisms(tmp_path)
    yield names
    for n in names:
        mechanisms.unregister(n)


def soma():
    return SectionCell(["soma[0]"], [-1], [10.0], [10.0]).insert("hh")


# --- lowering ----------------------------------------------------------------------------

def test_an_artificial_cell_translates_to_an_artificial_mechanism():
    mech = translate_text((DATA / "artstim.mod").read_text(), "artstim.mod").mechanism
    assert mech.kind == "artificial"
    assert mech.parameter_names == ("start", "mean", "number", "jitter")
    assert "net_send(start, 1.0)" in mech.initial
    assert "net_event(t)" in mech.net_receive
    assert mech.stream_calls          # exprand in gap(), reached from NET_RECEIVE
    assert not mech.breakpoint and not mech.currents


BASE = """
NEURON {
    ARTIFICIAL_CELL acell
    RANGE tau
}
PARAMETER { tau = 2 (ms) }
ASSIGNED { x }
INITIAL { x = 0 }
NET_RECEIVE(w) { x = x + w  net_event(t) }
"""

REFUSED = [
    ("v in INITIAL", BASE.replace("INITIAL { x = 0 }", "INITIAL { x = v } : <-- here"),
     "ARTIFICIAL_CELL v", "acell reads v: an artificial cell has no membrane potential"),
    ("v in NET_RECEIVE", BASE.replace("x = x + w", "x = x + w*v : <-- here\n"),
     "ARTIFICIAL_CELL v", "acell reads v"),
    ("v in a FUNCTION", BASE.replace("x = x + w", "x = f(w)") + "FUNCTION f(a) {\n"
     "    f = a + v : <-- here\n}\n", "ARTIFICIAL_CELL v", "acell reads v"),
    ("a current", BASE.replace("RANGE tau", "RANGE tau\n NONSPECIFIC_CURRENT i : <-- here")
     .replace("ASSIGNED { x }", "ASSIGNED { x i (nA) }"), "ARTIFICIAL_CELL NONSPECIFIC_CURRENT",
     "acell writes the current i: an artificial cell has no membrane"),
    ("an electrode current", BASE.replace("RANGE tau", "RANGE tau\n ELECTRODE_CURRENT i "
                                          ": <-- here")
     .replace("ASSIGNED { x }", "ASSIGNED { x i (nA) }"), "ARTIFICIAL_CELL ELECTRODE_CURRENT",
     "acell writes the current i"),
    ("an ion", BASE.replace("RANGE tau", "RANGE tau\n USEION ca READ cai : <-- here"),
     "ARTIFICIAL_CELL USEION", "acell uses the ion ca: an artificial cell has no membrane"),
    ("a BREAKPOINT", BASE + "BREAKPOINT { : <-- here\n    x = x + 1\n}\n",
     "ARTIFICIAL_CELL BREAKPOINT", "acell has a BREAKPOINT block"),
    ("a TABLE", BASE.replace("x = x + w", "x = x + g(w)") + "FUNCTION g(a) {\n"
     "    TABLE FROM 0 TO 1 WITH 10 : <-- here\n    g = a*a\n}\n", "ARTIFICIAL_CELL TABLE",
     "acell has a TABLE"),
]


@pytest.mark.parametrize("what, text, construct, reason", REFUSED,
                         ids=[r[0] for r in REFUSED])
def test_what_an_artificial_cell_cannot_have_is_refused(what, text, construct, reason):
    with pytest.raises(NmodlError) as info:
        translate_text(text, "acell.mod")
    err = info.value
    assert err.construct == construct, str(err)
    assert err.reason.startswith(reason), str(err)
    assert err.line == marked_line(text), str(err)


def test_check_counts_each_refusal_of_an_artificial_cell_under_its_own_label(tmp_path):
    from hinesbatch.nmodl.check import coverage

    for what, text, _, _ in REFUSED[:4]:
        (tmp_path / f"{what.replace(' ', '_')}.mod").write_text(text)
    (tmp_path / "ok.mod").write_text(BASE)
    got = coverage(tmp_path)
    assert got["translated"] == 1
    assert got["reasons"] == {"ARTIFICIAL_CELL v": 3, "ARTIFICIAL_CELL NONSPECIFIC_CURRENT": 1}


def test_a_function_argument_named_v_is_not_the_membrane_potential():
    text = BASE.replace("x = x + w", "x = f(w)") + "FUNCTION f(v) {\n    f = 2*v\n}\n"
    assert translate_text(text, "acell.mod").mechanism.kind == "artificial"


# --- in a simulation ---------------------------------------------------------------------

def test_a_regular_train_gives_neurons_arithmetic(loaded):
    """No jitter: INITIAL queues start; each spike queues ``t + mean`` (no 1e-10)."""
    sim = hb.Simulation(soma())
    a = sim.artificial_cell("artstim", start=2.0, mean=0.1, number=4)
    key = sim.record_spikes(a)
    t, expected = 2.0, []
    for _ in range(4):
        expected.append(t)
        t = t + 0.1
    res = sim.run(10.0)
    assert res.spikes[key].tolist() == expected == [2.0, 2.1, 2.2, 2.3000000000000003]
    assert res.spike_gids[key] == 1      # after the one cell
    assert sim.run(10.0).spikes[key].tolist() == expected      # finitialize rewinds it


def test_artificial_cells_are_sources_and_targets(loaded):
    """artstim -> artlif (weight 0.6: the second event within tau fires it) -> ExpSyn."""
    cell = soma()
    syn = cell.place("ExpSyn", "soma[0](0.5)")
    sim = hb.Simulation(cell)
    a = sim.artificial_cell("artstim", start=1.0, mean=1.0, number=3)
    lif = sim.artificial_cell("artlif", tau=5.0, refrac=10.0)
    sim.connect(a, lif, weight=0.6, delay=0.5)
    sim.connect(lif, syn, weight=0.01, delay=1.0)
    key = sim.record_spikes(lif)
    kv = sim.record("v")
    res = sim.run(10.0)
    assert res.spikes[key].tolist() == [2.5]      # the second event; the third refractory
    assert np.max(res[kv]) > -60.0                # the synapse moved v


@pytest.mark.parametrize("backend", ["multicore", "gpu"])
def test_every_backend_runs_the_same_events(loaded, backend, monkeypatch):
    """The events run on the host queue: multicore and the GPU engine (its host build)
    give the serial engine's spikes, v and artlif's recorded m, draws included."""
    if backend == "gpu":
        if shutil.which("g++") is None and shutil.which("c++") is None:
            pytest.skip("the host build of the GPU kernel needs g++")
        from hinesbatch.engine.gpu.devices import EMULATION_ENV

        monkeypatch.setenv(EMULATION_ENV, "1")

    def run(backend):
        cells = [soma(), soma()]
        syns = [c.place("ExpSyn", "soma[0](0.5)") for c in cells]
        sim = hb.Simulation(cells, backend=backend)
        a, lif = artificial_pair(sim, syns, number=12, weights=(0.004, 0.006))
        keys = [sim.record_spikes(x) for x in (a, lif)]
        kv = [sim.record("v", cell=k) for k in range(2)] + [sim.record("m", target=lif)]
        res = sim.run(30.0)
        return [res.spikes[k] for k in keys], [res[k] for k in kv], sim.random_state

    ref, got = run("serial"), run(backend)
    assert len(ref[0][0]) >= 3 and len(ref[0][1]) >= 1
    for r, g in zip(ref[0] + ref[1], got[0] + got[1]):
        np.testing.assert_array_equal(g, r)
    assert got[2] == ref[2] != 1        # the same draws were taken


def test_an_artificial_cell_has_no_location(loaded):
    cell = soma()
    with pytest.raises(ValueError, match=r"artstim is an ARTIFICIAL_CELL: it belongs to no "
                                         r"cell.*Simulation.artificial_cell\('artstim'"):
        cell.place("artstim", "soma[0](0.5)")
    with pytest.raises(ValueError, match="artstim is an ARTIFICIAL_CELL"):
        cell.insert("artstim")


@pytest.mark.parametrize("kind, params, message", [
    ("ExpSyn", {}, "ExpSyn is a point mechanism, not an ARTIFICIAL_CELL: place it"),
    ("hh", {}, "hh is a density mechanism, not an ARTIFICIAL_CELL: insert it"),
    ("NetStim", {}, r"NetStim is built in: use net_stim\(...\)"),
    ("artstim", {"tau": 1.0}, "artstim has no parameter or ASSIGNED variable 'tau'; "
                              "those: start, mean, number, jitter, count, running"),
    ("artstim", {"mean": float("nan")}, "artstim.mean must be a finite number"),
])
def test_artificial_cell_arguments_are_checked(loaded, kind, params, message):
    sim = hb.Simulation(soma())
    with pytest.raises(ValueError, match=message):
        sim.artificial_cell(kind, **params)


def test_connections_of_artificial_cells_are_checked(loaded, tmp_path):
    text = BASE.replace("x = x + w  net_event(t)", "x = x + w")
    (tmp_path / "silent.mod").write_text(text.replace("acell", "silent"))
    names = hb.load_mechanisms(tmp_path / "silent.mod")
    try:
        cell = soma()
        syn = cell.place("ExpSyn", "soma[0](0.5)")
        sim, other = hb.Simulation(cell), hb.Simulation(soma())
        quiet = sim.artificial_cell("silent")
        with pytest.raises(ValueError, match=r"silent\[0\] is not a spike source: the "
                                             "NET_RECEIVE of silent does not call net_event"):
            sim.connect(quiet, syn)
        with pytest.raises(ValueError, match="silent"):
            sim.record_spikes(quiet)
        stranger = other.artificial_cell("artstim")
        with pytest.raises(ValueError, match=r"artstim\[0\] is not an artificial cell of "
                                             "this simulation"):
            sim.connect(stranger, syn)
        with pytest.raises(ValueError, match=r"artstim\[0\] is not an artificial cell of "
                                             "this simulation"):
            sim.connect(sim.net_stim(), stranger)
        assert isinstance(quiet, ArtificialCell) and quiet.name == "silent[0]"
        sim.connect(sim.net_stim(number=1, start=1.0), quiet, weight=2.0)   # a target
        with pytest.raises(ValueError, match="silent has no variable 'y'; variables: "
                                             "tau, x"):
            sim.record("y", target=quiet)
        with pytest.raises(ValueError, match=r"artstim\[0\] is not an artificial cell of "
                                             "this simulation"):
            sim.record("count", target=stranger)
        sim.run(3.0)
    finally:
        for n in names:
            mechanisms.unregister(n)


def test_artificial_cells_in_a_network_give_the_one_process_engines_spikes(loaded):
    """A ring of 3 ringtest cells with an artstim (gid 3) onto cell 0 and an artlif
    (gid 4) fed by cell 0 and the artstim, onto cell 2: run_network (epochs, spike
    exchange, artificial spikes through the outbox) gives hb.Simulation's spikes."""
    from hinesbatch import run_network
    from hinesbatch.network.parallel import SerialCommunicator
    from hinesbatch.network.ringtest import RingtestParameters, ringtest

    net = ringtest(RingtestParameters(nring=1, ncell=3, npt=2))
    stim = net.artificial_cell("artstim", start=1.0, mean=2.0, number=10, jitter=0.5)
    lif = net.artificial_cell("artlif", tau=3.0, refrac=1.0)
    net.connect(stim, 0, "ExpSyn[0]", weight=0.02, delay=1.0)
    net.connect(stim, lif, weight=0.6, delay=0.5)
    net.connect(0, lif, weight=0.6, delay=1.5)
    net.connect(lif, 2, "ExpSyn[0]", weight=0.02, delay=2.0)
    assert [net.kind(g) for g in (stim, lif)] == ["artstim", "artlif"]
    res = run_network(net, 40.0, comm=SerialCommunicator())

    cells = [net.build_cell(int(g)) for g in net.cell_gids]
    sim = hb.Simulation(cells, backend="serial")
    sources = {g: sim.spike_source(g, *net.source_of(g)) for g in net.cell_gids.tolist()}
    for g in net.generator_gids.tolist():     # the ring's NetStim, then ours
        kind, params = net.generator(g)
        sources[g] = sim.net_stim(**params) if kind == "NetStim" else \
            sim.artificial_cell(kind, **params)
    conns = net.connections
    for s, t, syn, w, d in zip(conns["source"].tolist(), conns["target"].tolist(),
                               conns["synapse"], conns["weight"], conns["delay"]):
        target = sources[t] if t in (stim, lif) else \
            next(p for p in cells[t].point_processes if p.name == syn)
        sim.connect(sources[s], target, weight=float(w), delay=float(d))
    keys = {g: sim.record_spikes(x) for g, x in sources.items()}
    ref = sim.run(40.0)
    for g, key in keys.items():
        np.testing.assert_array_equal(res.spikes[f"spikes@{g}"], ref.spikes[key],
                                      err_msg=f"gid {g}")
    assert ref.spikes[keys[lif]].size >= 2 and ref.spikes[keys[stim]].size >= 5


def test_a_network_refuses_a_netcon_into_an_artificial_cell_without_net_receive(loaded,
                                                                                tmp_path):
    from hinesbatch.network import Network, NetworkCheckError

    (tmp_path / "tick.mod").write_text(
        "NEURON { ARTIFICIAL_CELL tick }\nINITIAL { }\n")
    names = hb.load_mechanisms(tmp_path / "tick.mod")
    try:
        net = Network()
        net.add_cells([soma()])
        quiet = net.artificial_cell("tick")
        net.connect(0, quiet, weight=1.0, delay=1.0)
        with pytest.raises(NetworkCheckError, match="connection 0: target gid 1 is an "
                                                    "artificial cell tick without a "
                                                    "NET_RECEIVE"):
            net.check(0.025)
        with pytest.raises(ValueError, match="NetStim is built in"):
            net.artificial_cell("NetStim")
    finally:
        for n in names:
            mechanisms.unregister(n)


def test_assigned_variables_are_set_per_instance(tmp_path):
    """NEURON's hoc sets an artificial cell's RANGE ASSIGNED variables before finitialize
    (integrate-and-fire files keep their constants there): ``lag`` here, which INITIAL
    reads to time the one spike."""
    (tmp_path / "lagged.mod").write_text("""
NEURON { ARTIFICIAL_CELL lagged RANGE lag }
ASSIGNED { lag (ms) }
INITIAL { net_send(lag, 1) }
NET_RECEIVE(w) { if (flag == 1) { net_event(t) } }
""")
    names = hb.load_mechanisms(tmp_path / "lagged.mod")
    try:
        sim = hb.Simulation(soma())
        keys = [sim.record_spikes(sim.artificial_cell("lagged", lag=lag)) for lag in (1.5, 3.25)]
        keys.append(sim.record_spikes(sim.artificial_cell("lagged")))    # lag 0
        res = sim.run(5.0)
        assert [res.spikes[k].tolist() for k in keys] == [[1.5], [3.25], [0.0]]
    finally:
        for n in names:
            mechanisms.unregister(n)


@pytest.mark.parametrize("backend", ["serial", "multicore"])
def test_a_simulation_of_artificial_cells_only(loaded, backend):
    """No cell at all (NEURON's networks of IntFire-like cells): the events run alone;
    artstim every 1 ms into artlif (0.6 a spike, tau 5 ms: every second one fires it)."""
    sim = hb.Simulation([], backend=backend)
    a = sim.artificial_cell("artstim", start=2.0, mean=1.0, number=6)
    lif = sim.artificial_cell("artlif", refrac=0.1)
    sim.connect(a, lif, weight=0.6, delay=0.5)
    keys = [sim.record_spikes(x) for x in (a, lif)]
    res = sim.run(10.0)
    assert res.spikes[keys[0]].tolist() == [2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    assert res.spikes[keys[1]].tolist() == [3.5, 5.5, 7.5]
    assert res.spike_gids[keys[0]] == 0


def test_the_gpu_backend_refuses_a_simulation_without_cells(loaded):
    sim = hb.Simulation([], backend="gpu")
    sim.artificial_cell("artstim")
    with pytest.raises(ValueError, match="backend 'gpu' steps cells on the device, and this "
                                         "simulation has none"):
        sim.run(5.0)


def test_a_variables_history_is_sampled_as_neuron_records():
    """NEURON records at the end of a step, before the events due by then: the sample at
    t_{n+1} holds the events with te <= t_n + dt/2. dt 0.5: grid 0, 0.5, 1, 1.5, 2."""
    from hinesbatch.engine.artificial import sampled

    tgrid = np.array([0.0, 0.5, 1.0, 1.5, 2.0])
    te = [-np.inf, 0.0, 0.25, 0.5, 1.25]       # INITIAL, then four events
    values = [1.0, 2.0, 3.0, 4.0, 5.0]
    # t0: te <= 0; t1: te <= 0.25; t2: te <= 0.75; t3: te <= 1.25; t4: te <= 1.75
    assert sampled(te, values, tgrid, 0.5).tolist() == [2.0, 3.0, 4.0, 5.0, 5.0]
    assert sampled(te, values, tgrid, 0.5, every=2).tolist() == [2.0, 4.0, 5.0]
    assert sampled([-np.inf], [7.0], tgrid, 0.5).tolist() == [7.0] * 5


def test_an_artificial_cells_variable_is_recorded(loaded):
    """artlif's m: 0.4 after the event at 2.5 ms (delay 0.5 from 2.0), shown from the
    sample at t_{n+1} with t_n + dt/2 >= 2.5, and decayed-then-summed after the next."""
    sim = hb.Simulation([])
    a = sim.artificial_cell("artstim", start=2.0, mean=1.0, number=2)
    lif = sim.artificial_cell("artlif", tau=5.0)
    sim.connect(a, lif, weight=0.4, delay=0.5)
    key = sim.record("m", target=lif)
    res = sim.run(5.0)
    assert key == "m@artlif[0]" and res.units[key] == "1"
    m, t = res[key], res.time(key)
    first = int(np.argmax(m > 0))
    assert m[first] == 0.4 and t[first - 1] + 0.0125 >= 2.5 > t[first - 2] + 0.0125
    assert m[-1] == 0.4 * np.exp(-(3.5 - 2.5) / 5.0) + 0.4 < 1.0
