"""Networks that the epoch runner's tests run on the CPU and GPU engines.

Used by ``tests/unit/test_network_runner.py`` and ``tests/gpu/test_gpu_engine.py``.
"""
from __future__ import annotations

from hinesbatch.network import Network
from hinesbatch.network.ringtest import RingtestParameters, ringtest


def grid_times_past_the_clock(tstop: float, dt: float) -> list[float]:
    """Times ``n*dt`` just after the accumulated clock's ``t_n`` whose event ``dt`` later
    is due at ``t_{n+1}``: that step is longer than a delay of ``dt``."""
    t, times = 0.0, []
    for n in range(1, int(tstop / dt)):
        t_n = t = (t + 0.5 * dt) + 0.5 * dt
        t_next = (t_n + 0.5 * dt) + 0.5 * dt
        if t_n < n * dt and n * dt + dt <= t_next:
            times.append(n * dt)
    return times


def one_step_epochs(dt: float = 0.025) -> Network:
    """A ring of 3 ringtest cells and a VecStim onto gid 1 with delay ``dt``: epochs of one
    step, the VecStim's spikes due at their steps' ends (recorded: ``v`` of gid 1)."""
    net = ringtest(RingtestParameters(nring=1, ncell=3, npt=2))
    vec = net.vec_stim(grid_times_past_the_clock(10.0, dt))
    net.connect(vec, 1, "ExpSyn[0]", weight=0.1, delay=dt)
    net.record("v", 1, "soma[0](0.5)")
    return net
