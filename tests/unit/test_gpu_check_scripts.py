"""The GPU check scripts name their results folder after the card they ran on."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _fake_nvidia_smi(folder: Path, name: str) -> None:
    exe = folder / "nvidia-smi"
    exe.write_text(f"#!/bin/sh\necho '{name}'\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)


@pytest.mark.skipif(sys.platform == "win32", reason="bash scripts")
@pytest.mark.parametrize("card, folder", [("NVIDIA H100 80GB HBM3", "h100"),
                                          ("NVIDIA H200", "h200"),
                                          ("Tesla V100-SXM2-16GB", "gpu")])
def test_gpu_check_tridiagonal_writes_into_the_cards_folder(tmp_path, card, folder):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _fake_nvidia_smi(bin_dir, card)
    out = tmp_path / "out"
    # PYTHON=true: every Python step of the script succeeds without running anything.
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", OUT=str(out),
               PYTHON="true")
    run = subprocess.run(["bash", str(ROOT / "scripts" / "gpu-check-tridiagonal"), "bench"],
                         env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == [folder]


@pytest.mark.skipif(sys.platform == "win32", reason="bash scripts")
@pytest.mark.parametrize("wheels", [("jaxley-0.14.0-py3-none-any.whl",
                                     "pandas-2.3.3-cp312-cp312-manylinux_2_28_x86_64.whl"), ()])
def test_gpu_check_sim_installs_the_wheels_then_runs_the_gpu_part(tmp_path, wheels):
    """``gpu-check sim``: every wheel of .whl/ into /tmp/site without an index, then
    ``bench sim --part gpu`` into the card's folder with /tmp/site first on PYTHONPATH and
    the extra arguments passed on."""
    import shutil

    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "gpu-check", repo / "scripts" / "gpu-check")
    if wheels:
        (repo / ".whl").mkdir()
        for name in wheels:
            (repo / ".whl" / name).write_bytes(b"")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _fake_nvidia_smi(bin_dir, "NVIDIA H100 80GB HBM3")
    log = tmp_path / "python.log"
    python = bin_dir / "python"  # records its arguments and PYTHONPATH, succeeds
    python.write_text(f'#!/bin/sh\necho "PYTHONPATH=$PYTHONPATH $*" >> "{log}"\n'
                      "cat > /dev/null\n")
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    out = tmp_path / "out"
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", OUT=str(out),
               PYTHON=str(python))
    env.pop("PYTHONPATH", None)
    run = subprocess.run(["bash", str(repo / "scripts" / "gpu-check"), "sim", "--quick",
                          "--budget", "60"], env=env, capture_output=True, text=True,
                         timeout=60, stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stderr
    calls = log.read_text().splitlines()
    pip = [c for c in calls if " -m pip " in c]
    if wheels:
        assert pip == [f"PYTHONPATH={repo}/src -m pip install -q --no-index --no-deps "
                       "--no-compile --no-cache-dir --upgrade --target /tmp/site "
                       + " ".join(f".whl/{w}" for w in sorted(wheels))]
    else:
        assert pip == [] and "no wheels in .whl/" in run.stdout
    bench = [c for c in calls if "hinesbatch.cli" in c]
    assert bench == [(f"PYTHONPATH=/tmp/site:{repo}/src -m hinesbatch.cli bench sim --part gpu "
                      f"--out {out}/h100 --quick --budget 60")]
    assert "bench: bench sim exit 0" in run.stdout


@pytest.mark.skipif(sys.platform == "win32", reason="bash scripts")
@pytest.mark.parametrize("moddir", [None, "/data/traub"])
def test_gpu_check_nmodl_runs_the_nmodl_part_on_the_carried_folder(tmp_path, moddir):
    """``gpu-check nmodl``: the wheels into /tmp/site (nrnivmodl's bin first on PATH), then
    ``bench sim --part nmodl`` on $HB_MODDIR (default .modeldb/20756) into the card's
    folder, the extra arguments after the script's own."""
    import shutil

    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "gpu-check", repo / "scripts" / "gpu-check")
    (repo / ".whl").mkdir()
    (repo / ".whl" / "neuron-9.0.2-cp312-cp312-manylinux_2_28_x86_64.whl").write_bytes(b"")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _fake_nvidia_smi(bin_dir, "NVIDIA H200")
    log = tmp_path / "python.log"
    python = bin_dir / "python"  # records its arguments and PATH, succeeds
    python.write_text(f'#!/bin/sh\necho "PATH=${{PATH%%:*}} $*" >> "{log}"\ncat > /dev/null\n')
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    out = tmp_path / "out"
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", OUT=str(out),
               PYTHON=str(python))
    env.pop("HB_MODDIR", None)
    if moddir:
        env["HB_MODDIR"] = moddir
    run = subprocess.run(["bash", str(repo / "scripts" / "gpu-check"), "nmodl",
                          "--nmodl-cells", "5000"], env=env, capture_output=True, text=True,
                         timeout=60, stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stderr
    calls = log.read_text().splitlines()
    assert any(" -m pip install " in c and "--target /tmp/site" in c for c in calls)
    bench = [c for c in calls if "hinesbatch.cli" in c]
    assert bench == [f"PATH=/tmp/site/bin -m hinesbatch.cli bench sim --part nmodl --mod-dir "
                     f"{moddir or '.modeldb/20756'} --repeats 3 --out {out}/h200 "
                     "--nmodl-cells 5000"]
    assert "bench: bench sim nmodl exit 0" in run.stdout
