"""Fixtures and hooks shared by every test folder.

``seed``: a fresh random seed per test, drawn from ``os.urandom``, or the value of the
environment variable ``HB_SEED`` when it is set. The seed of a failing test is printed in its
report (a "seed" section with the command that replays it), so a failure found with one
random draw can be reproduced.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

#: Environment variable that fixes the value of the ``seed`` fixture (to replay a failure).
SEED_ENV = "HB_SEED"


def _seed_from_env() -> int | None:
    value = os.environ.get(SEED_ENV)
    if value is None or value.strip() == "":
        return None
    try:
        seed = int(value, 0)
    except ValueError:
        raise ValueError(f"{SEED_ENV}={value!r} is not an integer seed") from None
    if seed < 0:
        raise ValueError(f"{SEED_ENV}={value!r} is negative; seeds are >= 0")
    return seed


@pytest.fixture
def builtins_only():
    """The mechanism registry holds the built-ins only during the test and after it (the
    mechanisms a test loads from NMODL files are unregistered)."""
    from hinesbatch import mechanisms

    before = set(mechanisms._REGISTERED)
    yield
    for name in set(mechanisms._REGISTERED) | before:
        mechanisms.unregister(name)


@pytest.fixture
def seed(request) -> int:
    """A random seed (an int in [0, 2**32)), or ``$HB_SEED`` when set; shown when the test fails."""
    value = _seed_from_env()
    if value is None:
        value = int.from_bytes(os.urandom(4), "little")
    request.node.user_properties.append(("seed", value))
    return value


@pytest.hookimpl(hookwrapper=True)  # not wrapper=True: pyproject's test extra allows pytest 7
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        seeds = [value for key, value in item.user_properties if key == "seed"]
        if seeds:
            report.sections.append(
                ("seed", f"seed={seeds[-1]}; replay with: "
                         f"{SEED_ENV}={seeds[-1]} python -m pytest '{item.nodeid}'"))


@pytest.fixture
def soma(tmp_path) -> Path:
    """A one-point soma (radius 10 µm) as an SWC file."""
    path = tmp_path / "soma.swc"
    path.write_text("1 1 0 0 0 10 -1\n")
    return path
