"""Without a usable GPU: the gpu backend imports, says why it cannot run, and auto falls back.

Skipped where a GPU is usable (tests/gpu covers that case).
"""
from __future__ import annotations

import subprocess
import sys

import pytest

import hinesbatch
from hinesbatch.errors import BackendUnavailableError
from hinesbatch.solvers import registry
from hinesbatch.tree.random_trees import chain
from hinesbatch.tree.structure import MonoBatch

OK, WHY = registry.get("gpu").available()
pytestmark = pytest.mark.skipif(OK, reason="a GPU is usable here; tests/gpu covers it")


def test_reason_names_the_cause():
    assert any(word in WHY for word in ("CuPy", "CUDA", "driver")), WHY


def test_asking_for_gpu_raises_with_the_reason():
    with pytest.raises(BackendUnavailableError) as err:
        hinesbatch.plan(MonoBatch(chain(4, rng=0), 2), backend="gpu")
    assert WHY in str(err.value)


def test_auto_falls_back_to_the_cpu_and_says_why():
    plan = hinesbatch.plan(MonoBatch(chain(4, rng=0), 2))
    assert plan.backend_name != "gpu"
    assert f"gpu unavailable: {WHY}" in plan.describe()


def test_importing_the_backend_does_not_import_cupy():
    code = ("import sys, hinesbatch, hinesbatch.solvers.gpu, hinesbatch.solvers.gpu.backend; "
            "print('cupy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr
