"""``hinesbatch bench sim``: it runs, writes its files with the expected fields, and does
without NEURON (no timing checks).

The tests with fakes replace ``hb.Cell`` and ``hb.Simulation`` by stand-ins that return a
trace of the right length (NEURON, when installed, runs for real); the last test runs the
real simulator and is skipped where it is not installed.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import hinesbatch as hb
from hinesbatch import cli
from hinesbatch.bench import sim as bench_sim
from hinesbatch.bench.neuron_models import HHProtocol, neuron_script

REAL = Path(__file__).parents[1] / "data" / "morphologies" / "real"


class _Results:
    def __init__(self, n_samples: int, keys):
        self._v = np.linspace(-65.0, 30.0, n_samples)
        self._dt = 0.025
        self.spikes = {keys[1]: np.array([0.5])}
        self.meta = {"step_seconds": 1e-6 * n_samples}

    def __getitem__(self, key):
        return self._v

    def time(self, key):
        return np.arange(self._v.size) * self._dt


class _Cell:
    def __init__(self, path, *, d_lambda=None, ra=35.4, cm=1.0, nseg=None):
        self.geometry = hb.discretize(path, d_lambda=d_lambda, ra=ra, cm=cm)
        self.calls = []

    def insert(self, name, region="all", **params):
        self.calls.append(("insert", name))
        return self

    def place(self, kind, location, **params):
        self.calls.append(("place", kind, location, params))


class _Simulation:
    made: list = []

    def __init__(self, cells, *, dt=0.025, v_init=-65.0, backend="auto", tables=True, **kw):
        self.cells, self.dt, self.backend, self.tables = list(cells), dt, backend, tables
        _Simulation.made.append(self)

    def record(self, variable, *, cell=0, location="soma[0](0.5)", every=1):
        self.v = f"{variable}@{cell}:{location}"
        return self.v

    def spike_source(self, cell, location="soma[0](0.5)", threshold=10.0):
        self.threshold = threshold
        return cell

    def record_spikes(self, source):
        self.spikes = f"spikes@{source}:soma[0](0.5)"
        return self.spikes

    def run(self, tstop, *, progress=False):
        return _Results(int(round(tstop / self.dt)) + 1, (self.v, self.spikes))


@pytest.fixture
def fake(monkeypatch):
    """Fake simulator; ``time_command`` records the command lines instead of running them."""
    _Simulation.made = []
    commands = []
    monkeypatch.setattr(hb, "Cell", _Cell, raising=False)
    monkeypatch.setattr(hb, "Simulation", _Simulation, raising=False)
    monkeypatch.setattr(bench_sim, "time_command", lambda argv: commands.append(argv) or 1.0)
    return commands


def _quick(tmp_path, *extra) -> dict:
    assert cli.main(["bench", "sim", "--quick", "--out", str(tmp_path), *extra]) == 0
    return json.loads((tmp_path / "sim.json").read_text())


def test_quick_writes_json_and_markdown_with_every_field(fake, tmp_path, capsys):
    doc = _quick(tmp_path)
    machine = doc["machine"]
    for key in ("cpu_model", "logical_cpus", "usable_cpus", "python", "date", "versions",
                "protocol", "batch", "exp"):
        assert machine[key], key
    assert "Ra 100.0" in machine["protocol"] and "IClamp 1.0 nA 5.0-55.0 ms" in machine["protocol"]
    single, batch, command = doc["tables"].values()
    assert [r["hh_tables"] for r in single] == [True, False]
    for r in single:
        assert r["morphology"] == "c91662.swc" and r["nodes"] == 1303 and r["steps"] == 80
        assert r["hinesbatch_us_per_step"] > 0 and r["hinesbatch_Mcomp_steps_per_s"] > 0
        if machine["versions"]["neuron"]:
            assert r["neuron_segments"] == 1108 and r["neuron_us_per_step"] > 0
            assert r["speedup_vs_neuron"] > 0 and r["max_abs_dv_mV"] >= 0
            assert r["same_spike_times"] is False  # the fake's spike is not NEURON's
    (b,) = batch
    assert b["cells"] == 4 and b["steps"] == 40 and b["threads"] >= 1 and b["efficiency"] > 0
    assert b["serial_step_s"] == b["multicore_step_s"] == pytest.approx(41e-6)
    assert b["stepping_efficiency"] == pytest.approx(1.0 / b["threads"])
    assert b["max_abs_dv_mV"] == 0.0
    (c,) = command
    assert c["hinesbatch_s"] == 1.0 and c["hinesbatch_cold_s"] == 1.0 and c["tstop_ms"] == 2.0
    tables = [s.tables for s in _Simulation.made if len(s.cells) == 1]
    assert set(tables) == {True, False} and {s.backend for s in _Simulation.made} == {
        "serial", "multicore"}
    assert all(s.threshold == 10.0 for s in _Simulation.made)
    md = (tmp_path / "sim.md").read_text()
    assert md.startswith("# Benchmark `sim`\n\n**Question.** Is hinesbatch's serial simulation")
    assert "| morphology | nodes | steps | hh_tables |" in md and "## Notes" in md
    if machine["versions"]["neuron"]:  # the fake's trace is not NEURON's: no verdict on speed
        assert sum("goal >= 2x -> not judged: the results differ" in n for n in doc["notes"]) == 2
    assert "wrote" in capsys.readouterr().out


def test_whole_command_lines_run_the_same_protocol(fake, tmp_path):
    _quick(tmp_path)
    ours = next(argv for argv in fake if "hinesbatch.cli" in argv)
    assert ours[:4] == [sys.executable, "-m", "hinesbatch.cli", "simulate"]
    joined = " ".join(ours)
    for words in ("--mechanism hh", "--d-lambda 0.1", "--ra 100.0", "--iclamp 1.0,5.0,50.0",
                  "--tstop 2.0", "--backend serial", "--dt 0.025"):
        assert words in joined, words
    neuron_runs = [argv for argv in fake if argv[-1].endswith("neuron_hh.py")]
    if bench_sim._neuron_missing() is None:
        assert len(neuron_runs) == 2  # a cold run and one timed run


def test_without_neuron_the_columns_are_empty_with_a_note(fake, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "neuron", None)  # `import neuron` raises
    doc = _quick(tmp_path)
    single, batch, command = doc["tables"].values()
    for r in single:
        assert r["neuron_us_per_step"] is None and r["speedup_vs_neuron"] is None
        assert r["hinesbatch_us_per_step"] > 0
    assert command[0]["neuron_s"] is None and command[0]["hinesbatch_s"] == 1.0
    assert not any(argv[-1].endswith("neuron_hh.py") for argv in fake)
    assert any(note.startswith("NEURON is not available") for note in doc["notes"])
    assert "NEURON is not available" in capsys.readouterr().err
    assert "| – |" in (tmp_path / "sim.md").read_text()


def test_no_command_and_no_neuron(fake, tmp_path):
    doc = _quick(tmp_path, "--no-command", "--no-neuron")
    assert len(doc["tables"]) == 2 and fake == []
    assert "NEURON skipped (--no-neuron): no NEURON columns" in doc["notes"]


def test_command_only_times_the_whole_commands_alone(fake, tmp_path, capsys):
    doc = _quick(tmp_path, "--command-only", "--no-neuron")
    (command,) = doc["tables"].values()
    assert list(doc["tables"]) == [
        "Whole command, start-up included: hinesbatch simulate vs a NEURON script"]
    assert command[0]["morphology"] == "c91662.swc" and command[0]["hinesbatch_s"] == 1.0
    assert _Simulation.made == [] and len(fake) == 2  # no per-step rows; cold + one timed
    assert cli.main(["bench", "sim", "--quick", "--command-only", "--no-command", "--out",
                     str(tmp_path / "none")]) == 1
    assert "leave nothing to run" in capsys.readouterr().err


def test_a_failing_command_is_a_note(fake, tmp_path, monkeypatch):
    def fails(argv):
        raise RuntimeError("hinesbatch simulate failed (1): boom")

    monkeypatch.setattr(bench_sim, "time_command", fails)
    doc = _quick(tmp_path, "--no-neuron")
    assert len(doc["tables"]) == 2
    assert any("whole command not timed" in note and "boom" in note for note in doc["notes"])


def test_errors_before_anything_runs(fake, tmp_path, capsys, monkeypatch):
    assert cli.main(["bench", "sim", "--swc", str(tmp_path / "nope.swc"), "--out",
                     str(tmp_path)]) == 1
    assert "nope.swc" in capsys.readouterr().err
    assert cli.main(["bench", "sim", "--quick", "--batch-cells", "-1", "--out",
                     str(tmp_path)]) == 1
    assert "must be >= 1" in capsys.readouterr().err
    monkeypatch.delattr(hb, "Simulation")
    monkeypatch.delitem(hb._PUBLIC, "Simulation")  # not imported on first use either
    assert cli.main(["bench", "sim", "--quick", "--out", str(tmp_path)]) == 1
    assert "hinesbatch.Simulation" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_out_defaults_to_the_current_folder():
    parser = argparse.ArgumentParser()
    bench_sim.configure(parser)
    assert parser.parse_args([]).out == "."


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_default_morphologies_are_small_middle_large():
    nodes = [hb.discretize(REAL / name, d_lambda=0.1, ra=100.0).n_nodes
             for name in bench_sim.MORPHOLOGIES]
    assert nodes == sorted(nodes) and nodes[0] < 300 and 900 <= nodes[1] <= 1400
    assert nodes[2] > 1800


def test_time_command_reports_a_failure():
    with pytest.raises(RuntimeError, match="failed"):
        bench_sim.time_command([sys.executable, "-c", "import sys; sys.exit('boom')"])
    assert bench_sim.time_command([sys.executable, "-c", "import hinesbatch"]) > 0


@pytest.mark.neuron
def test_neuron_script_gives_the_models_trace(tmp_path):
    """The whole-command NEURON script and HHModel compute the same trace."""
    pytest.importorskip("neuron")
    from hinesbatch.bench.neuron_models import HHModel

    path, out = REAL / "mp_ma_40984_gc2.CNG.swc", tmp_path / "v.npz"
    protocol = HHProtocol()
    script = tmp_path / "s.py"
    script.write_text(neuron_script(path, protocol, tstop=10.0, out=out))
    bench_sim.time_command([sys.executable, str(script)])
    model = HHModel(path, protocol, usetable=True)
    try:
        model.run(10.0)
        with np.load(out) as f:
            np.testing.assert_array_equal(f["v"], model.trace())
            assert f["t"].size == model.trace().size == 401
        assert sum(model.nseg.values()) == int(hb.discretize(path, d_lambda=0.1, ra=100.0).nseg.sum())
    finally:
        model.close()


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(hb, "Simulation"),
                    reason="hinesbatch.Simulation (the active simulator) is not installed")
def test_quick_with_the_real_simulator(tmp_path):
    doc = _quick(tmp_path)
    single, batch, command = doc["tables"].values()
    for r in single:
        assert r["steps"] == 80 and r["hinesbatch_us_per_step"] > 0
        if r["neuron_us_per_step"] is not None:
            assert r["max_abs_dv_mV"] <= 1e-9
    assert batch[0]["max_abs_dv_mV"] == 0.0 and command[0]["hinesbatch_s"] > 0
