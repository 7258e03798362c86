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
