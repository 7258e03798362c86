"""The documentation site builds with ``mkdocs build --strict``: a broken link, a missing
included file or a stale API reference (a name the package no longer exports, a docstring
griffe cannot parse) fails the build, and so this test."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_mkdocs_build_strict(tmp_path):
    for module in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"):
        pytest.importorskip(module, reason=f"{module} is not installed (extra 'docs')")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "src"),
                                                         os.environ.get("PYTHONPATH")])))
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                          "-f", str(ROOT / "mkdocs.yml"), "-d", str(tmp_path / "site")],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    warnings = [line for line in (run.stdout + run.stderr).splitlines()
                if line.startswith(("WARNING", "ERROR"))]
    assert run.returncode == 0, "\n".join(warnings) or run.stderr[-4000:]
    assert (tmp_path / "site" / "api" / "index.html").is_file()


def test_api_reference_names_only_exported_names():
    """The API page documents the top-level package's public names, each one of them."""
    import hinesbatch

    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    documented = {line.split()[1] for line in text.splitlines() if line.startswith(":::")}
    assert all(name.startswith("hinesbatch.") and name.count(".") == 1 for name in documented)
    exported = {f"hinesbatch.{n}" for n in hinesbatch.__all__ if n != "__version__"}
    assert documented == exported
