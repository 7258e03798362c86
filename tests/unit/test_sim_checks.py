"""``simulate_passive`` refuses what it cannot simulate: parameters out of range, a state
that overflows, runs that do not fit in memory; and it records every k-th step or streams
the recordings to a file when asked."""
from __future__ import annotations

import numpy as np
import pytest

from hinesbatch.sim import memory
from hinesbatch.sim.errors import InsufficientMemoryError, NonFiniteStateError
from hinesbatch.sim.passive import simulate_passive
from hinesbatch.sim.stimuli import IClamp, TimeGrid, time_grid


@pytest.mark.parametrize("kw, match", [
    # no capacitance and no leak: the pivots are rounding residues, the result garbage
    (dict(cm=0.0, g_pas=0.0), r"cm must be finite and > 0"),
    (dict(cm=-1.0), r"cm must be finite and > 0"),
    (dict(ra=-1.0), r"ra must be finite and > 0"),
    (dict(ra=0.0), r"ra must be finite and > 0"),
    (dict(ra=1e-320), r"ra = 1e-320 .* below the smallest normal float64"),
    (dict(ra=1e-305), r"axial (conductance|resistance) .*ra = 1e-305"),
    (dict(v_init=1e308), r"v_init must lie within \+-1e\+06 mV"),
    (dict(e_pas=-2e6), r"e_pas must lie within \+-1e\+06 mV"),
    (dict(iclamp=(1e308, 0.0, 10.0)), r"IClamp amp must lie within \+-1e\+06 nA"),
    (dict(cm=1e308, dt=1e-5, tstop=1e-4), r"capacitance over dt .* not finite"),
    (dict(record_every=0), r"record_every must be >= 1"),
])
def test_parameters_out_of_range_are_refused_by_name(kw, match):
    with pytest.raises(ValueError, match=match):
        simulate_passive(**{"tstop": 30.0, "backend": "serial", **kw})


def test_ra_messages_agree_on_the_bound():
    """-1 and 0 are refused with the same words (ra > 0), as discretize says."""
    texts = []
    for ra in (-1.0, 0.0):
        with pytest.raises(ValueError) as err:
            simulate_passive(ra=ra, tstop=0.1)
        texts.append(str(err.value).split(", got")[0])
    assert texts[0] == texts[1] == "ra must be finite and > 0 ohm*cm"


@pytest.mark.parametrize("backend, cells", [("serial", 1), ("multicore", 3)])
def test_overflowing_state_raises_naming_cell_location_and_time(backend, cells):
    with pytest.raises(NonFiniteStateError) as err:
        simulate_passive(g_pas=1e306, v_init=1e6, tstop=5.0, n_cells=cells, backend=backend)
    e = err.value
    assert e.cell == 0 and e.location == "soma[0](0)" and e.t_ms == pytest.approx(0.025)
    assert "cell 0 at soma[0](0) by t = 0.025 ms" in str(e)


def test_state_is_checked_during_the_run_not_only_at_the_end(monkeypatch):
    """A value that becomes NaN mid-run is reported at the first check after it, with the
    time of the check before (when everything was finite)."""
    from hinesbatch.sim import assembly

    real = assembly.NumbaAssembler.advance
    calls = {"n": 0}

    def poisoning(self, v, dv, trace, k, node):
        real(self, v, dv, trace, k, node)
        calls["n"] += 1
        if calls["n"] == 100:
            v[0, 5] = np.nan

    monkeypatch.setattr(assembly.NumbaAssembler, "advance", poisoning)
    with pytest.raises(NonFiniteStateError) as err:
        simulate_passive(tstop=100.0, backend="serial")  # 4000 steps, checked every 20
    assert calls["n"] < 200  # stopped soon after, not at the end
    assert 2.5 <= err.value.t_ms <= 3.0 and "nan" in str(err.value)


def test_time_grid_chunks_equal_the_whole(monkeypatch):
    from hinesbatch.sim import stimuli

    t, t_mid = time_grid(33.3, 0.025)
    monkeypatch.setattr(stimuli, "_GRID_CHUNK", 7)  # chunk edges everywhere
    grid = TimeGrid(33.3, 0.025)
    t7, t_mid7 = grid.arrays()
    np.testing.assert_array_equal(t7, t)
    np.testing.assert_array_equal(t_mid7, t_mid)
    for every in (1, 3, 7, 40, 5000):
        np.testing.assert_array_equal(grid.sample_times(every), t[::every])


def test_time_grid_of_a_long_run_holds_no_arrays_of_every_step():
    import tracemalloc

    tracemalloc.start()
    try:
        grid = TimeGrid(1e5, 0.025)  # 4 million steps: 64 MB as two float64 arrays
        assert grid.n_steps == 4_000_000
        assert grid.sample_times(400_000).size == 11
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20


def test_record_every_keeps_every_kth_sample():
    full = simulate_passive(tstop=20.0, backend="serial")
    for every in (3, 8, 801):
        dec = simulate_passive(tstop=20.0, backend="serial", record_every=every)
        np.testing.assert_array_equal(dec.v, full.v[:, ::every])
        np.testing.assert_array_equal(dec.t, full.t[::every])
        assert dec.params["record_every"] == every


def test_record_to_streams_into_a_npy_file(tmp_path):
    full = simulate_passive(tstop=5.0, n_cells=2, backend="serial")
    path = tmp_path / "v.npy"
    streamed = simulate_passive(tstop=5.0, n_cells=2, backend="serial", record_to=path,
                                record_every=2)
    assert isinstance(streamed.v, np.memmap) and not streamed.v.flags.writeable
    np.testing.assert_array_equal(np.load(path), full.v[:, ::2])


def test_kernel_compilation_is_timed_apart_from_the_loop(monkeypatch):
    """A kernel compiled at its first call (a fresh dispatcher, no cache) lands in
    ``first_step_s``, not in ``loop_s``, which the rate in the summary is computed from."""
    import numba

    from hinesbatch.sim import assembly

    fresh = numba.njit(assembly._assemble_kernel.py_func)  # compiles at its first call
    monkeypatch.setattr(assembly, "_assemble_kernel", fresh)
    info = simulate_passive(tstop=1.0, backend="serial").info
    assert fresh.signatures  # it was used
    assert info["first_step_s"] > 5 * info["loop_s"] > 0


def test_run_that_cannot_fit_is_refused_before_allocating(monkeypatch):
    monkeypatch.setattr(memory, "available_host_memory", lambda: (2**30, "a test limit"))
    with pytest.raises(InsufficientMemoryError) as err:
        # 10 million cells x 389 nodes: 3 state arrays of 29 GiB each
        simulate_passive(tstop=1.0, n_cells=10_000_000, backend="serial")
    text = str(err.value)
    assert "of host memory (state (v, d, rhs) 86.9 GiB" in text and "1.0 GiB is available" in text
    assert "a test limit" in text and "--record-every" in text and "--stream" in text
    assert err.value.where == "host" and err.value.needed > 2**30


def test_recordings_that_cannot_fit_fit_decimated_or_streamed(monkeypatch, tmp_path):
    monkeypatch.setattr(memory, "available_host_memory", lambda: (50 * 2**10, "a test limit"))
    kw = dict(tstop=100.0, n_cells=2, backend="serial")  # 4001 samples x 2 cells: 62.5 KiB
    with pytest.raises(InsufficientMemoryError, match=r"recordings 62\.5 KiB\) but 50\.0 KiB"):
        simulate_passive(**kw)
    assert simulate_passive(**kw, record_every=10).v.shape == (2, 401)
    assert simulate_passive(**kw, record_to=tmp_path / "v.npy").v.shape == (2, 4001)


def test_host_memory_reads_the_cgroup_limit(monkeypatch, tmp_path):
    root = tmp_path / "cg"
    root.mkdir()
    (root / "memory.max").write_text("3221225472\n")  # 3 GiB
    (root / "memory.current").write_text(str(2**30) + "\n")
    (root / "memory.stat").write_text("anon 1\ninactive_file 1048576\n")
    real_path = memory.Path

    def fake(p):
        p = str(p)
        if p == "/sys/fs/cgroup":
            return real_path(root)
        if p == "/proc/self/cgroup":
            return real_path(tmp_path / "none")
        return real_path(p)

    monkeypatch.setattr(memory, "Path", fake)
    free, source = memory._cgroup_free()
    assert free == 2 * 2**30 + 2**20 and "3.0 GiB" in source
    avail, _ = memory.available_host_memory()
    assert avail <= free


def test_streamed_recordings_must_fit_the_address_space(monkeypatch, tmp_path):
    """A streamed .npy is memory-mapped: under ``ulimit -v`` it must fit the address space."""
    monkeypatch.setattr(memory, "available_address_space", lambda: (50 * 2**10, "ulimit -v"))
    with pytest.raises(InsufficientMemoryError, match="address space but 50.0 KiB is left"):
        simulate_passive(tstop=100.0, n_cells=2, backend="serial", record_to=tmp_path / "v.npy")
    assert not (tmp_path / "v.npy").exists()


def test_device_memory_is_checked_on_the_device():
    est = memory.MemoryEstimate.passive(n_cells=100_000, n_nodes=1000, n_samples=11,
                                        buffer_columns=10, on_device=True, streamed=False)
    assert set(est.device) >= {"state (v, d, rhs)", "assembly scratch"}
    assert est.host == {"recordings": 100_000 * 11 * 8}
    with pytest.raises(InsufficientMemoryError, match="of device memory .* 1.0 GiB is available"):
        est.check(hint="", device_free=lambda: (2**30, "free on the GPU"))
    est.check(hint="", device_free=lambda: (2**40, "free on the GPU"))


def test_format_bytes():
    assert memory.format_bytes(29 * 2**30) == "29.0 GiB"
    assert memory.format_bytes(12) == "12 B"


def test_iclamp_amplitude_bound():
    assert IClamp(1e6, 0, 1).amp == 1e6
    with pytest.raises(ValueError, match="amp must lie within"):
        IClamp(-1.5e6, 0, 1)
