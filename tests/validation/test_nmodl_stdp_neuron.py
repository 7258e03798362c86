"""The constructs of STDP synapses against NEURON: NET_RECEIVE assigning its weight,
FOR_NETCONS and WATCH, the same files compiled by ``nrnivmodl``.

Files (``tests/data/nmodl``, written for these tests): ``pairsyn.mod``, a pair-based STDP
synapse with all three (a WATCH on its own v for postsynaptic spikes, installed by a
``net_send(0, 1)`` from INITIAL; depression of the event's own weight; potentiation of
every NetCon's weight by FOR_NETCONS); ``decsyn.mod``, a weight that shrinks at each of its
events (an assigned weight alone); ``allsyn.mod``, FOR_NETCONS alone (every event scales
the weights of all NetCons onto the synapse and counts them); ``ordsyn.mod``, FOR_NETCONS
writing the place it visits each NetCon at into the weight vectors; ``vwatch.mod``, WATCH
alone (each rise of v through a threshold opens a conductance); ``wpair.mod``, two WATCH
conditions at once, crossed in one step, the first event activating both again (which
removes the second's event) and NetCon events activating them at other times, v above or
below. VecStim is NEURON's ``vecevent.mod``.

Protocol: a one-compartment soma (radius 10 µm) with hh, a current clamp that makes it
spike (the postsynaptic spikes), presynaptic spikes from a NetStim and a VecStim through
NetCons made in an interleaved order, dt 0.025 ms, 40-50 ms. Acceptance, on both CPU
engines: max |ΔV| = 0 at every step, every NetCon's weight vector (``NetCon.weight``)
identical after the run, identical spike times of the soma.
"""
from __future__ import annotations

import nmodl_compare as nc
import numpy as np
import pytest

pytestmark = [pytest.mark.neuron,
              pytest.mark.filterwarnings("ignore::UserWarning")]  # notices, SWC notes

FILES = ("pairsyn.mod", "decsyn.mod", "allsyn.mod", "ordsyn.mod", "vwatch.mod",
         "wpair.mod", "vecevent.mod")


compiled = nc.compiled_fixture(FILES)


def check(model: dict, lib: str, backend: str) -> dict:
    """Run ``model`` in NEURON and hinesbatch; assert identical traces, weights and
    spikes; NEURON's events."""
    ref_events, got_events = {}, {}
    ref = nc.run_neuron(dict(model, events=True), lib, ref_events)
    got = nc.run_hinesbatch(dict(model, events=True), got_events, backend=backend)
    assert ref.shape == got.shape
    assert ref.max() > 0.0, "the soma should spike: the comparison must cover a spike"
    dv = float(np.max(np.abs(ref - got)))
    assert dv == 0.0, f"max |dV| = {dv} mV"
    assert [[float(x) for x in w] for w in got_events["weights"]] == ref_events["weights"]
    assert [float(x) for x in got_events["spikes"]] == ref_events["spikes"]
    return ref_events


BACKENDS = pytest.mark.parametrize("backend", ["serial", "multicore"])


@BACKENDS
def test_stdp_synapse_with_all_three_constructs(compiled, tmp_path, backend):
    """pairsyn: two NetCons from a NetStim and one from a VecStim (made between them),
    weights depressed at their events and potentiated at each postsynaptic spike."""
    lib = compiled.lib
    model = {"swc": nc.one_point_soma(tmp_path), "insert": [["hh", {}]],
             "point": [["pairsyn", "soma[0]", 0.5, {}]], "iclamp": [2.0, 30.0, 0.15],
             "sources": [["netstim", 1.0, 3.7, 9], ["vecstim", [0.5, 6.0, 12.25, 20.0]]],
             "netcons": [[0, 0, 0.004, 1.0], [1, 0, [0.005, 3.0], 0.5],
                         [0, 0, 0.003, 2.5]],
             "tstop": 40.0}
    events = check(model, lib, backend)
    start = [0.004, 0.005, 0.003]
    assert all(w[0] != w0 for w, w0 in zip(events["weights"], start)), \
        "every weight should have changed"
    assert len(events["spikes"]) >= 2


@BACKENDS
def test_assigned_weight_acts_on_events_already_queued(compiled, tmp_path, backend):
    """decsyn: a NetStim every 0.7 ms through NetCons of delay 5 and 3.3 ms, so several
    events of a NetCon are queued when its weight shrinks; each carries the weight of
    its delivery."""
    lib = compiled.lib
    model = {"swc": nc.one_point_soma(tmp_path), "insert": [["hh", {}]],
             "point": [["decsyn", "soma[0]", 0.5, {}]],
             "netstim": [1.0, 0.7, 12, [[0, 0.01, 5.0], [0, 0.006, 3.3]]], "tstop": 30.0}
    events = check(model, lib, backend)
    assert events["weights"][0][0] == pytest.approx(0.01 * 0.8 ** 12)


@BACKENDS
def test_for_netcons_alone(compiled, tmp_path, backend):
    lib = compiled.lib
    model = {"swc": nc.one_point_soma(tmp_path), "insert": [["hh", {}]],
             "point": [["allsyn", "soma[0]", 0.5, {}]],
             "netstim": [1.0, 2.0, 8, [[0, 0.01, 1.0]]],
             "vecstim": [[0.5, 3.0, 7.25], [[0, [0.02, 2.0], 0.5]]], "tstop": 30.0}
    events = check(model, lib, backend)
    assert [w[1] for w in events["weights"]] == [11.0, 11.0]


@BACKENDS
def test_for_netcons_visits_netcons_by_source_in_neurons_order(compiled, tmp_path,
                                                               backend):
    """ordsyn, NetCons made A, B, A, C, B from sources A (NetStim), B (VecStim), C
    (NetStim): NEURON visits A's, then B's, then C's, each source's in creation order."""
    lib = compiled.lib
    model = {"swc": nc.one_point_soma(tmp_path), "insert": [["hh", {}]],
             "point": [["ordsyn", "soma[0]", 0.5, {}]], "iclamp": [1.0, 20.0, 0.2],
             "sources": [["netstim", 1.0, 4.0, 2], ["vecstim", [2.0]],
                         ["netstim", 3.0, 4.0, 1]],
             "netcons": [[0, 0, 0.001, 1.0], [1, 0, 0.001, 1.0], [0, 0, 0.001, 1.5],
                         [2, 0, 0.001, 1.0], [1, 0, 0.001, 1.0]],
             "tstop": 20.0}
    events = check(model, lib, backend)
    places = [int(w[1]) % 10 for w in events["weights"]]
    assert places == [1, 3, 2, 5, 4]


@BACKENDS
def test_watch_alone(compiled, tmp_path, backend):
    lib = compiled.lib
    model = {"swc": nc.one_point_soma(tmp_path), "insert": [["hh", {}]],
             "point": [["vwatch", "soma[0]", 0.5, {}]], "iclamp": [1.0, 30.0, 0.3],
             "tstop": 40.0}
    events = check(model, lib, backend)
    assert len(events["spikes"]) >= 2


@BACKENDS
@pytest.mark.parametrize("netstim", [False, True])
def test_two_watch_conditions_crossed_in_one_step(compiled, tmp_path, backend, netstim):
    """wpair: v rises through -21 and -20 mV within one step at most spikes; NEURON
    queues (v > -20)'s event first (activated first), whose NET_RECEIVE activates both
    again and so removes the other's event. With a NetStim, NetCon events activate them
    again at their own times."""
    lib = compiled.lib
    model = {"swc": nc.one_point_soma(tmp_path), "insert": [["hh", {}]],
             "point": [["wpair", "soma[0]", 0.5, {}]], "iclamp": [1.0, 40.0, 0.3],
             "tstop": 50.0}
    if netstim:
        model["netstim"] = [0.7, 2.3, 20, [[0, 0.0, 0.4]]]
    check(model, lib, backend)
