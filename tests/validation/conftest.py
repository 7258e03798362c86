"""Validation tests: NEURON as the oracle where it is installed.

Tests that need NEURON carry ``@pytest.mark.neuron`` (or use the ``neuron_h`` fixture); they
are skipped, with the reason, when ``import neuron`` fails. Tests against analytic solutions
run everywhere.
"""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # so tests can `import neuron_build`


def _neuron_import_error() -> str | None:
    try:
        import neuron  # noqa: F401
    except Exception as exc:  # ImportError, or a broken install raising anything else
        return f"NEURON is not importable ({type(exc).__name__}: {exc}); pip install neuron>=9.0"
    return None


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "neuron: compares with NEURON (skipped when `import neuron` fails)")


def pytest_collection_modifyitems(config, items):
    needs = [item for item in items if item.get_closest_marker("neuron") is not None]
    if not needs:
        return
    reason = _neuron_import_error()
    if reason is not None:
        for item in needs:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def neuron_h():
    """NEURON's ``h`` with stdlib.hoc and import3d.hoc loaded (skips without NEURON)."""
    reason = _neuron_import_error()
    if reason is not None:
        pytest.skip(reason)
    from neuron_build import load_neuron

    return load_neuron()
