"""A random network of mixed cells for the split-run tests, built the same on every rank.

``build(seed)`` describes (gids in brackets):

- [0, n_cells): cells of random shape (:func:`shape`): a SectionCell soma (L = diam in
  12..25 µm, hh) with 1..8 dendrites (L 20..200 µm, diam 0.5..3 µm, nseg 1..3, random
  branching, pas + hh); with ``swc``, every fourth cell is instead the real SWC
  morphology ``mp_ma_40984_gc2.CNG.swc`` (nseg 1, hh everywhere); each with an
  ``ExpSyn`` (tau 2 ms) on the soma and an ``Exp2Syn`` (0.5, 3 ms) on its first dendrite
  or at soma[0](0.2);
- [n_cells, n_cells + n_stims): NetStims (start 0..5 ms, interval 3..8 ms, 20 spikes);
- connections: each NetStim drives 6 cells; ``n_conns`` recurrent NetCons between random
  cells to either synapse, weights 0.002..0.02 µS; delays from a continuum in [1, 5] ms,
  or (``grid=True``) multiples of dt from 1 to 5 ms, so that many events share a time;
- recordings: v at the soma of cells 0, 1 and n_cells - 1.

Each cell's shape comes from ``numpy.random.default_rng([seed, gid])``, so a rank builds
its cells without drawing the others'.
"""
from pathlib import Path

import numpy as np

import hinesbatch as hb
from hinesbatch.model.sections import SectionCell
from hinesbatch.network import Network

SWC = Path(__file__).resolve().parents[1] / "data" / "morphologies" / "real" / \
    "mp_ma_40984_gc2.CNG.swc"


def shape(seed: int, gid: int) -> dict:
    """The sections of a stylized cell: ``names``, ``parents``, ``L``, ``diam``, ``nseg``."""
    rng = np.random.default_rng([seed, gid])
    nb = int(rng.integers(1, 9))
    soma = float(rng.uniform(12.0, 25.0))
    parents = [-1, 0] + [int(rng.integers(1, k + 1)) for k in range(1, nb)]
    return {"names": ["soma[0]"] + [f"dend[{i}]" for i in range(nb)], "parents": parents,
            "L": [soma] + rng.uniform(20.0, 200.0, nb).tolist(),
            "diam": [soma] + rng.uniform(0.5, 3.0, nb).tolist(),
            "nseg": [1] + rng.integers(1, 4, nb).tolist()}


def cell(seed: int, gid: int, swc: bool = True):
    if swc and gid % 4 == 3:
        c = hb.Cell(SWC, nseg=1, ra=100.0)
        c.insert("hh")
        c.place("ExpSyn", "soma[0](0.5)", tau=2.0)
        c.place("Exp2Syn", "soma[0](0.2)", tau1=0.5, tau2=3.0)
        return c
    s = shape(seed, gid)
    c = SectionCell(s["names"], s["parents"], s["L"], s["diam"], nseg=s["nseg"], ra=100.0)
    c.insert("hh", "soma")
    c.insert("pas", "dend", g=0.0002, e=-65.0)
    c.insert("hh", "dend")
    c.place("ExpSyn", "soma[0](0.5)", tau=2.0)
    c.place("Exp2Syn", "dend[0](0.5)", tau1=0.5, tau2=3.0)
    return c


def build(seed: int, *, n_cells: int = 120, n_stims: int = 8, n_conns: int = 480,
          grid: bool = False, swc: bool = True) -> Network:
    rng = np.random.default_rng(seed)
    net = Network()
    net.add_cells(n_cells, build=lambda gid: cell(seed, gid, swc))
    stims = [net.net_stim(start=float(rng.uniform(0.0, 5.0)),
                          interval=float(rng.uniform(3.0, 8.0)), number=20)
             for _ in range(n_stims)]
    dt = 0.025

    def delay():
        return float(rng.integers(40, 201) * dt) if grid else float(rng.uniform(1.0, 5.0))

    for s in stims:
        for t in rng.choice(n_cells, size=6, replace=False):
            net.connect(s, int(t), "ExpSyn[0]", weight=0.03, delay=delay())
    for _ in range(n_conns):
        net.connect(int(rng.integers(n_cells)), int(rng.integers(n_cells)),
                    str(rng.choice(["ExpSyn[0]", "Exp2Syn[0]"])),
                    weight=float(rng.uniform(0.002, 0.02)), delay=delay())
    for g in (0, 1, n_cells - 1):
        net.record("v", g, "soma[0](0.5)")
    return net
