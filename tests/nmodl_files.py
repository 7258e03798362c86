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


def artificial_pair(sim, syns, *, number: int, weights) -> tuple:
    """An artstim (tests/data/nmodl, exprand draws) onto ``syns[0]`` and into an artlif,
    the artlif onto ``syns[1]`` (``weights`` [µS] of those two NetCons), cell 0's spikes
    stopping the artstim: ``(artstim, artlif)``. Both files must be loaded."""
    a = sim.artificial_cell("artstim", start=0.5, mean=2.0, number=number, jitter=0.7)
    lif = sim.artificial_cell("artlif", tau=3.0)
    sim.connect(a, syns[0], weight=weights[0], delay=0.0)
    sim.connect(a, lif, weight=0.7, delay=1.0)
    sim.connect(lif, syns[1], weight=weights[1], delay=0.5)
    sim.connect((0, "soma[0](0.5)"), a, weight=-1.0, delay=2.0)   # a spike stops it
    return a, lif
