"""``hinesbatch bench cpu --quick`` end to end, and the shared result writers (no timing checks)."""
from __future__ import annotations

import json

import pytest

from hinesbatch import cli
from hinesbatch.bench.common import interleaved_times, machine_info, markdown_table, write_results


@pytest.mark.slow
def test_bench_cpu_quick_writes_json_and_markdown(tmp_path, capsys):
    assert cli.main(["bench", "cpu", "--quick", "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "cpu.json").read_text())
    machine = doc["machine"]
    for key in ("cpu_model", "logical_cpus", "python", "date", "versions", "protocol"):
        assert machine[key]
    assert machine["versions"]["numpy"] and machine["versions"]["numba"]
    solver, sim = doc["tables"].values()
    assert [r["cells"] for r in solver] == [2, 8]
    for r in solver:
        assert r["serial_ms"] > 0 and r["multicore_ms"] > 0 and r["nodes"] == 923
        assert r["max_abs_diff"] == 0.0  # same arithmetic per cell on both backends
    (row,) = sim
    assert row["steps"] == 80 and row["hinesbatch_s"] > 0
    if machine["versions"]["neuron"]:
        assert row["neuron_s"] > 0 and row["max_abs_dv_mV"] < 1e-6
    assert any("goal" in note for note in doc["notes"])
    md = (tmp_path / "cpu.md").read_text()
    assert md.startswith("# Benchmark `cpu`") and "| morphology | nodes | cells |" in md
    assert "wrote" in capsys.readouterr().out


def test_bench_cpu_missing_file_is_an_error(tmp_path, capsys):
    assert cli.main(["bench", "cpu", "--swc", str(tmp_path / "nope.swc"), "--out",
                     str(tmp_path)]) == 1
    assert "nope.swc" in capsys.readouterr().err


def test_write_results_tables_and_notes(tmp_path):
    rows = [{"name": "a", "ms": 1.23456789, "ok": True, "missing": None},
            {"name": "b", "ms": float("nan"), "ok": False, "missing": 3}]
    json_path, md_path = write_results(rows, tmp_path / "sub", "demo", question="Q?",
                                       notes=["goal met"], machine=machine_info({"gpu": "none"}))
    doc = json.loads(json_path.read_text())
    assert doc["tables"]["results"][0]["ms"] == 1.23456789 and doc["machine"]["gpu"] == "none"
    md = md_path.read_text()
    assert "**Question.** Q?" in md and "- goal met" in md and "- gpu: none" in md
    assert "| a | 1.235 | yes | – |" in md and "| b | nan | no | 3 |" in md


def test_markdown_table_empty_and_interleaving_order():
    assert markdown_table([]) == "(no rows)"
    calls = []
    times = interleaved_times({"x": lambda: calls.append("x"), "y": lambda: calls.append("y")},
                              repeats=2, setup=lambda: calls.append("s"))
    assert calls == ["s", "x", "s", "y"] * 3  # one warm-up round, then two timed rounds
    assert {k: len(v) for k, v in times.items()} == {"x": 2, "y": 2}
    with pytest.raises(ValueError, match="repeats"):
        interleaved_times({}, repeats=0)


def test_bench_cpu_writes_to_the_current_folder_by_default(tmp_path, monkeypatch, capsys):
    """Not into the source tree's benchmarks/results/ (a snapshot kept under version control)."""
    monkeypatch.chdir(tmp_path)
    assert cli.main(["bench", "cpu", "--quick", "--no-neuron"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cpu.json", "cpu.md"]
    assert "wrote cpu.json and cpu.md" in capsys.readouterr().out


def test_machine_info_names_the_commit_a_copied_tree_was_taken_from(monkeypatch):
    monkeypatch.setenv("HINESBATCH_GIT_REVISION", "0123456789ab")
    assert machine_info()["git"] == "0123456789ab"
    monkeypatch.delenv("HINESBATCH_GIT_REVISION")
    assert machine_info()["git"] != "0123456789ab"
