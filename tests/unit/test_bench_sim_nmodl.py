"""``hinesbatch bench sim --part nmodl``: skipped without the mod files, clear errors for a
wrong folder or morphology, and a quick real run that writes its files (no timing checks).

The model's mod files are ModelDB 20756's, which the repository does not ship: the real run
reads them from ``$HB_MODDIR`` (default ``.modeldb/20756`` of the source tree) and is skipped
where that folder, NEURON or a C compiler for nrnivmodl is missing. It runs the GPU part as a
dry run on the multicore engine.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

import hinesbatch as hb
from hinesbatch import cli, mechanisms
from hinesbatch.bench import _nmodl_model as model

ROOT = Path(__file__).resolve().parents[2]
MOD_DIR = Path(os.environ.get("HB_MODDIR") or ROOT / ".modeldb" / "20756")


def _bench(*args) -> int:
    return cli.main(["bench", "sim", "--part", "nmodl", *map(str, args)])


def test_without_mod_dir_the_part_is_skipped_with_a_message(tmp_path, capsys):
    assert _bench("--out", tmp_path) == 0
    err = capsys.readouterr().err
    assert "skipped: no --mod-dir" in err and "20756" in err
    assert not (tmp_path / "sim_nmodl.json").exists()


def test_a_folder_without_the_models_files_is_an_error_naming_them(tmp_path, capsys):
    folder = tmp_path / "mods"
    folder.mkdir()
    (folder / "naf.mod").write_text("NEURON { SUFFIX naf }\n")
    assert _bench("--mod-dir", folder, "--out", tmp_path / "out") == 1
    err = capsys.readouterr().err
    assert "missing ar.mod, cad.mod" in err and "naf.mod" not in err.split("missing")[1]
    assert _bench("--mod-dir", tmp_path / "nowhere", "--out", tmp_path / "out") == 1
    assert "no such folder" in capsys.readouterr().err


def test_a_region_without_densities_is_refused(tmp_path):
    swc = tmp_path / "cell.swc"
    swc.write_text("1 1 0 0 0 5 -1\n"
                   "2 3 0 5 0 1 1\n"
                   "3 7 0 0 5 1 1\n")  # <-- type 7: no region of the model
    cell_regions = hb.Cell(str(swc), nseg=1).regions()
    extra = [r for r in cell_regions if r != "all" and r not in model.PASSIVE]
    assert extra
    with pytest.raises(ValueError, match=f"region\\(s\\) {extra[0]} have no densities"):
        model.build_cell(hb, swc)


def _real_run_possible() -> str | None:
    if not (MOD_DIR / "cad.mod").is_file():
        return f"ModelDB 20756's mod files are not in {MOD_DIR} (set HB_MODDIR)"
    try:
        import neuron  # noqa: F401
    except ImportError:
        return "NEURON is not installed"
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        return "nrnivmodl needs a C compiler"
    return None


@pytest.fixture
def registry():
    """The model's names free before the run (other tests may have loaded files of the same
    names) and the names it registers removed afterwards."""
    for name in model.FILES:
        mechanisms.unregister(name)
    before = set(mechanisms._REGISTERED)
    yield
    for name in set(mechanisms._REGISTERED) - before:
        mechanisms.unregister(name)


@pytest.mark.skipif(_real_run_possible() is not None, reason=str(_real_run_possible()))
def test_quick_run_writes_rows_that_agree_with_neuron(tmp_path, capsys, registry):
    out = tmp_path / "out"
    status = _bench("--mod-dir", MOD_DIR, "--quick", "--nmodl-cells", 2,
                    "--nmodl-gpu-tstop", 0.25, "--engine-backend", "multicore", "--out", out)
    assert status == 0, capsys.readouterr().err
    doc = json.loads((out / "sim_nmodl.json").read_text())
    assert (out / "sim_nmodl.md").read_text().startswith("# Benchmark `sim_nmodl`")
    cpu, gpu = doc["tables"].values()
    assert [r["tables"] for r in cpu] == [True, False]
    for r in cpu:
        assert r["steps"] == 80 and r["nodes"] == doc["machine"]["nodes"] > 1000
        assert r["max_abs_dv_mV"] <= 1e-9 and r["same_spike_times"] is True
        assert r["speedup_vs_neuron"] > 0 and r["neuron_segments"] < r["nodes"]
    tools = [r["tool"] for r in gpu]
    assert tools[0].startswith("NEURON pc.nthread(") and tools[1] == "hinesbatch multicore float64"
    for r in gpu:
        assert r["steps"] == 10 and r["max_abs_dv_vs_serial_mV"] <= 1e-9
    assert gpu[0]["cells"] == 2 and gpu[1]["cells"] == 2
    assert gpu[1]["same_spike_times_vs_serial"] is True
    notes = "\n".join(doc["notes"])
    assert "goal >= 2x" in notes and "a dry run on the CPU: goal not judged" in notes
