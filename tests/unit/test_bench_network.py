"""``hinesbatch bench network``: registered, runs quickly, writes its files with the expected
fields, and compares the rasters with NEURON's where NEURON is installed (no timing checks)."""
from __future__ import annotations

import importlib.util
import json

import pytest

from hinesbatch import cli

pytestmark = pytest.mark.slow


def test_bench_network_is_a_registered_command():
    assert "network" in cli.BENCHMARKS
    parser = cli.build_parser()
    args = parser.parse_args(["bench", "network", "--quick", "--nring", "2", "3"])
    assert args.nring == [2, 3] and args.quick


@pytest.mark.parametrize("neuron", [
    pytest.param(False, id="no-neuron"),
    pytest.param(True, id="neuron", marks=pytest.mark.skipif(
        importlib.util.find_spec("neuron") is None, reason="NEURON is not installed")),
])
def test_quick_run_writes_json_and_markdown(tmp_path, capsys, neuron):
    argv = ["bench", "network", "--quick", "--nring", "2", "--out", str(tmp_path)]
    assert cli.main(argv + ([] if neuron else ["--no-neuron"])) == 0
    doc = json.loads((tmp_path / "network.json").read_text())
    (row,) = doc["tables"]["ringtest: hinesbatch ranks vs NEURON threads"]
    assert row["cells"] == 16 and row["ranks_or_threads"] == 1 and row["spikes"] > 0
    assert row["hinesbatch_s"] > 0 and row["setup_s"] > 0 and row["epochs"] > 0
    assert doc["machine"]["hinesbatch"] and "ringtest" in doc["machine"]["model"]
    if neuron:
        assert row["same_raster"] is True and row["neuron_s"] > 0
        assert "raster identical" in " ".join(doc["notes"])
    else:
        assert row["neuron_s"] is None
    assert "| cells |" in (tmp_path / "network.md").read_text()


def test_bad_options_are_refused(tmp_path, capsys):
    assert cli.main(["bench", "network", "--ranks", "0", "--out", str(tmp_path)]) == 1
    assert "--ranks and --repeats must be >= 1" in capsys.readouterr().err
