"""The network runner in one process: epochs, exchange and delivery against the one-process
engine (``hb.Simulation`` with NetCons), recordings by gid, and the epoch engine's rules.

Under ``mpiexec`` the same runner is checked by ``test_network_ringtest_mpi.py``."""
import pytest
from network_cases import grid_times_past_the_clock, one_step_epochs

import hinesbatch as hb
from hinesbatch import run_network
from hinesbatch.engine.epochs import EpochSimulation
from hinesbatch.network import Network
from hinesbatch.network.parallel import LateSpikeError, SerialCommunicator, epoch_steps
from hinesbatch.network.ringtest import RingtestParameters, ringtest, ringtest_cell

TSTOP = 40.0


def mixed_network() -> Network:
    """Two rings of 3 ringtest cells, plus a VecStim and a NetStim onto both synapses
    with delays from 1 to 3.3 ms, and recordings."""
    net = ringtest(RingtestParameters(nring=2, ncell=3, npt=2))
    vec = net.vec_stim([0.5, 3.0, 7.25, 7.25, 12.0])
    net.connect(vec, 1, "ExpSyn[0]", weight=0.02, delay=1.5)
    net.connect(vec, 4, 1, weight=0.005, delay=3.3)        # by index: ExpSyn[1]
    stim = net.net_stim(start=2.0, interval=4.0, number=5)
    net.connect(stim, 5, "ExpSyn[0]", weight=0.015, delay=2.0)
    net.connect(2, 3, "ExpSyn[0]", weight=0.01, delay=1.25)  # across the rings
    net.record("v", 0, "soma[0](0.5)")
    net.record("v", 4, "dend[0](0.5)")
    net.record("m_hh", 5, "soma[0](0.5)")
    return net


def one_process_engine(net: Network, tstop: float):
    """The same network through hb.Simulation: NetCons fan out at once, no epochs."""
    cells = [net.build_cell(int(g)) for g in net.cell_gids]
    sim = hb.Simulation(cells, backend="serial")
    sources = {}
    for g in net.cell_gids.tolist():
        sources[g] = sim.spike_source(g, *net.source_of(g))
    for g in net.generator_gids.tolist():
        kind, params = net.generator(g)
        sources[g] = sim.net_stim(**params) if kind == "NetStim" else \
            sim.vec_stim(params["times"])
    conns = net.connections
    for s, t, syn, w, d in zip(conns["source"], conns["target"], conns["synapse"],
                               conns["weight"], conns["delay"]):
        pps = cells[t].point_processes
        target = next(p for p in pps if p.name == syn) if isinstance(syn, str) else pps[syn]
        sim.connect(sources[int(s)], target, weight=float(w), delay=float(d))
    keys = {g: sim.record_spikes(s) for g, s in sources.items()}
    traces = {f"{v}@{g}:{loc}": sim.record(v, cell=g, location=loc)
              for v, g, loc in net.records}
    res = sim.run(tstop)
    return {g: res.spikes[k] for g, k in keys.items()}, \
        {k: res[key] for k, key in traces.items()}


def test_epochs_give_the_one_process_engines_spikes_and_traces():
    net = mixed_network()
    res = run_network(net, TSTOP, comm=SerialCommunicator())
    want_spikes, want_traces = one_process_engine(net, TSTOP)
    assert sum(s.size for s in want_spikes.values()) > 15
    for g, times in want_spikes.items():
        assert res.spikes[f"spikes@{g}"].tolist() == times.tolist(), f"gid {g}"
    for key, trace in want_traces.items():
        assert res[key].tobytes() == trace.tobytes(), key
    t, epochs = 0.0, 0                # epochs end strictly before t + min_delay
    while (steps := epoch_steps(t, 1.0, 0.025, tstop=TSTOP)) > 0:
        for _ in range(steps):
            t = (t + 0.0125) + 0.0125
        epochs += 1
    assert res.meta["epochs"] == epochs and res.meta["min_delay"] == 1.0
    assert res.meta["n_ranks"] == 1 and len(res.meta["compute_s"]) == 1
    assert res.meta["setup_s"][0] > 0 and res.meta["exchange_s"][0] >= 0


def test_an_event_due_at_the_end_of_an_epochs_one_step_acts_there():
    # a delay of dt: an epoch is one step, which the accumulated clock makes longer than
    # dt by rounding; a VecStim spike at n*dt (just past t_n) is due at the step's end
    assert grid_times_past_the_clock(10.0, 0.025) == [0.125, 0.15000000000000002, 2.35]
    net = one_step_epochs(0.025)
    res = run_network(net, 10.0, comm=SerialCommunicator())
    want_spikes, want_traces = one_process_engine(net, 10.0)
    assert res.meta["min_delay"] == 0.025 and res.meta["epochs"] == 400
    assert want_spikes[1].size > 0          # the VecStim makes cell 1 fire
    for g, spikes in want_spikes.items():
        assert res.spikes[f"spikes@{g}"].tolist() == spikes.tolist(), f"gid {g}"
    for key, trace in want_traces.items():
        assert res[key].tobytes() == trace.tobytes(), key


def test_results_write_the_sonata_report_and_raster(tmp_path):
    pytest.importorskip("h5py")
    pytest.importorskip("matplotlib")
    from hinesbatch.io.sonata import read_spike_report

    res = run_network(mixed_network(), 20.0)
    path = res.save_spikes(tmp_path / "spikes.h5")
    gids, times = read_spike_report(path)
    want_g, want_t = res.spike_report()
    assert gids.tolist() == want_g.tolist() and times.tolist() == want_t.tolist()
    res.raster(tmp_path / "raster.png")
    assert (tmp_path / "raster.png").stat().st_size > 0
    res.rank = 1                                     # other ranks write nothing
    assert res.save_spikes(tmp_path / "other.h5") is None
    assert not (tmp_path / "other.h5").exists()


def test_a_missing_synapse_names_the_connection_and_the_cell():
    net = ringtest(RingtestParameters(nring=1, ncell=2, npt=2))
    net.connect(0, 1, "Exp2Syn[0]", weight=0.01)
    with pytest.raises(ValueError, match="connection 3: cell 1 has no synapse 'Exp2Syn\\[0\\]'; "
                                         "its point processes: ExpSyn\\[0\\], ExpSyn\\[1\\]"):
        run_network(net, 5.0)


def test_a_cell_that_blows_up_is_named_by_its_gid():
    from hinesbatch.sim.errors import NonFiniteStateError

    def build(gid):
        cell = ringtest_cell([0, 0], [1, 1])
        if gid == 3:
            cell.place("IClamp", "soma[0](0.5)", delay=1.0, dur=1.0, amp=1.7e308)
        return cell

    net = Network()
    net.net_stim()                                   # gid 0: the cells are gids 1, 2, 3
    net.add_cells(3, build=build, compartments=9)    # gid 3 is the engine's cell 2
    with pytest.raises(NonFiniteStateError, match=r"cell of gid 3 at soma\[0\]") as err:
        run_network(net, 3.0, comm=SerialCommunicator())
    assert err.value.cell == 3


def epoch_sim(times):
    """One ringtest cell (gid 7) and a VecStim (gid 9) onto it, delay 1 ms."""
    sim = EpochSimulation([ringtest_cell([0, 0], [1, 1])], gids=[7])
    sim.cell_source(0, "soma[0](1)", 10.0)
    sim.vec_stim(times, gid=9)
    sim.add_input(9, sim.cells[0].point_processes[0], weight=0.01, delay=1.0)
    return sim


def test_a_generator_spike_due_at_an_epochs_end_leaves_with_that_epoch():
    # regression: the end-of-step delivery of an epoch's last step; delivered one step
    # later, the spike would leave with the next epoch and its event would come late
    probe = epoch_sim([])
    probe.begin(5.0)
    steps = epoch_steps(0.0, 1.0, 0.025, tstop=5.0)
    probe.advance(steps)
    t_end = probe.t
    sim = epoch_sim([t_end])
    assert sim.begin(5.0)[0].size == 0
    gids, times = sim.advance(steps)
    assert gids.tolist() == [9] and times.tolist() == [t_end]
    sim.receive(gids, times)        # te = t_end + 1 ms is still ahead


def test_the_epoch_engine_refuses_late_events_and_bad_epochs():
    sim = epoch_sim([0.0])
    with pytest.raises(ValueError, match="the cell of gid 7 already has its spike source"):
        sim.cell_source(0, "soma[0](0.5)", 0.0)
    with pytest.raises(RuntimeError, match="call begin\\(tstop\\) first"):
        sim.advance(1)
    gids, times = sim.begin(3.0)
    assert gids.tolist() == [9] and times.tolist() == [0.0]   # VecStim at 0: finitialize
    sim.receive(gids, times)
    sim.advance(40)
    with pytest.raises(LateSpikeError, match="the step it acts on is computed"):
        sim.receive([9], [sim.t - 1.5])
    with pytest.raises(ValueError, match="does not fit the run's 120 steps"):
        sim.advance(100)
    with pytest.raises(RuntimeError, match="stopped at step 40 of 120"):
        sim.finish()


def test_a_vecstim_delay_reaches_the_ranks():
    """``Network.vec_stim(times, delay=)``: each rank's VecStim plays the times ``delay``
    ms later, with NEURON's rounding (``VecStimGenerator``), and drives its target."""
    from hinesbatch.network import VecStimGenerator

    net = ringtest(RingtestParameters(nring=1, ncell=3, npt=2))
    vec = net.vec_stim([0.762, 5.2, 7.3], delay=1.3)
    assert net.generator(vec)[1]["delay"] == 1.3
    net.connect(vec, 1, "ExpSyn[0]", weight=0.02, delay=1.0)
    res = run_network(net, 20.0, comm=SerialCommunicator())
    want = VecStimGenerator([0.762, 5.2, 7.3], delay=1.3).spike_times(20.0)
    assert res.spikes[f"spikes@{vec}"].tolist() == want.tolist() == \
        [2.0620000000000003, 6.500000000000001, 8.600000000000001]
    with pytest.raises(ValueError, match="VecStim delay = -1.0 ms is negative"):
        net.vec_stim([1.0], delay=-1.0)
