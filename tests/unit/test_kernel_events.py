"""Events the CPU kernel runs itself (NET_RECEIVE of synapses that send nothing), against
the same runs with every event delivered by the host between kernel calls.

The host's delivery is NEURON's (the validation tests compare it with NEURON); the
kernel's must give the same bits, and fewer kernel calls.
"""
from __future__ import annotations

import numpy as np
import pytest
from gpu_engine_cases import REAL, weight_vector_run

import hinesbatch as hb
from hinesbatch.engine import cpu_loop
from hinesbatch.engine.kernels import kernel_receivers


@pytest.fixture
def host_delivery(monkeypatch):
    """Every event delivered by the host, as if no NET_RECEIVE could run in the kernel."""
    def use():
        monkeypatch.setattr(cpu_loop, "kernel_receivers", lambda codes: set())
    return use


def counting(monkeypatch, sim) -> list:
    """The steps of each call of ``sim``'s epoch kernel from now on (after a first run
    made its module, which later runs of the same mechanisms share)."""
    calls = []
    module = sim._km.module
    kernel = getattr(module.advance_epoch, "counted", module.advance_epoch)

    def count(*args):
        calls.append(args[0])
        return kernel(*args)

    count.counted = kernel
    monkeypatch.setattr(module, "advance_epoch", count)
    return calls


def small_network(backend):
    """Four hh cells of a real morphology, each with an ExpSyn and an Exp2Syn; cell k's
    spikes reach cell k+1 (delay 1.5 ms), a VecStim drives cell 0 and a NetStim cell 2."""
    cells = [hb.Cell(REAL / "ko20x-07.CNG.swc", nseg=1).insert("hh") for _ in range(4)]
    sim = hb.Simulation(cells, backend=backend)
    syns = [(c.place("ExpSyn", "soma[0](0.5)", tau=2.0), c.place("Exp2Syn", "soma[0](0.5)"))
            for c in cells]
    for k in range(3):
        sim.connect((k, "soma[0](0.5)"), syns[k + 1][0], weight=0.05, delay=1.5)
        sim.connect((k, "soma[0](0.5)"), syns[k + 1][1], weight=0.02, delay=1.5)
    sim.connect(sim.vec_stim(np.arange(0.5, 30.0, 3.1)), syns[0][0], weight=0.08, delay=1.0)
    sim.connect(sim.net_stim(start=2.0, interval=5.0, number=4), syns[2][1], weight=0.03,
                delay=2.0)
    keys = [sim.record("v", cell=k) for k in range(4)]
    keys += [sim.record("g", target=s) for pair in syns for s in pair]
    spikes = [sim.record_spikes(sim.spike_source(k)) for k in range(4)]
    return sim, keys, spikes


@pytest.mark.parametrize("backend", ["serial", "multicore"])
def test_kernel_delivery_gives_the_hosts_bits_in_fewer_calls(backend, host_delivery,
                                                             monkeypatch):
    runs = {}
    for how in ("kernel", "host"):
        if how == "host":
            host_delivery()
        sim, keys, spikes = small_network(backend)
        sim.run(1.0)
        calls = counting(monkeypatch, sim)
        runs[how] = (sim.run(40.0), list(calls))
    (a, calls_a), (b, calls_b) = runs["kernel"], runs["host"]
    assert sum(a.spikes[s].size for s in spikes) > 10        # the cells drive each other
    assert [a.spikes[s].tolist() for s in spikes] == [b.spikes[s].tolist() for s in spikes]
    for k in keys:
        assert a[k].tobytes() == b[k].tobytes(), k
    assert sum(calls_a) == sum(calls_b) == 1600
    # the host's stretches also end at each step where a cell's spike reaches a synapse
    assert len(calls_b) - len(calls_a) >= sum(a.spikes[s].size for s in spikes[:3])


@pytest.mark.usefixtures("builtins_only")
def test_weight_vectors_written_in_the_kernel_reach_their_netcons(host_delivery):
    """fdsyn keeps its state in each NetCon's weight vector and countsyn counts in one:
    the kernel's rows go back to the NetCons, as the host's writes do."""
    pytest.importorskip("neuron.nmodl", reason="the NMODL parser comes with pip neuron")
    from nmodl_files import load

    load("fdsyn", "countsyn")
    a, keys, _, wa = weight_vector_run("serial", number=8, dur=20.0, tstop=30.0)
    host_delivery()
    b, _, _, wb = weight_vector_run("serial", number=8, dur=20.0, tstop=30.0)
    assert wa[2].tolist() == [0.01, 8.0] and wa[0][3] > 0.0 and wa[1][3] > wa[0][3]
    assert all(np.array_equal(x, y) for x, y in zip(wa, wb))
    for k in keys:
        assert a[k].tobytes() == b[k].tobytes(), k


def test_receivers_are_the_synapses_that_send_nothing():
    from hinesbatch import mechanisms
    from hinesbatch.mechanisms.codegen import MechanismCode

    codes = [MechanismCode(mechanisms.get(m), tables=True)
             for m in ("hh", "ExpSyn", "Exp2Syn")]
    assert kernel_receivers(codes) == {1, 2}
