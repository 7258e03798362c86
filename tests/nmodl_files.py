"""The NMODL files of ``tests/data/nmodl`` that unit tests load by name."""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

import hinesbatch as hb

DATA = Path(__file__).parent / "data" / "nmodl"


def load(*names: str) -> None:
    """Load ``DATA/<name>.mod`` for each name (the translator's notices silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in names:
            hb.load_mechanisms(DATA / f"{n}.mod")


def run_states(tmp_path, text: str, name: str, states, *, steps: int = 8,
               dt: float = 0.025) -> dict:
    """``{state: trace}`` (steps + 1 values from t = 0) of mechanism ``name`` (the NMODL
    ``text``, written to ``tmp_path``) on a one-point soma with pas; ``dt`` [ms]."""
    (tmp_path / f"{name}.mod").write_text(text)
    swc = tmp_path / "soma.swc"
    swc.write_text("1 1 0 0 0 10 -1\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hb.load_mechanisms(tmp_path / f"{name}.mod")
    sim = hb.Simulation(hb.Cell(str(swc), nseg=1).insert("pas").insert(name), dt=dt)
    keys = {s: sim.record(f"{s}_{name}") for s in states}
    res = sim.run(steps * dt)
    return {s: np.asarray(res[k]).ravel() for s, k in keys.items()}
