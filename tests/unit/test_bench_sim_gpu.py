"""``hinesbatch bench sim --part gpu`` without a GPU: the workloads' cells, the floors'
arithmetic, the goals, the result files, a dry run on a CPU backend, and the GPU path
driven by stand-ins for the GPU engine, the device and Jaxley (no timing checks)."""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np
import pytest

import hinesbatch as hb
from hinesbatch import cli
from hinesbatch.bench import _sim_gpu_analysis as analysis
from hinesbatch.bench import _sim_gpu_work as work
from hinesbatch.bench import jaxley_workload, sim_gpu
from hinesbatch.bench import sim as bench_sim

# ---- workloads ---------------------------------------------------------------------------


def test_amplitudes_keep_each_simulations_value_and_span_the_range():
    a, b = work.amplitudes(10), work.amplitudes(1000)
    np.testing.assert_array_equal(a, b[:10])
    lo, hi = work.AMPLITUDES
    assert b.min() >= lo and b.max() < hi and b.max() - b.min() > 0.99 * (hi - lo)
    assert np.unique(b).size == 1000
    with pytest.raises(ValueError, match="non-negative integer"):
        work.amplitudes(-1)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_fig2_cells_are_the_pyramidal_cell_at_nseg_4_with_one_clamp_each():
    path = work.real_morphologies([work.FIG2_MORPHOLOGY])[0]
    cells = work.fig2_cells(hb, path, [0.5, 1.5, 2.0])
    geo = cells[0].geometry
    assert len(cells[0].section_names) == 220 and set(geo.nseg.tolist()) == {4}
    # 4 segments per section plus each section's zero-area end and the root
    assert work.compartments(cells[:1]) == (220 * 5 + 1, 220 * 4)
    assert work.compartments(cells) == (3 * 1101, 3 * 880)
    assert [c.point_processes[0].params["amp"] for c in cells] == [0.5, 1.5, 2.0]
    assert {c.point_processes[0].location for c in cells} == {"soma[0](0.5)"}
    assert all(c.decor[0][1] == "hh" for c in cells)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_mixed_batch_cycles_through_the_17_morphologies():
    paths = work.real_morphologies()
    assert len(paths) == 17
    cells = work.batch_cells(hb, paths, 20)
    sources = [c.morphology.source for c in cells]
    assert sources[:17] == [str(p) for p in paths] or len(set(sources[:17])) == 17
    assert sources[17:] == sources[:3]
    per_cell = [work.compartments([c]) for c in cells]
    assert work.compartments(cells) == tuple(map(sum, zip(*per_cell)))
    # a cell without a soma (Gad1: axon only) is clamped on its first section
    gad1 = cells[[p.name for p in paths].index("Gad1-F-600000.CNG.swc")]
    assert gad1.point_processes[0].location == f"{gad1.section_names[0]}(0.5)"
    assert not gad1.section_names[0].startswith("soma")
    with pytest.raises(ValueError, match="at least one morphology"):
        work.batch_cells(hb, [], 3)


def test_spike_count_counts_upward_crossings():
    assert work.spike_count([-65, 20, 30, -70, 15, -60, 5]) == 2
    assert work.spike_count([-65, -64]) == 0


def test_tstop_gives_the_number_of_steps_on_hinesbatchs_grid():
    t, dt, steps = 0.0, work.DT, 0
    while t < work.tstop() - dt / 2:
        t = (t + 0.5 * dt) + 0.5 * dt
        steps += 1
    assert steps == work.STEPS


# ---- floors ------------------------------------------------------------------------------


def test_state_bytes_per_node_step():
    assert analysis.bytes_per_node_step("float64", 1.0) == 64.0   # v, m, h, n in and out
    assert analysis.bytes_per_node_step("float32", 0.0) == 8.0    # v alone
    assert analysis.bytes_per_node_step("float32", 0.5) == 20.0
    with pytest.raises(ValueError, match="precision"):
        analysis.bytes_per_node_step("float16", 1.0)
    with pytest.raises(ValueError, match="membrane_fraction"):
        analysis.bytes_per_node_step("float64", 1.5)


def test_flops_per_node_step_expand_exp_and_division():
    exact = sum(c.flops for c in analysis.HH_EXACT), sum(c.divisions for c in analysis.HH_EXACT)
    assert exact == (75, 28) and sum(c.exps for c in analysis.HH_EXACT) == 11  # 9 exp + pow
    assert sum(c.exps for c in analysis.HH_TABLE) == 3                      # cnexp's
    cable = 15 + 2 * 12
    assert analysis.flops_per_node_step("float64", 1.0, tables=False) == cable + 75 + 28 * 12 + 11 * 28
    assert analysis.flops_per_node_step("float64", 0.0, tables=False) == cable
    table = 24 + 15 + 33 + 4 + (9 + 3) * 8 + 3 * 10
    assert analysis.flops_per_node_step("float32", 1.0, tables=True) == 15 + 2 * 8 + table


def test_peak_flops_of_an_h100_sxm():
    assert analysis.peak_flops((9, 0), 132, 1_980_000, "float64") == pytest.approx(33.45e12, rel=1e-3)
    assert analysis.peak_flops((9, 0), 132, 1_980_000, "float32") == pytest.approx(66.9e12, rel=1e-3)
    assert analysis.peak_flops((3, 5), 132, 1_980_000, "float64") is None
    assert analysis.peak_flops((9, 0), 132, 0, "float64") is None


def test_floor_ratios():
    r = analysis.floor_ratios(1e9, precision="float64", membrane_fraction=1.0, tables=False,
                              bandwidth=64e9, peak=758e9)
    assert r["vs_bytes_floor"] == pytest.approx(1.0) and r["vs_flops_floor"] == pytest.approx(1.0)
    assert analysis.floor_ratios(1e9, precision="float64", membrane_fraction=1.0, tables=False,
                                 bandwidth=None, peak=None) == {"vs_bytes_floor": None,
                                                                "vs_flops_floor": None}


# ---- goals -------------------------------------------------------------------------------


def _fig2(cells, speedup, precision="float64", rates="exact"):
    return {"tool": "hinesbatch", "rates": rates, "precision": precision, "cells": cells,
            "speedup_vs_jaxley": speedup}


def test_goals_met_not_met_and_not_measured():
    fig2 = [_fig2(10000, 25.0), _fig2(1000, 9.0), _fig2(100, 1.0), _fig2(10000, 99.0,
                                                                          rates="table")]
    batches = [{"batch": "single", "precision": "float64", "G_comp_steps_per_s": 30.0},
               {"batch": "mixed", "precision": "float64", "G_comp_steps_per_s": 21.0}]
    scaling = [{"devices": 1, "speedup_vs_one": 1.0}, {"devices": 2, "speedup_vs_one": 1.95}]
    lines = analysis.evaluate_goals(fig2, batches, scaling, precisions=("float64",), devices=2)
    assert lines == [
        "Jaxley's Fig. 2 at 10000 cells, float64, exact rates: >= 20x Jaxley: 25.00x -> met",
        "Jaxley's Fig. 2 at 1000 cells, float64, exact rates: >= 10x Jaxley: 9.00x -> NOT met",
        "Jaxley's Fig. 2 at 100 cells, float64, exact rates: faster than Jaxley: 1.00x -> NOT met",
        ("mixed batch within 1.5x of the single-morphology batch, float64: single/mixed "
         "throughput 1.43 -> met"),
        "2 GPUs >= 1.9x one: 1.95x -> met",
        "4 GPUs >= 3.6x one -> not measured (2 GPUs here)"]


def test_goals_of_a_dry_run_are_not_judged():
    lines = analysis.evaluate_goals([_fig2(1000, 50.0)], [], [], precisions=("float64",),
                                    judged="a dry run", devices=0)
    assert lines[1].endswith("50.00x -> not judged (a dry run)")
    assert lines[0].endswith("-> not measured") and lines[3].endswith("-> not measured")


def test_engine_options():
    assert sim_gpu.engine_options("gpu", "float32", 1) == {"precision": "float32", "devices": 1}
    assert sim_gpu.engine_options("multicore", "float64", 1) == {}
    with pytest.raises(ValueError, match="float64 only"):
        sim_gpu.engine_options("serial", "float32", 1)


# ---- the command -------------------------------------------------------------------------


def _run(tmp_path, *extra) -> dict:
    assert cli.main(["bench", "sim", "--out", str(tmp_path), *extra]) == 0
    return json.loads((tmp_path / "sim_gpu.json").read_text())


def _tables(doc) -> dict:
    titles = {v: k for k, v in sim_gpu.TITLES.items()}
    return {titles[t]: rows for t, rows in doc["tables"].items()}


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_dry_run_on_the_serial_backend(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sim_gpu, "gpu_present", lambda: False)
    doc = _run(tmp_path, "--part", "gpu", "--engine-backend", "serial", "--no-jaxley",
               "--cells", "2", "--morph-cells", "2", "--workloads", "fig2", "batch",
               "--gpu-repeats", "1")
    t = _tables(doc)
    assert [(r["rates"], r["precision"]) for r in t["fig2"]] == [("exact", "float64"),
                                                                   ("table", "float64")]
    for r in t["fig2"]:
        assert r["tool"] == "hinesbatch" and r["cells"] == 2 and r["compartments"] == 1101
        assert r["steps"] == 800 and r["timed"] == "step_seconds"
        assert 0 < r["seconds"] <= r["wall_s"]
        assert r["nonfinite_cells"] == 0 and r["max_abs_dv_cell0_vs_cpu_mV"] == 0.0
        assert 1 <= r["mean_spikes_per_cell"] <= 3 and r["speedup_vs_jaxley"] is None
    assert [r["batch"] for r in t["batch"]] == ["single", "mixed"]
    assert [r["morphologies"] for r in t["batch"]] == [1, 17]
    single, mixed = t["batch"]
    assert single["throughput_vs_single"] is None and mixed["throughput_vs_single"] == \
        pytest.approx(mixed["G_comp_steps_per_s"] / single["G_comp_steps_per_s"])
    assert t["batch"][0]["nodes"] == 2 * 1303
    assert "scaling" not in t and "cpu" not in t
    notes = doc["notes"]
    assert any(n.startswith("no GPU here") for n in notes)
    assert any("fig2 2 cells float32: no hinesbatch rows" in n for n in notes)
    assert any("not judged (hinesbatch ran on its serial backend" in n for n in notes)
    assert doc["machine"]["engine_backend"] == "serial"
    md = (tmp_path / "sim_gpu.md").read_text()
    assert md.startswith("# Benchmark `sim_gpu`") and "## Notes" in md
    pytest.importorskip("matplotlib")
    assert (tmp_path / "sim_gpu.png").stat().st_size > 0
    assert not (tmp_path / "sim.json").exists()  # the CPU part did not run


def test_part_defaults_to_cpu_without_a_gpu(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(sim_gpu, "gpu_present", lambda: False)
    monkeypatch.setattr(bench_sim, "run_cpu", lambda args: calls.append("cpu") or 0)
    monkeypatch.setattr(sim_gpu, "run", lambda args: calls.append("gpu") or 0)
    assert cli.main(["bench", "sim", "--out", str(tmp_path)]) == 0
    monkeypatch.setattr(sim_gpu, "gpu_present", lambda: True)
    assert cli.main(["bench", "sim", "--out", str(tmp_path)]) == 0
    monkeypatch.setattr(bench_sim, "run_cpu", lambda args: calls.append("cpu") or 1)
    assert cli.main(["bench", "sim", "--part", "all", "--out", str(tmp_path)]) == 1
    assert calls == ["cpu", "cpu", "gpu", "cpu", "gpu"]


def test_gpu_part_without_a_gpu_or_with_bad_options_is_an_error(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(sim_gpu, "gpu_present", lambda: False)
    assert cli.main(["bench", "sim", "--part", "gpu", "--out", str(tmp_path)]) == 1
    assert "no usable GPU" in capsys.readouterr().err
    for bad in (["--cells", "0"], ["--morph-cells", "-2"], ["--budget", "0"],
                ["--gpu-repeats", "0"]):
        assert cli.main(["bench", "sim", "--part", "gpu", "--engine-backend", "serial",
                         "--out", str(tmp_path), *bad]) == 1
        assert "hinesbatch bench sim: error:" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_out_defaults_to_the_current_folder():
    parser = argparse.ArgumentParser()
    bench_sim.configure(parser)
    args = parser.parse_args([])
    assert args.out == "." and args.part is None and args.engine_backend == "gpu"


# ---- the GPU path, with stand-ins --------------------------------------------------------

STEP_SECONDS, JAXLEY_SECONDS = 0.002, 0.1


class _Results:
    def __init__(self, keys, steps):
        v = np.full(steps + 1, -65.0)
        v[steps // 2] = 20.0  # one spike
        self._v, self.meta = v, {"steps": steps, "step_seconds": STEP_SECONDS}

    def __getitem__(self, key):
        return self._v


class _GpuSimulation:
    """The GPU backend's interface: precision, devices, step_seconds, describe()."""

    made: list = []

    def __init__(self, cells, *, dt, celsius, v_init, backend, tables, precision="float64",
                 devices=None):
        assert backend == "gpu" and precision in ("float64", "float32")
        self.cells, self.tables, self.precision, self.devices = cells, tables, precision, devices
        self.keys = []
        _GpuSimulation.made.append(self)

    def record(self, variable, *, cell, location):
        self.keys.append(f"{variable}@{cell}:{location}")
        return self.keys[-1]

    def run(self, tstop):
        return _Results(self.keys, round(tstop / work.DT))

    def describe(self):
        return f"{len(self.cells)} cells\nstate in shared memory"


class _Jaxley:
    built: list = []

    def __init__(self, path, *, precision):
        self.precision, self.compartments, self.branches = precision, 884, 221
        _Jaxley.built.append(precision)

    def run(self, amps):
        v = np.full((len(amps), work.STEPS + 1), -65.0)
        return JAXLEY_SECONDS, v


@pytest.fixture
def fake_gpu(monkeypatch):
    real = hb.Simulation

    def simulation(cells, **kw):
        return _GpuSimulation(cells, **kw) if kw.get("backend") == "gpu" else real(cells, **kw)

    _GpuSimulation.made, _Jaxley.built = [], []
    monkeypatch.setattr(hb, "Simulation", simulation)
    monkeypatch.setattr(sim_gpu, "gpu_present", lambda: True)
    monkeypatch.setattr(sim_gpu, "free_device_memory", lambda: None)
    monkeypatch.setattr(sim_gpu, "device_facts", lambda: {
        "count": 4, "name": "Stand-in H100", "info": {"gpus": ["0: Stand-in H100"]},
        "bandwidth": {"TB_per_s": 3.0}, "bandwidth_Bps": 3.0e12,
        "peaks": {"float64": 33.45e12, "float32": 66.9e12}, "cc": (9, 0), "sms": 132,
        "clock_khz": 1_980_000})
    monkeypatch.setattr(jaxley_workload, "JaxleyFig2", _Jaxley)
    monkeypatch.setattr(jaxley_workload, "jaxley_missing", lambda: None)
    monkeypatch.setattr(jaxley_workload, "jaxley_versions", lambda: {
        "jaxley": "stand-in", "jax_device": "cuda:0", "jax_platform": "gpu"})


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_gpu_path_with_stand_ins(fake_gpu, tmp_path):
    doc = _run(tmp_path, "--part", "gpu", "--cells", "100", "2", "--morph-cells", "3",
               "--workloads", "fig2", "batch", "scaling", "--gpu-repeats", "2")
    t = _tables(doc)
    # each precision: Jaxley, then hinesbatch exact and table, per N
    assert [(r["tool"], r["rates"], r["precision"], r["cells"]) for r in t["fig2"]] == [
        (tool, rates, p, n) for p in ("float64", "float32") for n in (100, 2)
        for tool, rates in (("Jaxley", "exact"), ("hinesbatch", "exact"),
                            ("hinesbatch", "table"))]
    assert _Jaxley.built == ["float64", "float32"]
    for r in t["fig2"]:
        ours = r["tool"] == "hinesbatch"
        assert r["seconds"] == (STEP_SECONDS if ours else JAXLEY_SECONDS)
        assert r["timed"] == ("step_seconds" if ours else "wall")
        assert r["compartments"] == (1101 if ours else 884)
        rate = r["cells"] * r["compartments"] * 800 / r["seconds"]
        assert r["G_comp_steps_per_s"] == pytest.approx(rate / 1e9)
        fraction = 880 / 1101 if ours else 1.0
        bytes_rate = 3.0e12 / analysis.bytes_per_node_step(r["precision"], fraction)
        assert r["vs_bytes_floor"] == pytest.approx(rate / bytes_rate)
        assert r["vs_flops_floor"] > 0
        if ours:
            assert r["speedup_vs_jaxley"] == pytest.approx(JAXLEY_SECONDS / STEP_SECONDS)
            assert r["max_abs_dv_cell0_vs_cpu_mV"] > 0  # the stand-in's trace is not hh's
            assert r["mean_spikes_per_cell"] == 1.0
    sims = _GpuSimulation.made
    fig2_sims = [s for s in sims if len(s.cells) in (100, 2)]
    assert {(s.precision, s.tables) for s in fig2_sims} == {
        (p, tb) for p in ("float64", "float32") for tb in (False, True)}
    assert all(s.devices == 1 for s in sims if len(s.cells) != 12)
    assert [s.devices for s in sims if len(s.cells) == 12] == [1, 2, 4]  # 3 per GPU x 4
    assert all(len(s.keys) == len(s.cells) for s in sims)  # every cell recorded
    assert [(r["batch"], r["precision"]) for r in t["batch"]] == [
        ("single", "float64"), ("mixed", "float64"), ("single", "float32"),
        ("mixed", "float32")]
    assert [r["devices"] for r in t["scaling"]] == [1, 2, 4]
    assert [r["speedup_vs_one"] for r in t["scaling"]] == [1.0, 1.0, 1.0]
    assert t["layouts"][0] == {"case": "fig2 100 cells float64 exact",
                               "describe": "100 cells / state in shared memory"}
    assert [r["precision"] for r in t["floors"]] == ["float64", "float32"]
    notes = doc["notes"]
    assert "goal: Jaxley's Fig. 2 at 100 cells, float64, exact rates: faster than Jaxley: " \
           "50.00x -> met" in notes
    assert "goal: Jaxley's Fig. 2 at 10000 cells, float32, exact rates: >= 20x Jaxley -> " \
           "not measured" in notes
    assert "goal: 2 GPUs >= 1.9x one: 1.00x -> NOT met" in notes
    # the same seconds for 3 x c91662 (3909 nodes) and the mix's first 3 cells (2289)
    assert "goal: mixed batch within 1.5x of the single-morphology batch, float32: " \
           f"single/mixed throughput {3909 / 2289:.2f} -> NOT met" in notes
    machine = doc["machine"]
    assert machine["jaxley"]["jaxley"] == "stand-in" and machine["copy_bandwidth"]
    assert "33.5 TFLOP/s" in machine["peak_assumed"]


def test_a_failing_case_is_a_note_and_the_others_run(fake_gpu, tmp_path, monkeypatch):
    def run(self, tstop):
        if self.precision == "float32":
            raise RuntimeError("float32 is not built")
        return _Results(self.keys, round(tstop / work.DT))

    monkeypatch.setattr(_GpuSimulation, "run", run)
    doc = _run(tmp_path, "--part", "gpu", "--cells", "2", "--morph-cells", "2",
               "--workloads", "batch", "--gpu-repeats", "1")
    t = _tables(doc)
    assert [(r["batch"], r["precision"]) for r in t["batch"]] == [("single", "float64"),
                                                                   ("mixed", "float64")]
    failed = [n for n in doc["notes"] if "failed" in n]
    assert failed == ["single batch float32: failed: RuntimeError: float32 is not built",
                      "mixed batch float32: failed: RuntimeError: float32 is not built"]


def test_a_failing_jaxley_leaves_hinesbatchs_rows(fake_gpu, tmp_path, monkeypatch):
    def run(self, amps):
        if len(amps) > 2:
            raise MemoryError("RESOURCE_EXHAUSTED: out of memory")
        return JAXLEY_SECONDS, np.full((len(amps), work.STEPS + 1), -65.0)

    monkeypatch.setattr(_Jaxley, "run", run)
    doc = _run(tmp_path, "--part", "gpu", "--cells", "2", "3", "--workloads", "fig2",
               "--precisions", "float64", "--gpu-repeats", "1")
    rows = _tables(doc)["fig2"]
    assert [(r["tool"], r["cells"]) for r in rows] == [
        ("Jaxley", 2), ("hinesbatch", 2), ("hinesbatch", 2), ("hinesbatch", 3),
        ("hinesbatch", 3)]
    assert [r["speedup_vs_jaxley"] is None for r in rows[1:]] == [False, False, True, True]
    assert "fig2 3 cells float64: Jaxley failed: MemoryError: RESOURCE_EXHAUSTED: out of " \
           "memory" in doc["notes"]


def test_a_failing_neuron_leaves_the_engines_cpu_rows(fake_gpu, tmp_path, monkeypatch):
    from hinesbatch.bench import _sim_gpu_cpu as cpu

    def neuron_rows(path, **kw):
        raise RuntimeError("NEURON process failed: boom")

    row = {"tool": "hinesbatch multicore", "rates": "exact", "cells": 2, "nodes": 1101}
    monkeypatch.setattr(cpu, "engine_rows", lambda hb, path, **kw: [dict(row)])
    monkeypatch.setattr(cpu, "neuron_rows", neuron_rows)
    monkeypatch.setitem(sys.modules, "neuron", object())  # importable
    doc = _run(tmp_path, "--part", "gpu", "--workloads", "cpu", "--gpu-repeats", "1")
    assert _tables(doc)["cpu"] == [row]
    assert "cpu: NEURON failed: NEURON process failed: boom" in doc["notes"]


def test_device_facts_failing_leave_the_floors_empty(fake_gpu, tmp_path, monkeypatch):
    def facts():
        raise RuntimeError("cudaErrorMemoryAllocation")

    monkeypatch.setattr(sim_gpu, "device_facts", facts)
    doc = _run(tmp_path, "--part", "gpu", "--cells", "2", "--workloads", "fig2",
               "--precisions", "float64", "--gpu-repeats", "1")
    t = _tables(doc)
    assert all(r["vs_bytes_floor"] is None and r["vs_flops_floor"] is None for r in t["fig2"])
    assert "floors" not in t and len(t["fig2"]) == 3
    assert "no device facts (RuntimeError: cudaErrorMemoryAllocation): no floors" in doc["notes"]


def test_gpu_against_the_cpu_rows():
    fig2 = [{"tool": "hinesbatch", "rates": "exact", "precision": "float64", "cells": n,
             "G_comp_steps_per_s": g} for n, g in ((100, 2.0), (10000, 30.0))]
    fig2.append({**fig2[1], "precision": "float32", "G_comp_steps_per_s": 90.0})
    cpu = [{"tool": "hinesbatch multicore", "rates": "exact", "cores": 16,
            "G_comp_steps_per_s": 0.6},
           {"tool": "NEURON", "rates": "exact", "cores": 16, "G_comp_steps_per_s": 0.25},
           {"tool": "NEURON", "rates": "table", "cores": 16, "G_comp_steps_per_s": 0.5}]
    assert sim_gpu._against_cpu(fig2, cpu) == [
        ("hinesbatch on the GPU, 10000 cells, fp64, exact rates: 30 G compartment-steps/s = "
         "50.0x hinesbatch multicore on 16 cores, 120.0x NEURON on 16 cores")]


def test_jaxley_on_a_jax_without_gpu_is_skipped(fake_gpu, tmp_path, monkeypatch):
    """JAX falls back to the CPU when its CUDA plugin is missing: Jaxley would then take
    minutes per call on the CPU, and its ratios would compare other hardware."""
    monkeypatch.setattr(jaxley_workload, "jaxley_versions", lambda: {
        "jaxley": "stand-in", "jax_device": "TFRT_CPU_0", "jax_platform": "cpu"})
    doc = _run(tmp_path, "--part", "gpu", "--cells", "2", "--workloads", "fig2",
               "--precisions", "float64", "--gpu-repeats", "1")
    assert {r["tool"] for r in _tables(doc)["fig2"]} == {"hinesbatch"} and _Jaxley.built == []
    assert any(n.startswith("Jaxley is not available (JAX computes on TFRT_CPU_0, not a GPU")
               for n in doc["notes"])


def test_non_finite_traces_are_counted_and_noted(fake_gpu, tmp_path, monkeypatch):
    def run(self, tstop):
        res = _Results(self.keys, round(tstop / work.DT))
        if self.precision == "float32":
            res._v = res._v.copy()
            res._v[-1] = np.nan
        return res

    monkeypatch.setattr(_GpuSimulation, "run", run)
    doc = _run(tmp_path, "--part", "gpu", "--cells", "3", "--morph-cells", "2",
               "--workloads", "fig2", "batch", "--gpu-repeats", "1")
    t = _tables(doc)
    assert [r["nonfinite_cells"] for r in t["fig2"] if r["tool"] == "hinesbatch"] == [0, 0, 3, 3]
    assert [r["nonfinite_cells"] for r in t["batch"]] == [0, 0, 2, 2]
    notes = [n for n in doc["notes"] if "non-finite" in n]
    assert notes[0] == ("hinesbatch exact float32, 3 cells: 3 simulation(s) reached a "
                        "non-finite v; the throughput counts work that went wrong")
    assert len(notes) == 4


def test_the_budget_skips_the_remaining_cases(fake_gpu, tmp_path, monkeypatch):
    clock = iter(range(0, 10_000, 100))  # every reading 100 s after the last
    monkeypatch.setattr(sim_gpu, "_now", lambda: float(next(clock)))
    doc = _run(tmp_path, "--part", "gpu", "--cells", "2", "--morph-cells", "2",
               "--workloads", "batch", "--gpu-repeats", "1", "--budget", "150")
    t = _tables(doc)
    assert len(t["batch"]) == 1
    (skipped,) = [n for n in doc["notes"] if n.startswith("skipped")]
    assert skipped == ("skipped (budget of 150 s spent): mixed batch float64, single batch "
                       "float32, mixed batch float32")


def test_jaxley_missing_is_a_note(fake_gpu, tmp_path, monkeypatch):
    monkeypatch.setattr(jaxley_workload, "jaxley_missing", lambda: "ModuleNotFoundError: jax")
    doc = _run(tmp_path, "--part", "gpu", "--cells", "2", "--workloads", "fig2",
               "--precisions", "float32", "--gpu-repeats", "1")
    t = _tables(doc)
    assert {r["tool"] for r in t["fig2"]} == {"hinesbatch"} and _Jaxley.built == []
    assert "Jaxley is not available (ModuleNotFoundError: jax): no Jaxley rows, no ratios" \
        in doc["notes"]
    assert doc["machine"]["jaxley"] == "unavailable: ModuleNotFoundError: jax"


# ---- the CPU workload and Jaxley, for real -----------------------------------------------


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_cpu_workload_multicore_rows():
    from hinesbatch.bench import _sim_gpu_cpu as cpu

    path = work.real_morphologies([work.FIG2_MORPHOLOGY])[0]
    rows = cpu.engine_rows(hb, path, cells=2, repeats=1, steps=40)
    assert [(r["tool"], r["rates"]) for r in rows] == [("hinesbatch multicore", "exact"),
                                                        ("hinesbatch multicore", "table")]
    for r in rows:
        assert r["cells"] == 2 and r["nodes"] == 1101 and r["steps"] == 40
        assert r["G_comp_steps_per_s"] == pytest.approx(2 * 1101 * 40 / r["seconds"] / 1e9)
        assert r["M_comp_steps_per_s_per_core"] == pytest.approx(
            r["G_comp_steps_per_s"] * 1e3 / r["cores"])


@pytest.mark.neuron
@pytest.mark.slow
def test_neuron_rows_one_process_per_core():
    pytest.importorskip("neuron")
    from hinesbatch.bench import _sim_gpu_cpu as cpu

    path = work.real_morphologies([work.FIG2_MORPHOLOGY])[0]
    rows = cpu.neuron_rows(path, processes=2, repeats=2, nodes=1101, steps=40)
    assert [(r["tool"], r["rates"], r["cores"]) for r in rows] == [
        ("NEURON", "exact", 2), ("NEURON", "table", 2)]
    for r in rows:
        assert r["seconds"] > 0 and r["G_comp_steps_per_s"] == pytest.approx(
            2 * 1101 * 40 / r["seconds"] / 1e9)


@pytest.mark.neuron
def test_neuron_model_takes_a_fixed_nseg():
    pytest.importorskip("neuron")
    from hinesbatch.bench.neuron_models import HHModel, HHProtocol

    path = work.real_morphologies([work.FIG2_MORPHOLOGY])[0]
    model = HHModel(path, HHProtocol(), nseg=work.NCOMP)
    try:
        assert len(model.nseg) == 220 and set(model.nseg.values()) == {4}
    finally:
        model.close()


@pytest.mark.slow
def test_jaxley_builds_the_fig2_cell_and_runs_a_batch():
    """With Jaxley installed (optional): the same file, 4 compartments per branch, one trace
    per amplitude, in the precision asked for."""
    pytest.importorskip("jaxley")
    path = work.real_morphologies([work.FIG2_MORPHOLOGY])[0]
    for precision in ("float32", "float64"):
        fig2 = jaxley_workload.JaxleyFig2(path, precision=precision, steps=120)
        assert fig2.compartments == 4 * fig2.branches and 215 <= fig2.branches <= 225
        seconds, v = fig2.run([0.5, 2.5])
        assert seconds > 0 and v.shape == (2, 121) and v.dtype == np.dtype(precision)
        assert v[0, 0] == pytest.approx(-65.0) and v[1, -1] > v[0, -1] + 1  # clamped from 2 ms
    jaxley_workload.JaxleyFig2(path, precision="float32", steps=40)  # x64 off again
    with pytest.raises(RuntimeError, match="built for float64"):
        fig2.run([1.0])
