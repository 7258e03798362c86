"""GPU tests: skipped with the registry's reason when CuPy or a CUDA device is missing.

The largest errors measured (``gpu_cases.record_error``) are printed at the end of the run
and written to ``$HB_GPU_ERROR_LOG`` as JSON when that variable is set. The ``seed``
fixture (``tests/conftest.py``) prints a failing test's seed; ``HB_SEED=...`` replays it.
"""
from __future__ import annotations

import json
import os

import pytest

from hinesbatch.solvers import registry

from gpu_cases import ERRORS


def pytest_collection_modifyitems(config, items):
    ok, why = registry.get("gpu").available()
    if ok:
        return
    skip = pytest.mark.skip(reason=f"GPU backend unavailable: {why}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def pytest_terminal_summary(terminalreporter):
    if not ERRORS:
        return
    terminalreporter.write_sep("-", "GPU backend: largest relative errors against serial")
    summary = {}
    for key, values in sorted(ERRORS.items()):
        worst = max(values, key=lambda v: v[0])
        summary[key] = {"cases": len(values), "max_rel_error": worst[0], "worst_case": worst[1]}
        terminalreporter.write_line(f"{key:40s} {len(values):4d} cases  max {worst[0]:.3e}  ({worst[1]})")
    path = os.environ.get("HB_GPU_ERROR_LOG")
    if path:
        with open(path, "w") as fh:
            json.dump(summary, fh, indent=1)


@pytest.fixture(scope="session")
def cp():
    import cupy

    return cupy
