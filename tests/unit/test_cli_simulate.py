"""``hinesbatch simulate`` end to end: arguments, the .npz it writes, the summary, errors."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from hinesbatch import cli
from hinesbatch.sim import simulate_passive

REAL = Path(__file__).parents[1] / "data" / "morphologies" / "real"


def test_default_cell_writes_npz_and_prints_summary(tmp_path, capsys):
    out = tmp_path / "traces.npz"
    assert cli.main(["simulate", "--tstop", "1", "--out", str(out), "--backend", "serial"]) == 0
    text = capsys.readouterr().out
    with np.load(out) as f:
        t, v, params = f["t"], f["v"], json.loads(str(f["params"]))
    assert t.shape == (41,) and v.shape == (1, 41)
    assert v[0, 0] == -65.0 and t[0] == 0.0 and t[-1] == pytest.approx(1.0)
    assert params["morphology"].endswith("c91662.swc") and params["n_steps"] == 40
    assert params["iclamp"] == {"amp_nA": 0.5, "delay_ms": 10.0, "dur_ms": 50.0}
    for word in ("c91662.swc", "389 nodes", "backend:", "serial", str(out)):
        assert word in text


def test_options_reach_the_simulation(tmp_path, capsys):
    path = REAL / "h10.CNG.swc"
    out, png = tmp_path / "h10.npz", tmp_path / "h10.png"
    args = ["simulate", str(path), "--tstop", "2", "--dt", "0.01", "--iclamp", "0.3,0.5,1",
            "--d-lambda", "0.1", "--cm", "0.9", "--ra", "100", "--g-pas", "2e-4", "--e-pas",
            "-60", "--v-init", "-62", "--cells", "3", "--backend", "multicore",
            "--record", "dend[2](1)", "--out", str(out), "--plot", str(png)]
    with pytest.warns(UserWarning):
        assert cli.main(args) == 0
    with pytest.warns(UserWarning):
        api = simulate_passive(path, tstop=2, dt=0.01, iclamp=(0.3, 0.5, 1), d_lambda=0.1,
                               cm=0.9, ra=100, g_pas=2e-4, e_pas=-60, v_init=-62,
                               record=("dend[2]", 1.0), backend="serial")
    with np.load(out) as f:
        v, params = f["v"], json.loads(str(f["params"]))
    assert v.shape == (3, 201)
    np.testing.assert_array_equal(v, np.broadcast_to(api.v, v.shape))
    assert params["record"]["section"] == "dend[2]" and params["n_cells"] == 3
    assert png.stat().st_size > 1000 and png.read_bytes()[:4] == b"\x89PNG"
    assert "x 3 cells" in capsys.readouterr().out


def test_file_without_soma_suggests_clamp(tmp_path, capsys):
    path = str(REAL / "Gad1-F-600000.CNG.swc")
    out = str(tmp_path / "x.npz")
    with pytest.warns(UserWarning):
        assert cli.main(["simulate", path, "--tstop", "1", "--out", out]) == 1
    err = capsys.readouterr().err
    assert "error:" in err and "--clamp" in err and "axon[0](0.5)" in err
    assert not Path(out).exists()
    with pytest.warns(UserWarning):
        assert cli.main(["simulate", path, "--tstop", "1", "--out", out, "--clamp",
                         "axon[0](0.5)", "--record", "axon[0](0.5)"]) == 0


@pytest.mark.parametrize("args, match", [
    (["--iclamp", "1,2"], "AMP_NA,DELAY_MS,DUR_MS"),
    (["--nseg", "3", "--d-lambda", "0.1"], "not allowed with"),
    (["--cells", "0"], "positive integer"),
    (["--clamp", "soma[0](2)"], r"x must lie in \[0, 1\]"),
])
def test_bad_arguments_exit_2_with_a_message(tmp_path, capsys, args, match):
    with pytest.raises(SystemExit) as exc:
        cli.main(["simulate", "--out", str(tmp_path / "x.npz"), *args])
    assert exc.value.code == 2
    assert __import__("re").search(match, capsys.readouterr().err)


def test_runtime_errors_exit_1(tmp_path, capsys):
    out = str(tmp_path / "x.npz")
    assert cli.main(["simulate", "--out", out, "--backend", "nope"]) == 1
    assert "valid backends" in capsys.readouterr().err
    assert cli.main(["simulate", str(tmp_path / "missing.swc"), "--out", out]) == 1
    assert "missing.swc" in capsys.readouterr().err


def test_plot_without_matplotlib_names_the_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises
    out = tmp_path / "x.npz"
    assert cli.main(["simulate", "--out", str(out), "--plot", str(tmp_path / "x.png")]) == 1
    assert "hinesbatch[plot]" in capsys.readouterr().err
    assert not out.exists()
