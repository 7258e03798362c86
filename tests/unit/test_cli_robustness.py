"""``hinesbatch`` under failure: output written atomically, folders and the plot checked before
the run, one-line errors, Ctrl-C, ``--version``, ``--help`` and SWC warnings."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from hinesbatch import __version__, cli
from hinesbatch.sim import command, memory

REAL = Path(__file__).parents[1] / "data" / "morphologies" / "real"
SRC = Path(__file__).resolve().parents[2] / "src"


def _simulate(*args: str) -> int:
    return cli.main(["simulate", "--tstop", "1", "--backend", "serial", *args])


@pytest.fixture
def no_run(monkeypatch):
    """Fails the test if the simulation starts (for checks that must come first)."""
    def refuse(*args, **kwargs):
        raise AssertionError("the simulation ran before the check")

    monkeypatch.setattr(command, "simulate_passive", refuse)


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_out_without_extension_prints_the_file_written(tmp_path, capsys):
    assert _simulate("--out", str(tmp_path / "traces")) == 0
    assert (tmp_path / "traces.npz").is_file() and not (tmp_path / "traces").exists()
    assert f"output:   {tmp_path / 'traces.npz'}" in capsys.readouterr().out


def test_missing_output_folder_fails_before_the_run(tmp_path, capsys, no_run):
    assert _simulate("--out", str(tmp_path / "no" / "x.npz")) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"the folder {tmp_path / 'no'} does not exist" in err


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="root may write anywhere")
def test_unwritable_output_folder_fails_before_the_run(tmp_path, capsys, no_run):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    assert _simulate("--out", str(locked / "x.npz")) == 1
    assert "cannot write" in capsys.readouterr().err


@pytest.mark.parametrize("plot, match", [("no/x.png", "does not exist"),
                                         ("x.nonsense", "cannot write '.nonsense' files")])
def test_bad_plot_fails_before_the_run(tmp_path, capsys, no_run, plot, match):
    assert _simulate("--out", str(tmp_path / "x.npz"), "--plot", str(tmp_path / plot)) == 1
    assert match in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_plot_without_extension_is_a_png(tmp_path, capsys):
    assert _simulate("--out", str(tmp_path / "x.npz"), "--plot", str(tmp_path / "fig")) == 0
    assert (tmp_path / "fig.png").read_bytes()[:4] == b"\x89PNG"
    assert f"{tmp_path / 'fig.png'}" in capsys.readouterr().out
    assert _leftovers(tmp_path) == []


def _earlier(tmp_path) -> tuple[Path, bytes]:
    out = tmp_path / "x.npz"
    assert _simulate("--out", str(out)) == 0
    return out, out.read_bytes()


@pytest.mark.parametrize("error, status", [(OSError(28, "No space left on device"), 1),
                                           (KeyboardInterrupt(), 130)])
def test_a_failing_write_keeps_the_earlier_file(tmp_path, capsys, monkeypatch, error, status):
    out, before = _earlier(tmp_path)
    real_savez = np.savez

    def half_written(file, **arrays):
        file.write(b"PK\x03\x04 half a zip")
        raise error

    monkeypatch.setattr(command.np, "savez", half_written)
    assert _simulate("--out", str(out), "--tstop", "2") == status
    assert out.read_bytes() == before  # untouched, still loadable
    with np.load(out) as f:
        assert f["v"].shape == (1, 41)
    assert _leftovers(tmp_path) == []
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.strip().count("\n") == 0
    monkeypatch.setattr(command.np, "savez", real_savez)


def test_interrupt_during_the_run_leaves_nothing(tmp_path, capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(command, "simulate_passive", interrupted)
    assert _simulate("--out", str(tmp_path / "x.npz"), "--stream") == 130
    assert "hinesbatch: interrupted" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # neither the output nor the streamed recordings


def test_ctrl_c_exits_130_with_one_line_and_no_file(tmp_path):
    """SIGINT while the progress bar runs: no traceback, status 130, no file."""
    import threading

    out = tmp_path / "x.npz"
    env = dict(os.environ, PYTHONPATH=str(SRC))
    proc = subprocess.Popen(
        [sys.executable, "-m", "hinesbatch.cli", "simulate", "--tstop", "1e6", "--progress",
         "--backend", "serial", "--out", str(out)],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env, text=True)
    err: list[str] = []
    reader = threading.Thread(target=lambda: err.extend(iter(lambda: proc.stderr.read(1), "")))
    reader.start()
    try:
        deadline = time.monotonic() + 60
        while "step" not in "".join(err) and time.monotonic() < deadline:
            time.sleep(0.1)  # until the bar shows: the loop is running
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        reader.join(timeout=10)
    text = "".join(err)
    assert proc.returncode == 130, text
    assert "Traceback" not in text and text.strip().endswith("hinesbatch: interrupted")
    assert list(tmp_path.iterdir()) == []


def test_user_errors_are_one_line_with_status_1(tmp_path, capsys, monkeypatch):
    out = str(tmp_path / "x.npz")
    monkeypatch.setattr(memory, "available_host_memory", lambda: (2**31, "a test limit"))
    for args, words in [(["--cm", "0", "--g-pas", "0"], "cm must be finite and > 0"),
                        (["--ra", "1e-320"], "ra = 1e-320"),
                        (["--g-pas", "1e306", "--v-init", "1e6"], "became -inf in cell 0"),
                        (["--cells", "10000000"], "needs about")]:
        assert _simulate("--out", out, *args) == 1
        err = capsys.readouterr().err
        assert err.startswith("hinesbatch simulate: error: ") and words in err, err
        assert err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_stream_writes_the_same_file_and_cleans_up(tmp_path):
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    assert _simulate("--out", str(a), "--cells", "2", "--record-every", "3") == 0
    assert _simulate("--out", str(b), "--cells", "2", "--record-every", "3", "--stream") == 0
    with np.load(a) as fa, np.load(b) as fb:
        np.testing.assert_array_equal(fa["v"], fb["v"])
        np.testing.assert_array_equal(fa["t"], fb["t"])
        assert fa["v"].shape == (2, 14) and json.loads(str(fb["params"]))["record_every"] == 3
    assert _leftovers(tmp_path) == []


def test_summary_reports_the_first_step_apart(tmp_path, capsys):
    assert _simulate("--out", str(tmp_path / "x.npz")) == 0
    assert "s first step (loading or compiling kernels)" in capsys.readouterr().out


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.strip() == f"hinesbatch {__version__}"


@pytest.mark.parametrize("argv, words", [([], "examples:"), (["simulate"], "--record-every"),
                                         (["bench", "cpu"], "NEURON")])
def test_help_describes_commands_not_internals(capsys, argv, words):
    with pytest.raises(SystemExit):
        cli.main([*argv, "--help"])
    out = capsys.readouterr().out
    assert words in out and "dispatcher" not in out and "configure(" not in out


def test_swc_warnings_point_at_the_swc_line_not_at_hinesbatch(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(SRC))
    path = REAL / "barrionuevo_cell1zr.CNG.swc"
    proc = subprocess.run(
        [sys.executable, "-m", "hinesbatch.cli", "simulate", str(path), "--tstop", "0.1",
         "--backend", "serial", "--out", str(tmp_path / "x.npz")],
        capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith(f"{path}:23: warning: ")
    assert "[SWCDetachedNeuriteWarning]" in proc.stderr
    assert ".py:" not in proc.stderr and "return read_swc" not in proc.stderr


def test_warning_format_is_restored_after_main(tmp_path):
    import warnings

    before = warnings.formatwarning
    _simulate("--out", str(tmp_path / "x.npz"))
    assert warnings.formatwarning is before


def test_output_files_get_the_usual_permissions(tmp_path):
    """Written through a temporary file, but with the mode a plain open() would give."""
    (tmp_path / "plain").write_bytes(b"")
    expected = (tmp_path / "plain").stat().st_mode & 0o777
    assert _simulate("--out", str(tmp_path / "x.npz"), "--plot", str(tmp_path / "x.png")) == 0
    for name in ("x.npz", "x.png"):
        assert (tmp_path / name).stat().st_mode & 0o777 == expected
