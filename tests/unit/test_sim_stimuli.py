"""NEURON's time grid and IClamp timing, and SECTION(X) parsing."""
from __future__ import annotations

import numpy as np
import pytest

from hinesbatch.sim.stimuli import IClamp, parse_location, time_grid


def neuron_loop(tstop, dt):
    """stdrun's continuerun with fadvance's two half steps, written out (docs/simulation.md)."""
    t, ts, mids = 0.0, [0.0], []
    while t < tstop - dt / 2:
        t += dt / 2
        mids.append(t)
        t += dt / 2
        ts.append(t)
    return ts, mids


@pytest.mark.parametrize("tstop, dt, n_steps", [(10.0, 0.025, 400), (100.0, 0.025, 4000),
                                                (7.3, 0.01, 730), (1.0, 0.3, 3), (0.0, 0.025, 0),
                                                (0.01, 0.025, 0), (0.02, 0.025, 1)])
def test_time_grid_counts_and_values(tstop, dt, n_steps):
    t, t_mid = time_grid(tstop, dt)
    assert t_mid.size == n_steps and t.size == n_steps + 1
    ts, mids = neuron_loop(tstop, dt)
    np.testing.assert_array_equal(t, ts)       # bit for bit: the same accumulation
    np.testing.assert_array_equal(t_mid, mids)


def test_time_grid_accumulates_like_neuron_not_like_a_product():
    t, _ = time_grid(100.0, 0.025)
    assert t[-1] != 4000 * 0.025 or t[-1] == 100.0
    assert np.max(np.abs(t - 0.025 * np.arange(t.size))) < 1e-10
    assert np.any(t != 0.025 * np.arange(t.size))  # the accumulation does round differently


@pytest.mark.parametrize("bad", [0.0, -0.1, float("nan"), float("inf")])
def test_time_grid_rejects_bad_dt(bad):
    with pytest.raises(ValueError, match="dt"):
        time_grid(10.0, bad)


def test_time_grid_rejects_bad_tstop():
    with pytest.raises(ValueError, match="tstop"):
        time_grid(-1.0, 0.025)


def test_iclamp_on_iff_delay_le_mid_step_lt_end():
    _, t_mid = time_grid(1.0, 0.1)  # mid-steps 0.05, 0.15, ..., 0.95
    amps = IClamp(2.0, 0.15, 0.3).amplitudes(t_mid)
    # del + dur is computed in double as stim.mod does: 0.15 + 0.3 = 0.44999999999999996,
    # so the step whose mid-step time accumulates to 0.45 is already off.
    expected = np.where((0.15 <= t_mid) & (t_mid < 0.15 + 0.3), 2.0, 0.0)
    np.testing.assert_array_equal(amps, expected)
    np.testing.assert_array_equal(np.flatnonzero(amps), [1, 2, 3])


def test_iclamp_off_grid_edges():
    _, t_mid = time_grid(10.0, 0.025)
    amps = IClamp(0.5, 1.0, 5.0).amplitudes(t_mid)
    on = np.flatnonzero(amps)
    assert on[0] == 40 and on[-1] == 239  # mid-steps 1.0125 ... 5.9875
    assert np.all(amps[on] == 0.5)


@pytest.mark.parametrize("kw, match", [(dict(amp="1", delay=0, dur=1), "amp must be a number"),
                                       (dict(amp=1, delay=float("nan"), dur=1), "delay must be finite"),
                                       (dict(amp=1, delay=0, dur=-1), "dur must be >= 0")])
def test_iclamp_rejects_bad_values(kw, match):
    with pytest.raises((TypeError, ValueError), match=match):
        IClamp(**kw)


@pytest.mark.parametrize("text, expected", [("soma[0](0.5)", ("soma[0]", 0.5)),
                                            (" dend[12](1) ", ("dend[12]", 1.0)),
                                            ("axon[0](0)", ("axon[0]", 0.0)),
                                            ("apic[3]", ("apic[3]", 0.5))])
def test_parse_location(text, expected):
    assert parse_location(text) == expected


@pytest.mark.parametrize("text, match", [("soma[0](x)", "expected SECTION"),
                                         ("soma[0](1.5)", r"x must lie in \[0, 1\]"),
                                         ("(0.5)", "expected SECTION"), ("", "expected SECTION")])
def test_parse_location_errors(text, match):
    with pytest.raises(ValueError, match=match):
        parse_location(text)
