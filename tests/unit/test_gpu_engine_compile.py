"""The GPU engine's generated kernel compiles with nvcc for sm_90, as CuPy's NVRTC compiles
it on a GPU machine: every built-in mechanism, both precisions, TABLEs on and off, with the
options the engine passes (``--fmad=false`` in float64). Runs without a GPU (CI has nvcc).
"""
from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

import hinesbatch as hb
from hinesbatch.engine.gpu.source import field_roles, kernel_source

NVCC = shutil.which("nvcc")
MECHS = ("pas", "IClamp", "ExpSyn", "Exp2Syn", "SEClamp", "hh")


@pytest.mark.nvcc
@pytest.mark.skipif(NVCC is None, reason="nvcc is not on the PATH")
@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize("tables", [True, False])
def test_engine_kernel_compiles_for_sm90(precision, tables, tmp_path):
    mechs = [hb.mechanisms.get(m) for m in MECHS]
    roles = {}
    for k, m in enumerate(mechs):
        data = np.array([[f.default] * 3 for f in m.fields]).reshape(len(m.fields), 3)
        if k % 2:                       # some parameters differ between instances
            data[:, 1] *= 1.5
        roles[m.name] = field_roles(m, data, tables)
    src = tmp_path / "engine.cu"
    src.write_text(kernel_source(mechs, roles, precision=precision, tables=tables, dt=0.025,
                                 celsius=6.3, block_threads=128))
    fmad = ["--fmad=false"] if precision == "float64" else []
    out = subprocess.run([NVCC, "-arch=sm_90", "-std=c++17", *fmad, "-c", "-Xptxas", "-v",
                          str(src), "-o", str(tmp_path / "engine.o")],
                         capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    assert re.findall(r"Compiling entry function '(\w+)'", out.stderr) == ["hb_epoch"]
    assert re.search(r"Used (\d+) registers", out.stderr), out.stderr
