"""Longitudinal diffusion compared with NEURON on a cell of several sections.

The one-compartment soma of :mod:`nmodl_compare`'s standard protocol has no neighbour to
diffuse to, so a mechanism with ``LONGITUDINAL_DIFFUSION`` is compared on a branched cell
of sections (a :class:`~hinesbatch.SectionCell` and the same cell made with ``create`` /
``connect`` in NEURON)::

    soma  L 20 diam 20 nseg 1
    dend  L 300 diam 2 nseg 15   at soma(1)      (the calcium influx is here)
    b1    L 150 diam 1 nseg 7    at dend(1)
    b2    L 100 diam 1.5 nseg 5  at dend(1)
    side  L 80 diam 1 nseg 4     at soma(0)      (a child at x = 0 of the root)
    mid   L 60 diam 0.8 nseg 3   at dend(0.5)    (a child in the middle of a section)

A model (JSON for NEURON's child process)::

    {"insert": [["hh", {}], ["cdp", {}]],             # everywhere
     "local": [["dend", "cainflux", {"amp": 0.01}]],  # in one section
     "record": ["v", "cai", "ca_cdp[0]"],             # at every segment centre
     "where": ["dend", "b1"],                          # of these sections (default all)
     "tstop": 20.0, "dt": 0.025, "iclamp": [1.0, 5.0, 0.5]}

``"ca_cdp[0]"`` records element 0 of the STATE array ``ca`` of ``cdp`` (hinesbatch's
field ``ca__0``). :func:`compare` returns, per recorded variable, the max |NEURON -
hinesbatch| over all segments and steps.

Run as a script (``python tests/validation/nmodl_diffusion.py FILE.mod ...``), it compiles
the files, inserts each diffusing mechanism of them everywhere with hh, a calcium influx
in ``dend`` and a current clamp at the soma, and prints max |dV| and the max difference
of each concentration state that diffuses.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]

#: name, parent, x on the parent, L [µm], diam [µm], nseg
SECTIONS = (("soma", -1, 0.0, 20.0, 20.0, 1),
            ("dend", 0, 1.0, 300.0, 2.0, 15),
            ("b1", 1, 1.0, 150.0, 1.0, 7),
            ("b2", 1, 1.0, 100.0, 1.5, 5),
            ("side", 0, 0.0, 80.0, 1.0, 4),
            ("mid", 1, 0.5, 60.0, 0.8, 3))

#: a calcium current in one section, and a potassium current gated by cai (so that the
#: voltage depends on the concentrations): tests/data/nmodl's files
INFLUX = ROOT / "tests" / "data" / "nmodl" / "cainflux.mod"
KCAI = ROOT / "tests" / "data" / "nmodl" / "kcai.mod"

_CHILD = r"""
import json, sys
import numpy as np
from neuron import h
spec = json.loads(sys.argv[1])
h.load_file("stdrun.hoc")
h.nrn_load_dll(spec["lib"])
secs = []
for name, parent, x, L, diam, nseg in spec["sections"]:
    sec = h.Section(name=name)
    sec.L, sec.diam, sec.nseg, sec.Ra, sec.cm = L, diam, nseg, 35.4, 1.0
    if parent >= 0:
        sec.connect(secs[parent](x), 0)
    secs.append(sec)
by_name = {s.name(): s for s in secs}
for name, params in spec["insert"]:
    for sec in secs:
        sec.insert(name)
        for seg in sec:
            for k, v in params.items():
                setattr(seg, f"{k}_{name}", v)
for where, name, params in spec["local"]:
    sec = by_name[where]
    sec.insert(name)
    for seg in sec:
        for k, v in params.items():
            setattr(seg, f"{k}_{name}", v)
keep = []
if spec["iclamp"]:
    stim = h.IClamp(secs[0](0.5))
    stim.delay, stim.dur, stim.amp = spec["iclamp"]
    keep.append(stim)
vecs = []
for var in spec["record"]:
    for sec in secs:
        if sec.name() not in spec["where"]:
            continue
        for seg in sec:
            vec = h.Vector()
            name, _, index = var.partition("[")
            if index:
                base, mech = name.rsplit("_", 1)
                ref = getattr(getattr(seg, mech), f"_ref_{base}")[int(index[:-1])]
            else:
                ref = getattr(seg, f"_ref_{name}")
            vec.record(ref)
            vecs.append(vec)
h.dt, h.celsius = spec["dt"], spec["celsius"]
h.steps_per_ms = 1.0 / spec["dt"]
h.finitialize(-65.0)
h.continuerun(spec["tstop"])
np.save(spec["out"], np.array([np.array(v) for v in vecs]))
"""


def _defaults(model: dict) -> dict:
    out = {"insert": [], "local": [], "record": ["v"], "where": [s[0] for s in SECTIONS],
           "tstop": 20.0, "dt": 0.025, "celsius": 6.3, "iclamp": [1.0, 5.0, 0.5]}
    out.update(model)
    return out


def n_segments(where) -> int:
    """Segments of the sections named in ``where``."""
    return sum(s[5] for s in SECTIONS if s[0] in where)


def run_neuron(model: dict, lib: str) -> np.ndarray:
    """NEURON's traces: records × segments (sections in order, segments by x) × steps."""
    spec = _defaults(model)
    with tempfile.TemporaryDirectory() as tmp:
        spec.update(lib=lib, out=os.path.join(tmp, "r.npy"), sections=SECTIONS)
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
        proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(spec)], env=env,
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"NEURON run failed:\n{proc.stderr[-3000:]}")
        out = np.load(spec["out"])
    return out.reshape(len(spec["record"]), n_segments(spec["where"]), -1)


def section_cell():
    """The cell of :data:`SECTIONS` in hinesbatch."""
    from hinesbatch.model.sections import SectionCell

    names = [f"{s[0]}[0]" for s in SECTIONS]
    return SectionCell(names, [s[1] for s in SECTIONS], [s[3] for s in SECTIONS],
                          [s[4] for s in SECTIONS], nseg=[s[5] for s in SECTIONS],
                          parent_x=[s[2] if s[1] >= 0 else 1.0 for s in SECTIONS],
                          ra=35.4, cm=1.0)


def _variable(var: str) -> str:
    """``"ca_cdp[0]"`` -> ``"ca__0_cdp"`` (hinesbatch's field of an array element)."""
    m = re.fullmatch(r"(\w+)_([A-Za-z]\w*)\[(\d+)\]", var)
    if m is None:
        return var
    return f"{m.group(1)}__{m.group(3)}_{m.group(2)}"


def run_hinesbatch(model: dict, *, backend: str = "serial") -> np.ndarray:
    """hinesbatch's traces of ``model`` (its mechanisms loaded), as :func:`run_neuron`."""
    import hinesbatch as hb

    spec = _defaults(model)
    cell = section_cell()
    for name, params in spec["insert"]:
        cell.insert(name, **params)
    for where, name, params in spec["local"]:
        cell.insert(name, region=where, **params)
    if spec["iclamp"]:
        delay, dur, amp = spec["iclamp"]
        cell.place("IClamp", "soma[0](0.5)", delay=delay, dur=dur, amp=amp)
    sim = hb.Simulation(cell, dt=spec["dt"], celsius=spec["celsius"], v_init=-65.0,
                        backend=backend)
    keys = []
    for var in spec["record"]:
        for name, _, _, _, _, nseg in SECTIONS:
            if name not in spec["where"]:
                continue
            for k in range(nseg):
                keys.append(sim.record(_variable(var),
                                       location=f"{name}[0]({(k + 0.5) / nseg!r})"))
    res = sim.run(spec["tstop"])
    return np.array([res[k] for k in keys]).reshape(len(spec["record"]),
                                                    n_segments(spec["where"]), -1)


def compare(model: dict, lib: str, *, backend: str = "serial") -> dict:
    """Per recorded variable, max |NEURON - hinesbatch| over segments and steps (and
    ``"range:<var>"``: NEURON's range of the variable over segments and steps)."""
    ref, got = run_neuron(model, lib), run_hinesbatch(model, backend=backend)
    if ref.shape != got.shape:
        raise AssertionError(f"NEURON gave {ref.shape}, hinesbatch {got.shape}")
    out = {}
    for k, var in enumerate(_defaults(model)["record"]):
        out[var] = float(np.max(np.abs(ref[k] - got[k])))
        out[f"range:{var}"] = float(np.ptp(ref[k]))
    return out


def diffusing_model(mech, *, tstop: float = 20.0) -> dict:
    """The protocol for a translated mechanism with longitudinal diffusion: with hh and a
    cai-gated potassium current (kcai) everywhere, a calcium influx in ``dend`` from 1 to
    6 ms, a current clamp at the soma; records v and every element of the diffusing
    states."""
    record = ["v"]
    for dif in mech.diffusion:
        base, _, k = dif.state.rpartition("__")
        record.append(f"{base}_{mech.name}[{k}]" if base else f"{dif.state}_{mech.name}")
    return {"insert": [["hh", {}], [mech.name, {}], ["kcai", {"gbar": 0.002}]],
            "local": [["dend", "cainflux", {"amp": 0.005}]], "record": record,
            "tstop": tstop}


def compare_file(path) -> str | None:
    """The diffusion protocol for the mechanism of the NMODL file ``path`` (None when it
    has no longitudinal diffusion): one line with max |dV| [mV] and the largest max
    |dconc| [mM] of the diffusing states. Registers and unregisters the mechanisms."""
    import warnings

    import hinesbatch as hb
    from hinesbatch.bench._nmodl_model import compile_mods
    from hinesbatch.nmodl.registry import translation

    mech = translation(path).mechanism
    if not mech.diffusion:
        return None
    files = [Path(path), INFLUX, KCAI]
    names = [translation(f).mechanism.name for f in files]
    try:
        lib = compile_mods(files)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for f, n in zip(files, names):
                hb.mechanisms.unregister(n)
                hb.load_mechanisms(f)
        res = compare(diffusing_model(mech), lib)
    finally:
        for n in names:
            hb.mechanisms.unregister(n)
    conc = {k: v for k, v in res.items() if k != "v" and not k.startswith("range:")}
    worst = max(conc, key=conc.get)
    return (f"{path}: {mech.name}: diffusion on a branched cell: max|dV| = {res['v']:.3g} "
            f"mV; max|dconc| = {conc[worst]:.3g} mM ({worst}; NEURON's range "
            f"{res['range:' + worst]:.3g} mM)")


def main(argv=None) -> int:
    for f in (argv if argv is not None else sys.argv[1:]):
        line = compare_file(f)
        print(line if line is not None else f"{f}: no longitudinal diffusion", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
