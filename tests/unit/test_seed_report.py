"""The ``seed`` fixture of ``tests/conftest.py``: random per test, fixed by ``HB_SEED``, and
printed in the report of a failing test so that the failure can be replayed."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"

DRAWS = """
import pytest

def test_fails(seed):
    print("failing test drew", seed)
    assert False

@pytest.mark.parametrize("i", range(8))
def test_passes(seed, i):
    print("drew", seed)

def test_without_seed():
    assert False
"""


def _run(pytester, source, *args):
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile(test_draws=source)
    return pytester.runpytest("-s", *args)


def test_failing_test_reports_its_seed_and_the_replay_command(pytester, monkeypatch):
    monkeypatch.delenv("HB_SEED", raising=False)
    result = _run(pytester, DRAWS)
    result.assert_outcomes(failed=2, passed=8)
    out = result.stdout.str()
    drawn = int(re.search(r"failing test drew (\d+)", out).group(1))
    result.stdout.fnmatch_lines([
        "*_ test_fails _*",
        "*- seed -*",
        f"seed={drawn}; replay with: HB_SEED={drawn} python -m pytest 'test_draws.py::test_fails'",
        "*_ test_without_seed _*",
    ])
    assert out.count("replay with") == 1  # not for passing tests, nor for tests without a seed
    assert len(set(re.findall(r"\bdrew (\d+)", out))) > 1  # a fresh seed per test


def test_hb_seed_replays_the_reported_seed(pytester, monkeypatch):
    monkeypatch.setenv("HB_SEED", "123456789")
    result = _run(pytester, "def test_draw(seed):\n    assert seed == 123456789\n")
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize("value", ["twelve", "-3"])
def test_bad_hb_seed_is_an_error_naming_the_variable(pytester, monkeypatch, value):
    monkeypatch.setenv("HB_SEED", value)
    result = _run(pytester, "def test_draw(seed):\n    pass\n")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*ValueError: HB_SEED='{value}' is*"])
