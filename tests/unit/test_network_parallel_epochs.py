"""The epoch loop (run, exchange, deliver) in one process, against immediate fan-out.

The toy network of ``tests/mpi/toy_network.py`` (event-driven integrate-and-fire cells,
NetStims and VecStims) is run by epochs of the minimum delay with a SerialCommunicator, and
by fanning every spike out when it happens, as a one-process engine does.
"""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from hinesbatch.network.parallel import LateSpikeError, SerialCommunicator

TOY = Path(__file__).resolve().parents[1] / "mpi" / "toy_network.py"


@pytest.fixture(scope="module")
def toy():
    spec = importlib.util.spec_from_file_location("toy_network", TOY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("grid_delays, shortest", [(False, 40), (True, 40), (True, 1),
                                                    (True, 7)])
def test_epochs_give_the_spikes_of_immediate_fan_out(toy, seed, grid_delays, shortest):
    # shortest 1: epochs of one step (the smallest delay is dt), VecStim spike at 0
    net = toy.build(seed, grid_delays=grid_delays, shortest=shortest)
    gids, times = toy.run_epochs(net, SerialCommunicator(), 50.0)
    ref_gids, ref_times = toy.run_immediate(net, 50.0)
    n_cells = net["n_cells"]
    # the cells fire from their inputs, generator and recurrent: the test is not vacuous
    assert np.count_nonzero(ref_gids < n_cells) > 100
    assert np.count_nonzero(ref_gids >= n_cells) > 50
    assert gids.tobytes() == ref_gids.tobytes()
    assert times.tobytes() == ref_times.tobytes()


def test_epochs_longer_than_a_delay_are_caught(toy, seed, monkeypatch):
    # two epochs' worth of steps per exchange: some events would already be due
    net = toy.build(seed)
    real = toy.epoch_steps
    monkeypatch.setattr(toy, "epoch_steps", lambda t, d, dt, tstop: 2 * real(t, d, dt,
                                                                           tstop=tstop))
    with pytest.raises(LateSpikeError, match="an epoch must not be longer than"):
        toy.run_epochs(net, SerialCommunicator(), 50.0)
