"""The simulator's user guide (docs/simulator.md) says what the simulator does: its Python
examples run as written, in order, and its tables of mechanism defaults are the built-ins'.

A ```python block preceded by the line ``<!-- no-test -->`` is not run (signatures, NEURON
code). The examples read ``tests/data/morphologies/real/c91662.swc`` relative to the
repository's root; they run in a temporary folder holding a copy of it, so that the files
they write land there.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

import hinesbatch

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "simulator.md"
NAMES_PAGE = ROOT / "docs" / "neuron-names.md"
MORPHOLOGY = Path("tests/data/morphologies/real/c91662.swc")
NO_TEST = "<!-- no-test -->"


def python_blocks(text: str) -> list[tuple[int, str, bool]]:
    """``(line of the fence, code, runs)`` for every ```python block of ``text``; ``runs``
    is False when the last non-blank line before the fence is ``<!-- no-test -->``."""
    lines = text.splitlines()
    blocks, i = [], 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            start = i
            before = next((line.strip() for line in reversed(lines[:i]) if line.strip()), "")
            i += 1
            body = []
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            if i == len(lines):
                raise ValueError(f"the ```python block at line {start + 1} is not closed")
            blocks.append((start + 1, "\n".join(body) + "\n", before != NO_TEST))
        i += 1
    return blocks


def test_python_blocks_finds_blocks_and_honours_the_marker():
    text = ("# t\n\n```python\na = 1\n```\n\n<!-- no-test -->\n\n```python\nb = 2\n```\n"
            "```bash\nls\n```\n<!-- no-test -->\n```python\nc = 3\n```\n")
    assert python_blocks(text) == [(3, "a = 1\n", True), (9, "b = 2\n", False),
                                   (16, "c = 3\n", False)]
    with pytest.raises(ValueError, match="line 1 is not closed"):
        python_blocks("```python\nx = 1\n")


def _needs_simulator():
    if not hasattr(hinesbatch, "Simulation") or not hasattr(hinesbatch, "Cell"):
        pytest.skip("hinesbatch.Simulation and hinesbatch.Cell are not in this tree yet")


@pytest.mark.slow
def test_simulator_page_examples_run(tmp_path, monkeypatch, capsys):
    """Every example runs, in order, in one namespace; what its comments claim holds."""
    _needs_simulator()
    pytest.importorskip("matplotlib", reason="the examples plot (extra 'plot')")
    pytest.importorskip("h5py", reason="the examples write a SONATA report (extra 'sonata')")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    (tmp_path / MORPHOLOGY).parent.mkdir(parents=True)
    shutil.copy(ROOT / MORPHOLOGY, tmp_path / MORPHOLOGY)
    monkeypatch.chdir(tmp_path)

    blocks = [(line, code) for line, code, runs in python_blocks(PAGE.read_text("utf-8"))
              if runs]
    assert len(blocks) >= 10, "the page's runnable examples were not found"
    namespace: dict = {"__name__": "simulator_docs"}
    for line, code in blocks:
        exec(compile(code, f"{PAGE.relative_to(ROOT)}:{line}", "exec"), namespace)

    out = capsys.readouterr().out.splitlines()
    assert out[0] == "(801,) 19.9999999999994 mV"  # as the first example's comment says
    assert "[0.   0.41 4.13 4.13 0.41]" in out       # the SEClamp's current, as commented
    assert any(line.startswith("hh has no parameter 'gnabr_hh'; parameters: gnabar_hh, "
                               "gkbar_hh, ") for line in out)
    ns = namespace
    res = ns["res"]
    assert res.spikes[ns["spike_keys"][1]].tolist() == [5.0, 9.0, 13.0]  # the NetStim
    assert res.time(ns["a_syn2"])[:3].round(12).tolist() == [0.0, 0.1, 0.2]
    assert ns["traces"].shape == (10, 201) and len(ns["counts"]) == 10
    for name in ("run.npz", "spikes.h5", "traces.png", "raster.png"):
        assert (tmp_path / name).stat().st_size > 0, name


# ---- the tables of defaults ---------------------------------------------------------------

_UNITS = {"S/cm²": "S/cm2", "MΩ": "MOhm", "µS": "uS"}


def _number(text: str) -> float:
    return float(text.replace("−", "-"))


def _table_rows(text: str, heading: str) -> list[list[str]]:
    """The body rows of the first table after ``heading``, cells stripped."""
    section = text.split(heading, 1)[1]
    rows, started = [], False
    for line in section.splitlines():
        if line.startswith("|"):
            started = True
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not set("".join(cells)) <= set("-: "):
                rows.append(cells)
        elif started:
            break
    return rows[1:]  # without the header


def _documented_defaults(rows) -> list[tuple[str, str, float, str]]:
    """``(mechanism, parameter, default, unit)`` from rows ``| mech | params | default |
    unit | ... |``; an empty first cell continues the mechanism above."""
    out, mech = [], None
    for cells in rows:
        mech = cells[0].strip("`") or mech
        names = re.findall(r"`([A-Za-z_0-9]+)`", cells[1].split("(")[0])
        defaults = [_number(x) for x in cells[2].split(",")]
        if len(defaults) == 1:
            defaults *= len(names)
        assert len(defaults) == len(names), cells
        for name, default in zip(names, defaults):
            out.append((mech, name, default, _UNITS.get(cells[3], cells[3])))
    return out


@pytest.mark.parametrize("heading", ["### `pas` and `hh`", "## Point processes"])
def test_tables_of_defaults_are_the_builtins(heading):
    """Each parameter the tables list has the default and unit of the built-in."""
    _needs_simulator()
    from hinesbatch import mechanisms

    documented = _documented_defaults(_table_rows(PAGE.read_text("utf-8"), heading))
    assert len(documented) >= 8
    for mech_name, name, default, unit in documented:
        mech = mechanisms.get(mech_name)
        short = name[: -len(mech_name) - 1] if name.endswith("_" + mech_name) else name
        short = mech.aliases.get(short, short)
        fields = {f.name: f for f in mech.parameters + mech.ion_variables}
        assert short in fields, f"{mech_name} has no parameter {name}"
        assert fields[short].default == default, (mech_name, name)
        assert fields[short].unit == unit, (mech_name, name)


def test_table_rows_reads_continuation_rows():
    text = ("## T\n\n| m | p | d | u | x |\n|---|---|---|---|---|\n| `a` | `p_a` | −1 | mV | |\n"
            "| | `q1`, `q2` | 0 | ms | |\n| | `r`, `s` | 50, −77 | mV | |\n\nafter\n")
    assert _documented_defaults(_table_rows(text, "## T")) == [
        ("a", "p_a", -1.0, "mV"), ("a", "q1", 0.0, "ms"), ("a", "q2", 0.0, "ms"),
        ("a", "r", 50.0, "mV"), ("a", "s", -77.0, "mV")]


def test_pages_are_in_the_site_and_linked():
    """Both pages are in mkdocs.yml's nav, linked from docs/index.md and the README."""
    nav = (ROOT / "mkdocs.yml").read_text("utf-8")
    index = (ROOT / "docs" / "index.md").read_text("utf-8")
    readme = (ROOT / "README.md").read_text("utf-8")
    for page in (PAGE, NAMES_PAGE):
        assert f" {page.name}" in nav, page.name
        assert f"]({page.name})" in index, page.name
    assert "](docs/simulator.md)" in readme
