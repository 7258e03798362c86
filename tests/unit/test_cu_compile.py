"""Every CUDA source of the GPU backend compiles with nvcc for sm_90, in float and double.

Runs without a GPU and without CuPy (CI has nvcc). The instantiations are the ones the
backend asks NVRTC for (``hinesbatch.solvers.gpu.kernel_build.KERNELS``): a small wrapper takes
the address of each, which instantiates the template. Also checks that no kernel spills
registers to local memory (a spill in a sweep loop costs device-memory traffic).
"""
from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

from hinesbatch.solvers.gpu.kernel_build import KERNEL_DIR, KERNELS, name_expressions, source_text
from hinesbatch.solvers.gpu.strategies.classes_launch import STATIC_SMEM

NVCC = shutil.which("nvcc")
#: Sources whose compilation takes several seconds each: only in the full run (marked slow).
#: The fast subset compiles the others in float; double is compiled in the full run.
SLOW_SOURCES = {"hines_tiled.cu", "hines_factors.cu", "tridiagonal_chunked.cu"}


def _compile_cases() -> list:
    cases = []
    for source in sorted(KERNELS):
        for dtype, name in ((np.float32, "float"), (np.float64, "double")):
            slow = source in SLOW_SOURCES or name == "double"
            cases.append(pytest.param(source, dtype, id=f"{source}-{name}",
                                      marks=[pytest.mark.slow] if slow else []))
    return cases


@pytest.mark.nvcc
@pytest.mark.skipif(NVCC is None, reason="nvcc is not on the PATH")
@pytest.mark.parametrize(("source", "dtype"), _compile_cases())
def test_source_compiles_for_sm90(source, dtype, tmp_path):
    exprs = name_expressions(source, dtype)
    wrapper = tmp_path / f"wrap_{source}"
    wrapper.write_text(
        source_text(source)
        + "\nvoid* hb_instantiations[] = {\n"
        + "".join(f"    (void*)&{e},\n" for e in exprs)
        + "};\n"
    )
    out = subprocess.run(
        [NVCC, "-arch=sm_90", "-std=c++17", "-c", "-Xptxas", "-v", str(wrapper),
         "-o", str(tmp_path / "k.o")],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    entries = re.findall(r"Compiling entry function '(\w+)'", out.stderr)
    assert len(entries) == len(exprs), out.stderr  # every instantiation reached ptxas
    spills = re.findall(r"(\d+) bytes spill stores", out.stderr)
    assert spills and all(int(s) == 0 for s in spills), out.stderr
    # A barrier id held in a register makes ptxas reserve all 16 of a block's barriers, and
    # that caps the blocks resident on an SM: only the several-group instantiations of
    # hines_tiled_mono and hines_tiled_slots (GROUPS = true: the first bool after the two
    # ints, mangled "Li<KB>ELi<V>ELb1E") and hines_tiled_classes (one block per SM, always in
    # groups) may use more than __syncthreads's.
    for chunk in out.stderr.split("Compiling entry function '")[1:]:
        name = chunk.split("'", 1)[0]
        barriers = int(re.search(r"used (\d+) barriers", chunk).group(1))
        several_groups = ((name.startswith(("_Z16hines_tiled_mono", "_Z17hines_tiled_slots"))
                           and re.search(r"Li\d+ELi\d+ELb1E", name))
                          or name.startswith("_Z19hines_tiled_classes"))
        assert barriers <= 1 or several_groups, f"{name} uses {barriers} barriers"
        if name.startswith("_Z19hines_tiled_classes"):  # the host reserves its static memory
            static = re.search(r"(\d+) bytes smem", chunk)
            assert static and int(static.group(1)) <= STATIC_SMEM, chunk


def test_listed_kernel_files_exist():
    on_disk = {p.name for p in KERNEL_DIR.glob("*.cu")}
    assert set(KERNELS) <= on_disk


def test_every_kernel_source_is_listed():
    """Every ``kernels/*.cu`` file has its instantiations listed in ``KERNELS``, so that
    ``test_source_compiles_for_sm90`` compiles it (a source nobody lists is never built)."""
    unlisted = sorted({p.name for p in KERNEL_DIR.glob("*.cu")} - set(KERNELS))
    assert not unlisted, f"kernels/ sources without instantiations in KERNELS: {unlisted}"
