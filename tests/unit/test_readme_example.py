"""The README's first example runs as written (on the CPU here), so it cannot go stale."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import hinesbatch

ROOT = Path(__file__).resolve().parents[2]


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


@pytest.mark.slow
def test_readme_first_example_runs(monkeypatch, capsys):
    if not hasattr(hinesbatch.Plan, "to_layout"):
        pytest.skip("Plan.to_layout is not available in this tree")
    monkeypatch.chdir(ROOT)  # the example reads a test morphology by a relative path
    blocks = _python_blocks((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(blocks) == 1, "the README has one Python example"
    # the CPU, whatever this machine has: the example's plan(batch) must work on every backend
    code = blocks[0].replace("hb.plan(batch)", "hb.plan(batch, backend='serial')")
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)
    cell, x, d, rhs = namespace["cell"], namespace["x"], namespace["d"], namespace["rhs"]
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"{cell.n_nodes} 988.1") and cell.n_nodes == 923  # as commented
    ref = hinesbatch.plan(hinesbatch.MonoBatch(cell.hines_structure(), 3),
                          backend="serial").solve(d[:3], rhs[:3])
    np.testing.assert_allclose(x[:3], ref, rtol=1e-12)
    res = namespace["res"]
    assert res.t[0] == 0.0 and res.v.shape[-1] == res.t.size
