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


def _doc_pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


#: The commit whose tree still holds the removed experiments and tuning scripts.
HISTORY = "3fca6f9"
#: Files the documentation once cited that are not in the repository (nor will be).
_ABSENT = ("NEURON-COMPAT", "DESIGN.md")


def test_docs_cite_only_files_of_the_repository():
    """Every repository path a page names in backticks exists (globs allowed), and no page
    cites a file that lives outside the repository. Removed code (the experiments folder) may
    be named only on a line that gives the commit which still holds it."""
    import re

    missing = []
    for page in _doc_pages():
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            where = f"{page.relative_to(ROOT)}:{number}"
            missing += [f"{where}: {name}" for name in _ABSENT if name in line]
            for path in re.findall(r"`((?:benchmarks|scripts|tests|src|docs)/[^`\s]*)`", line):
                if "<" in path:  # a pattern such as benchmarks/results/<machine>/
                    continue
                if HISTORY in line:  # code kept in git history, named with its commit
                    continue
                if path.startswith("benchmarks/experiments"):
                    missing.append(f"{where}: {path} (removed: name it with commit {HISTORY})")
                    continue
                if not list(ROOT.glob(path.rstrip("/"))):
                    missing.append(f"{where}: {path}")
    assert not missing, "\n".join(missing)


def test_docs_describe_the_software_not_its_history():
    """User-facing text speaks of the software as it is: no numbered rounds of work, issue
    numbers or goal letters, and no account of which machines were available."""
    import re

    history = re.compile(r"\bsessions?\b|\bissue[ -]?\d+|\bgoal \([a-z]\)|\bgoals? [a-z]\b[,)]|"
                         r"\bthe brief\b|\bthe run before\b|\bwe were\b|\blent\b", re.I)
    texts = [*_doc_pages(), *sorted((ROOT / "src" / "hinesbatch" / "bench").glob("*.py")),
             *sorted(p for p in (ROOT / "scripts").iterdir() if p.is_file())]
    found = [f"{p.relative_to(ROOT)}:{n}: {line.strip()[:100]}"
             for p in texts
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if history.search(line)]
    assert not found, "\n".join(found)
