"""Run the same model with NMODL files in NEURON (``nrnivmodl``) and in hinesbatch.

NEURON loads compiled mechanisms once per process and keeps them, so each NEURON run is a
child process (:func:`run_neuron`) given the model as JSON. A model::

    {"swc": "cell.swc", "nseg": 1, "d_lambda": None,
     "insert": [["hh", {}], ["kdr", {"gbar": 0.01}]],      # everywhere
     "point": [["ExpSyn", "soma[0]", 0.5, {"tau": 2}]],
     "iclamp": [1.0, 20.0, 0.3],                            # soma[0](0.5): del, dur, amp
     "netstim": [3.0, 7.0, 5, [[0, 0.01, 1.0]]],           # start, interval, number,
                                                            # [point, weight, delay];
                                                            # weight: a number or a
                                                            # weight vector (a list)
     "vecstim": [[0.5, 4.25], [[0, 0.01, 1.0]], 0.0],      # times, [point, weight,
                                                            # delay], the VecStim's delay
                                                            # (optional): NEURON's VecStim
                                                            # (from a compiled
                                                            # vecevent.mod), hinesbatch's
                                                            # built-in
     "artificial": [["NetStimm", {"start": 5}]],            # artificial cells (NMODL
                                                            # ARTIFICIAL_CELL): kind,
                                                            # parameters
     "artificial_netcons": [["a0", "p0", 0.005, 1.0],       # NetCons source -> target:
                            ["ns", "a0", 1.0, 0.5]],        # "a<k>" artificial cell k,
                                                            # "ns" the netstim, "p<k>"
                                                            # point k; weight, delay
     "record": [["soma[0]", 0.5]],          # or [sec, x, "n_kdr"]: a RANGE variable,
                                            # ["point", k, "g"]: a point's variable
     "partner": [3.0, 20.0, 0.2],           # a second cell (the same SWC, one segment,
                                            # hh) with an IClamp at its soma(0.5): del,
                                            # dur, amp; POINTERs read its soma(0.5)
     "pointer": [[["point", 0], "vgap", "v"],   # owner, POINTER, target: "v" or a
                 [["insert", "ican"], "C", "m_hh"]],  # RANGE variable of the partner;
                                            # ["insert", mech]: every segment's instance
     "sources": [["netstim", 1.0, 3.0, 4], ["vecstim", [2.5, 9.0]]],
     "netcons": [[0, 0, 0.01, 1.0], [1, 0, [0.02, 1.0], 0.5]],  # after netstim's and
                                            # vecstim's, in this order: [source, point,
                                            # weight, delay] (NetCons of several sources
                                            # created in any order)
     "events": True,                        # also NetCon.weight of every NetCon after
                                            # the run (netstim's, then vecstim's) and the
                                            # soma's spike times (threshold 10 mV)
     "tstop": 30.0, "dt": 0.025, "celsius": 6.3,
     "v_init": -65.0, "tables": True}       # False: usetable_<name> = 0 for every
                                            # mechanism, Simulation(tables=False)

Run as a script, it compares every translated density mechanism, synapse and artificial
cell of a folder, and each copy of NEURON's VecStim (vecevent.mod, with or without a
delay) that stands for the built-in (``python tests/validation/nmodl_compare.py DIR [--set
NAME=VALUE ...]``): one line per file with max |ΔV|; for artificial cells and VecStims
whether their spike times (``NetCon.record``) are identical to NEURON's; for synapses that
learn (WATCH, FOR_NETCONS, an assigned weight) whether the NetCons' weights and the soma's
spike times after the run are identical. A mechanism with
LONGITUDINAL_DIFFUSION is also compared on a branched cell (:mod:`nmodl_diffusion`: max
|ΔV| and the largest difference of the diffusing concentrations).

The protocol of an artificial cell (:func:`standard_model`): one instance with the
file's parameters, driven by a NetStim (its NetCon events, flag 0) and driving an ExpSyn
on the hh soma, 150 ms (artificial cells' defaults often start at 50 ms). A VecStim plays
times that round when added, with a delay of 1.3 ms where the file has one.

Files whose blocks read a POINTER run with a partner cell (``"partner"``) and each
POINTER set to the partner's soma: its ``v`` where the file declares the POINTER in mV or
without a unit (a presynaptic voltage, a gap junction's other side), else its ``m_hh``
(a value in [0, 1] that rises with each of its spikes, standing for a transmitter
concentration): :func:`pointer_protocol`.

Files that draw NEURON's random numbers (``normrand``, ``exprand``, ...) compare as the
others: each NEURON run is a fresh process and each hinesbatch run a fresh
``Simulation``, so both streams start at 1, and ``backend="auto"`` runs hinesbatch's
serially, in NEURON's order of draws (the batch of :func:`run_batch` included: cell k's
draws follow cell k - 1's in both).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

import numpy as np

from hinesbatch.bench._nmodl_model import compile_mods

ROOT = Path(__file__).resolve().parents[2]

_CHILD = r"""
import json, sys
import numpy as np
from neuron import h
spec = json.loads(sys.argv[1])
if spec["lib"]:
    h.nrn_load_dll(spec["lib"])
from hinesbatch.bench.neuron_models import build_cell
h_, secs = build_cell(spec["swc"], ra=35.4, cm=1.0, d_lambda=spec["d_lambda"],
                      nseg=spec["nseg"], freq=100.0)
for name, params in spec["insert"]:
    for sec in secs.values():
        sec.insert(name)
        for k, v in params.items():
            for seg in sec:
                setattr(seg, f"{k}_{name}", v)
points = []
for kind, sec, x, params in spec["point"]:
    p = getattr(h, kind)(secs[sec](x))
    for k, v in params.items():
        setattr(p, k, v)
    points.append(p)
keep = []
if spec.get("iclamp"):
    stim = h.IClamp(secs["soma[0]"](0.5))
    stim.delay, stim.dur, stim.amp = spec["iclamp"]
    keep.append(stim)
if spec.get("netstim"):
    start, interval, number, targets = spec["netstim"]
    ns = h.NetStim()
    ns.start, ns.interval, ns.number, ns.noise = start, interval, number, 0
    keep.append(ns)
    for k, w, d in targets:
        nc = h.NetCon(ns, points[k])
        for i, x in enumerate(w if isinstance(w, list) else [w]):
            nc.weight[i] = x
        nc.delay = d
        keep.append(nc)
sources = []
if spec.get("vecstim"):
    times, targets, *delay = spec["vecstim"]
    vs, tvec = h.VecStim(), h.Vector(times)
    vs.play(tvec)
    if delay and delay[0]:
        vs.delay = delay[0]
    keep += [vs, tvec]
    sources.append(vs)
    for k, w, d in targets:
        nc = h.NetCon(vs, points[k])
        for i, x in enumerate(w if isinstance(w, list) else [w]):
            nc.weight[i] = x
        nc.delay = d
        keep.append(nc)
made = []
for src in spec.get("sources") or []:
    if src[0] == "netstim":
        made.append(h.NetStim())
        made[-1].start, made[-1].interval, made[-1].number = src[1:]
        made[-1].noise = 0
    else:
        made.append(h.VecStim())
        tv = h.Vector(src[1])
        made[-1].play(tv)
        keep.append(tv)
    keep.append(made[-1])
for s_, k, w, d in spec.get("netcons") or []:
    nc = h.NetCon(made[s_], points[k])
    for i, x in enumerate(w if isinstance(w, list) else [w]):
        nc.weight[i] = x
    nc.delay = d
    keep.append(nc)
netcons = [x for x in keep if x.hname().startswith("NetCon")]
if spec.get("events"):
    spikes = h.Vector()
    probe = h.NetCon(secs["soma[0]"](0.5)._ref_v, None, sec=secs["soma[0]"])
    probe.record(spikes)
cells = []
for kind, params in spec.get("artificial") or []:
    a = getattr(h, kind)()
    for k, x in params.items():
        setattr(a, k, x)
    cells.append(a)
    sources.append(a)
def _obj(name):
    return ns if name == "ns" else cells[int(name[1:])] if name[0] == "a" \
        else points[int(name[1:])]
for src, tgt, w, d in spec.get("artificial_netcons") or []:
    nc = h.NetCon(_obj(src), _obj(tgt))
    nc.weight[0], nc.delay = w, d
    keep.append(nc)
spike_vecs = []
for src in sources:
    vec = h.Vector()
    nc = h.NetCon(src, None)
    nc.record(vec)
    keep.append(nc)
    spike_vecs.append(vec)
if not spec["tables"]:
    for name in [m[0] for m in spec["insert"] + spec["point"]] + ["hh"]:
        if hasattr(h, f"usetable_{name}"):
            setattr(h, f"usetable_{name}", 0)
if spec.get("partner"):
    src = secs["soma[0]"]
    partner = h.Section(name="partner")
    for i in range(src.n3d()):
        h.pt3dadd(src.x3d(i), src.y3d(i), src.z3d(i), src.diam3d(i), sec=partner)
    partner.Ra, partner.cm, partner.nseg = 35.4, 1.0, 1
    partner.insert("hh")
    pstim = h.IClamp(partner(0.5))
    pstim.delay, pstim.dur, pstim.amp = spec["partner"]
    keep += [partner, pstim]
for owner, name, target in spec.get("pointer") or []:
    if target == "v":
        ref = partner(0.5)._ref_v
    else:
        var, mech = target.rsplit("_", 1)
        ref = getattr(getattr(partner(0.5), mech), f"_ref_{var}")
    if owner[0] == "point":
        h.setpointer(ref, name, points[owner[1]])
    else:
        for sec in secs.values():
            for seg in sec:
                h.setpointer(ref, name, getattr(seg, owner[1]))
vecs = []
for sec, x, *var in spec["record"]:
    vec = h.Vector()
    if sec == "point":
        vec.record(getattr(points[x], f"_ref_{var[0]}"))
    else:
        vec.record(getattr(secs[sec](x), f"_ref_{var[0] if var else 'v'}"))
    vecs.append(vec)
h.dt, h.celsius = spec["dt"], spec["celsius"]
h.steps_per_ms = 1.0 / spec["dt"]
h.finitialize(spec["v_init"])
try:
    h.continuerun(spec["tstop"])
except RuntimeError:
    sys.stderr.write(f"stopped at t = {h.t!r} ms\n")
    n = min(len(v) for v in vecs)     # what was recorded before the stop
    np.save(spec["out"], np.array([np.array(v)[:n] for v in vecs]))
    raise
np.save(spec["out"], np.array([np.array(v) for v in vecs]))
with open(spec["out"] + ".spikes.json", "w") as f:
    json.dump([list(v) for v in spike_vecs], f)
if spec.get("events"):
    with open(spec["out"] + ".json", "w") as f:
        json.dump({"weights": [[nc.weight[i] for i in range(int(nc.wcnt()))]
                               for nc in netcons], "spikes": list(spikes)}, f)
"""


_CHILD_BATCH = r"""
import json, sys
import numpy as np
from neuron import h
spec = json.loads(sys.argv[1])
if spec["lib"]:
    h.nrn_load_dll(spec["lib"])
from hinesbatch.bench.neuron_models import build_cell
h_, secs = build_cell(spec["swc"], ra=35.4, cm=1.0, nseg=1)
soma = secs["soma[0]"]
pts = [(soma.x3d(i), soma.y3d(i), soma.z3d(i), soma.diam3d(i)) for i in range(soma.n3d())]
keep, vecs = [], []
for k, model in enumerate(spec["models"]):
    sec = h.Section(name=f"cell{k}")
    for p in pts:
        h.pt3dadd(*p, sec=sec)
    sec.Ra, sec.cm, sec.nseg = 35.4, 1.0, 1
    keep.append(sec)
    for name, params in model["insert"]:
        sec.insert(name)
        for key, value in params.items():
            setattr(sec(0.5), f"{key}_{name}", value)
    points = []
    for kind, _, x, params in model.get("point", []):
        pp = getattr(h, kind)(sec(x))
        for key, value in params.items():
            setattr(pp, key, value)
        points.append(pp)
        keep.append(pp)
    if model.get("iclamp"):
        stim = h.IClamp(sec(0.5))
        stim.delay, stim.dur, stim.amp = model["iclamp"]
        keep.append(stim)
    if model.get("netstim"):
        start, interval, number, targets = model["netstim"]
        ns = h.NetStim()
        ns.start, ns.interval, ns.number, ns.noise = start, interval, number, 0
        keep.append(ns)
        for j, w, d in targets:
            nc = h.NetCon(ns, points[j])
            for i, x in enumerate(w if isinstance(w, list) else [w]):
                nc.weight[i] = x
            nc.delay = d
            keep.append(nc)
    vec = h.Vector()
    vec.record(sec(0.5)._ref_v)
    vecs.append(vec)
h.delete_section(sec=soma)
if not spec["tables"]:
    for model in spec["models"]:
        for name in [m[0] for m in model["insert"] + model.get("point", [])] + ["hh"]:
            if hasattr(h, f"usetable_{name}"):
                setattr(h, f"usetable_{name}", 0)
h.dt, h.celsius = spec["dt"], spec["celsius"]
h.steps_per_ms = 1.0 / spec["dt"]
h.finitialize(-65.0)
h.continuerun(spec["tstop"])
np.save(spec["out"], np.array([np.array(v) for v in vecs]))
"""


def run_batch(models: list, lib, swc, *, tstop=30.0, dt=0.025, celsius=6.3,
              tables=True):
    """NEURON's and hinesbatch's soma voltage [mV] for many one-compartment models at once
    (cell k runs ``models[k]``; each model's cell alone would give the same):
    ``(neuron, hinesbatch)``, each models × steps + 1. One run on each side compiles the
    mechanisms once. ``tables`` False: NEURON's ``usetable_<name> = 0`` for every
    mechanism, hinesbatch's ``tables=False``."""
    import hinesbatch as hb

    with tempfile.TemporaryDirectory() as tmp:
        spec = {"lib": lib, "swc": str(swc), "models": models, "tstop": tstop, "dt": dt,
                "celsius": celsius, "tables": tables, "out": os.path.join(tmp, "v.npy")}
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
        proc = subprocess.run([sys.executable, "-c", _CHILD_BATCH, json.dumps(spec)],
                              env=env, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"NEURON run failed:\n{proc.stderr[-3000:]}")
        ref = np.load(spec["out"])
    cells, plan = [], []
    for model in models:
        cell = hb.Cell(str(swc), nseg=1, ra=35.4, cm=1.0)
        for name, params in model["insert"]:
            cell.insert(name, **params)
        points = [cell.place(kind, f"soma[0]({x})", **params)
                  for kind, _, x, params in model.get("point", [])]
        if model.get("iclamp"):
            delay, dur, amp = model["iclamp"]
            cell.place("IClamp", "soma[0](0.5)", delay=delay, dur=dur, amp=amp)
        cells.append(cell)
        plan.append(points)
    sim = hb.Simulation(cells, dt=dt, celsius=celsius, tables=tables)
    for model, points in zip(models, plan):
        if model.get("netstim"):
            start, interval, number, targets = model["netstim"]
            ns = sim.net_stim(start=start, interval=interval, number=number)
            for j, w, d in targets:
                sim.connect(ns, points[j], weight=w, delay=d)
    keys = [sim.record("v", cell=k) for k in range(len(cells))]
    res = sim.run(tstop)
    return ref, np.array([res[k] for k in keys])


def soma_only(swc, folder) -> str:
    """An SWC file in ``folder`` of the soma points of ``swc`` only (its path): the
    partner cell, as NEURON's copy of ``soma[0]``'s 3-d points."""
    lines = [line for line in Path(swc).read_text().splitlines()
             if line.split() and not line.lstrip().startswith("#")
             and line.split()[1] == "1"]
    path = Path(folder) / "partner.swc"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def segment_locations(cell) -> list[str]:
    """``"sec(x)"`` of every segment of a hinesbatch ``cell`` (the nodes with membrane)."""
    geo = cell.geometry
    return [f"{geo.section_names[int(geo.section[k])]}({float(geo.x[k])!r})"
            for k in range(len(geo.x)) if geo.has_membrane[k]]


def range_variables(mech, path) -> list[str]:
    """The STATEs of ``mech`` and the ASSIGNED variables its file (``path``) declares
    RANGE: what NEURON lets a point process's variables be recorded by."""
    import re

    text = Path(path).read_text(errors="replace")
    ranges = set()
    for line in re.findall(r"^\s*RANGE\b([^:\n]*)", text, re.MULTILINE):
        ranges |= set(re.findall(r"[A-Za-z_]\w*", line))
    return [f.name for f in mech.states] + [f.name for f in mech.assigned
                                            if f.name in ranges]


def pointer_protocol(mech, path) -> tuple:
    """``(partner, pointer)`` entries of a model for ``mech`` (translated from ``path``):
    none where its blocks read no POINTER; else a partner cell driven by its own clamp and
    each POINTER read set to the partner's soma(0.5): ``v`` where the file declares it in
    mV (or without a unit), else ``m_hh``."""
    import re

    from hinesbatch.mechanisms.codegen import pointers_read

    names = pointers_read(mech)
    if not names:
        return None, []
    text = Path(path).read_text(errors="replace")
    owner = ["point", 0] if mech.kind == "point" else ["insert", mech.name]
    out = []
    for n in names:
        unit = re.search(rf"^\s*{re.escape(n)}\s*\(([^)]*)\)", text, re.MULTILINE)
        volts = unit is None or unit.group(1).strip() in ("mV", "millivolt")
        out.append([owner, n, "v" if volts else "m_hh"])
    return [3.0, 20.0, 0.2], out


def _defaults(model: dict) -> dict:
    out = {"nseg": 1, "d_lambda": None, "insert": [], "point": [], "iclamp": None,
           "netstim": None, "vecstim": None, "artificial": [], "artificial_netcons": [],
           "record": [["soma[0]", 0.5]], "tstop": 30.0, "dt": 0.025,
           "celsius": 6.3, "v_init": -65.0, "tables": True, "partner": None, "pointer": []}
    out.update(model)
    return out


def run_neuron(model: dict, lib: str | None, events: dict | None = None, *,
               spikes: bool = False):
    """NEURON's traces of ``model``'s records (voltages [mV] or RANGE variables),
    records × steps + 1; with ``spikes``, also the spike times [ms] of the VecStim and
    the artificial cells, in that order (a list of lists). With ``model["events"]``,
    ``events`` (a dict) receives ``"weights"`` (each NetCon's weight vector after the run)
    and ``"spikes"`` (the soma's spike times [ms])."""
    spec = _defaults(model)
    with tempfile.TemporaryDirectory() as tmp:
        spec.update(lib=lib, out=os.path.join(tmp, "v.npy"), swc=str(spec["swc"]))
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
        proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(spec)], env=env,
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            err = NeuronStopped(f"NEURON run failed:\n{proc.stderr[-3000:]}")
            if os.path.exists(spec["out"]):
                err.partial = np.load(spec["out"])
            raise err
        if spec.get("events") and events is not None:
            events.update(json.loads(Path(spec["out"] + ".json").read_text()))
        traces = np.load(spec["out"])
        if not spikes:
            return traces
        with open(spec["out"] + ".spikes.json") as f:
            return traces, json.load(f)


class NeuronStopped(RuntimeError):
    """NEURON's run failed; ``partial`` holds the traces recorded before it stopped
    (records × samples), where it stopped during the run."""

    partial = None


def run_hinesbatch(model: dict, events: dict | None = None, *, spikes: bool = False,
                   backend: str = "auto"):
    """hinesbatch's traces of ``model``'s records (mechanisms must be loaded); with
    ``spikes``, also the spike times as :func:`run_neuron` gives them; with
    ``model["events"]``, ``events`` receives what :func:`run_neuron` gives."""
    import hinesbatch as hb

    spec = _defaults(model)
    cell = hb.Cell(str(spec["swc"]), nseg=spec["nseg"], d_lambda=spec["d_lambda"],
                   ra=35.4, cm=1.0)
    for name, params in spec["insert"]:
        cell.insert(name, **params)
    points = [cell.place(kind, f"{sec}({x})", **params)
              for kind, sec, x, params in spec["point"]]
    if spec["iclamp"]:
        delay, dur, amp = spec["iclamp"]
        cell.place("IClamp", "soma[0](0.5)", delay=delay, dur=dur, amp=amp)
    cells = [cell]
    with tempfile.TemporaryDirectory() as tmp:
        if spec["partner"]:     # NEURON's partner: a copy of the soma's 3-d points
            partner = hb.Cell(soma_only(spec["swc"], tmp), nseg=1, ra=35.4,
                              cm=1.0).insert("hh")
            delay, dur, amp = spec["partner"]
            partner.place("IClamp", "soma[0](0.5)", delay=delay, dur=dur, amp=amp)
            cells.append(partner)
    sim = hb.Simulation(cells, dt=spec["dt"], celsius=spec["celsius"],
                        v_init=spec["v_init"], tables=spec["tables"], backend=backend)
    for owner, name, target in spec["pointer"]:
        owners = [points[owner[1]]] if owner[0] == "point" else [
            (0, location, owner[1]) for location in segment_locations(cell)]
        for o in owners:
            sim.set_pointer(o, name, target, cell=1)
    ns, sources = None, []
    netcons = []
    if spec["netstim"]:
        start, interval, number, targets = spec["netstim"]
        ns = sim.net_stim(start=start, interval=interval, number=number)
        for k, w, d in targets:
            netcons.append(sim.connect(ns, points[k], weight=_weight(w), delay=d))
    if spec["vecstim"]:
        times, targets, *delay = spec["vecstim"]
        vs = sim.vec_stim(times, delay=delay[0] if delay else 0.0)
        sources.append(vs)
        for k, w, d in targets:
            netcons.append(sim.connect(vs, points[k], weight=_weight(w), delay=d))
    made = [sim.net_stim(start=src[1], interval=src[2], number=src[3])
            if src[0] == "netstim" else sim.vec_stim(src[1])
            for src in spec.get("sources") or []]
    for s, k, w, d in spec.get("netcons") or []:
        netcons.append(sim.connect(made[s], points[k], weight=_weight(w), delay=d))
    if spec.get("events"):
        soma_spikes = sim.record_spikes(sim.spike_source(0, "soma[0](0.5)", 10.0))
    arts = [sim.artificial_cell(kind, **params) for kind, params in spec["artificial"]]
    sources += arts

    def obj(name):
        return ns if name == "ns" else arts[int(name[1:])] if name[0] == "a" \
            else points[int(name[1:])]

    for src, tgt, w, d in spec["artificial_netcons"]:
        sim.connect(obj(src), obj(tgt), weight=w, delay=d)
    spike_keys = [sim.record_spikes(s) for s in sources] if spikes else []
    keys = [sim.record(var[0], target=points[x]) if sec == "point" else
            sim.record(var[0] if var else "v", location=f"{sec}({x})")
            for sec, x, *var in spec["record"]]
    res = sim.run(spec["tstop"])
    if spec.get("events") and events is not None:
        events["weights"] = [list(np.ravel(nc.weight)) for nc in netcons]
        events["spikes"] = list(res.spikes[soma_spikes])
    traces = np.array([res[k] for k in keys])
    if not spikes:
        return traces
    return traces, [res.spikes[k].tolist() for k in spike_keys]


def _weight(w):
    """A weight or a weight vector of the model's JSON as ``Simulation.connect`` takes it."""
    return tuple(w) if isinstance(w, list) else w


#: Mechanisms NEURON 9.0.2 has built in besides hinesbatch's built-ins.
NEURON_NAMES = {"AlphaSynapse", "PointProcessMark", "APCount", "OClamp", "VClamp",
                "NetStim", "IntFire1", "IntFire2", "IntFire4", "PatternStim", "ExpSyn",
                "Exp2Syn", "extracellular", "fastpas", "capacitance", "morphology",
                "na_ion", "k_ion", "ca_ion"}



DATA_NMODL = Path(__file__).parents[1] / "data" / "nmodl"


def compiled_folder(folder: Path, files) -> tuple:
    """Copy ``files`` of tests/data/nmodl into ``folder``, build them with NEURON's
    nrnivmodl and load them into hinesbatch: ``(library, registered names)``
    (:func:`compiled_fixture` makes a module fixture of it)."""
    import warnings

    import hinesbatch as hb

    for name in files:
        (folder / name).write_text((DATA_NMODL / name).read_text())
    lib = compile_mods(sorted(folder.glob("*.mod")))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        names = hb.load_mechanisms(folder)
    return lib, names


def unregister(names) -> None:
    """Remove the mechanisms :func:`compiled_folder` registered."""
    from hinesbatch import mechanisms

    for n in names:
        mechanisms.unregister(n)


class Compiled(NamedTuple):
    """What :func:`compiled_fixture` yields: NEURON's library, the names hinesbatch
    registered, the folder of the files."""
    lib: str
    names: list
    folder: Path


def compiled_fixture(files, *, prepare=None):
    """A module-scoped pytest fixture: ``files`` of tests/data/nmodl built by nrnivmodl and
    loaded into hinesbatch (:func:`compiled_folder`), :class:`Compiled` yielded, the names
    unregistered after. ``prepare(folder)`` first writes further files there."""
    import pytest

    @pytest.fixture(scope="module")
    def compiled(tmp_path_factory):
        folder = tmp_path_factory.mktemp("mods")
        if prepare is not None:
            prepare(folder)
        lib, names = compiled_folder(folder, files)
        yield Compiled(lib, names, folder)
        unregister(names)

    return compiled


def one_point_soma(folder) -> str:
    """A soma of one SWC point (radius 10 µm) written to ``folder``; its path."""
    path = Path(folder) / "soma.swc"
    path.write_text("1 1 0 0 0 10 -1\n")
    return str(path)


def compare(model: dict, lib: str | None) -> tuple[float, np.ndarray]:
    """max |ΔV| [mV] between NEURON's traces of ``model`` (mechanisms of ``lib``) and
    hinesbatch's, and NEURON's traces."""
    ref, got = run_neuron(model, lib), run_hinesbatch(model)
    if ref.shape != got.shape:
        raise AssertionError(f"NEURON gave {ref.shape} samples, hinesbatch {got.shape}")
    return float(np.max(np.abs(ref - got))), ref

def renamed(path, name: str, new: str, out) -> Path:
    """A copy of ``path`` at ``out`` whose SUFFIX, POINT_PROCESS or ARTIFICIAL_CELL
    ``name`` is ``new``."""
    import re

    text = Path(path).read_text(errors="replace")
    text = re.sub(rf"\b(SUFFIX|POINT_PROCESS|ARTIFICIAL_CELL)(\s+){name}\b",
                  rf"\g<1>\g<2>{new}", text, count=1)
    Path(out).write_text(text)
    return Path(out)


def standard_model(mech, swc, path=None, params: dict | None = None) -> dict:
    """The standard protocol for one translated mechanism: a density mechanism with hh
    everywhere and a current clamp at the soma; a point process on the soma with hh (a
    synapse driven by a NetStim); where the blocks read a POINTER, a partner cell that
    it points at (:func:`pointer_protocol`; ``path`` the file), and for a point process
    STATEs and RANGE variables recorded besides v (:func:`range_variables`; max |ΔV| is
    then the largest difference of them all); an artificial cell (the file's parameters)
    driven by a NetStim and driving an ExpSyn on the soma with hh (module docstring). A
    synapse that learns (WATCH, FOR_NETCONS or an assigned weight) gets two NetCons from
    the NetStim, a clamp that makes the soma spike between their events, and the
    comparison of the NetCons' weights and the soma's spikes after the run. ``params``:
    values for the point process's parameters of those names."""
    if mech.kind == "artificial":
        nets = [["ns", "a0", 1.0, 0.5]] if mech.net_receive else []
        if "net_event(" in mech.net_receive:
            nets.append(["a0", "p0", 0.005, 1.0])
        return {"swc": swc, "insert": [["hh", {}]],
                "point": [["ExpSyn", "soma[0]", 0.5, {"tau": 2.0}]],
                "netstim": [2.0, 5.0, 4, []], "artificial": [[mech.name, {}]],
                "artificial_netcons": nets, "tstop": 150.0}
    if mech.kind == "density":
        model = {"swc": swc, "insert": [["hh", {}], [mech.name, {}]],
                 "iclamp": [1.0, 20.0, 0.3], "tstop": 30.0}
    else:
        own = {k: v for k, v in (params or {}).items() if k in mech.field_names}
        model = {"swc": swc, "insert": [["hh", {}]],
                 "point": [[mech.name, "soma[0]", 0.5, own]],
                 "iclamp": [1.0, 20.0, 0.1], "tstop": 30.0}
        if mech.net_receive:
            model["netstim"] = [2.0, 5.0, 4, [[0, 0.005, 1.0]]]
        if learns(mech):
            model.update(iclamp=[1.0, 30.0, 0.3], events=True, tstop=40.0,
                         netstim=[2.0, 3.1, 10, [[0, 0.005, 1.0], [0, 0.003, 2.5]]])
    partner, pointer = pointer_protocol(mech, path) if path is not None else (None, [])
    if pointer:
        model.update(partner=partner, pointer=pointer)
        if mech.kind == "point":     # also what the POINTER drives
            model["record"] = [["soma[0]", 0.5]] + [
                ["point", 0, n] for n in range_variables(mech, path)]
    return model


def learns(mech) -> bool:
    """Whether the NET_RECEIVE of ``mech`` has WATCH, FOR_NETCONS or assigns the
    NetCon's weight."""
    from hinesbatch.mechanisms.codegen import MechanismCode

    code = MechanismCode(mech)
    return bool(mech.net_receive) and bool(code.receive_watches or code.receive_netcons
                                           or code.receive_weight_writes)


def events_agree(ref: dict, got: dict) -> str:
    """What :func:`run_neuron`'s and :func:`run_hinesbatch`'s ``events`` say, in words."""
    same_w = ref["weights"] == [[float(x) for x in w] for w in got["weights"]]
    same_s = ref["spikes"] == [float(x) for x in got["spikes"]]
    return (f"NetCon weights {'identical' if same_w else 'DIFFER'} "
            f"({', '.join(f'{w[0]:.6g}' for w in ref['weights'])}), "
            f"{len(ref['spikes'])} spikes {'identical' if same_s else 'DIFFER'}")


def _compare_one(hb, path, name, lib, swc, params=None):
    """(path, name, status, max |dV| or None) of one file under the standard protocol."""
    import warnings

    from hinesbatch.sim import NonFiniteStateError

    if lib is None:
        return (path, name, "nrnivmodl fails", None)
    hb.mechanisms.unregister(name)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            hb.load_mechanisms(path)
        model = standard_model(hb.mechanisms.get(name), swc, path, params)
        if hb.mechanisms.get(name).kind == "artificial":
            return (path, name, *_compare_spikes(model, lib))
        ref_events, got_events = {}, {}
        try:
            ref = run_neuron(model, lib, ref_events)
        except NeuronStopped as err:
            if "scopmath library error" not in str(err) or err.partial is None:
                raise
            return (path, name, _stopped(model, err), None)
        try:
            got = run_hinesbatch(model, got_events)
        except NonFiniteStateError:
            if not np.isfinite(ref).all():
                return (path, name, "non-finite in NEURON too (the file's defaults)", None)
            raise
        dv = float(np.max(np.abs(ref - got))) if ref.shape == got.shape else np.inf
        if model.get("events"):
            return (path, name, f"compared, {events_agree(ref_events, got_events)},", dv)
        return (path, name, "compared", dv)
    except Exception as err:  # noqa: BLE001 - report and go on: this is a survey
        return (path, name, f"error: {type(err).__name__}: {err}"[:300].replace("\n", " "),
                None)
    finally:
        hb.mechanisms.unregister(name)


#: The VecStim protocol: times whose sums with the delay round, onto an ExpSyn on the soma.
VECSTIM_TIMES = [0.762, 5.2, 7.3, 7.3, 12.05, 30.1, 44.9]


def _compare_spikes(model, lib) -> tuple:
    """``(status, max |dV|)`` of a model whose sources' spike times are compared too."""
    ref, ref_spikes = run_neuron(model, lib, spikes=True)
    got, got_spikes = run_hinesbatch(model, spikes=True)
    dv = float(np.max(np.abs(ref - got))) if ref.shape == got.shape else np.inf
    n = sum(len(s) for s in ref_spikes)
    same = ref_spikes == got_spikes
    return (f"compared; spike times {'identical' if same else 'DIFFER'} ({n} spikes)", dv)


def _compare_vecstim(path, tr, lib, swc):
    """A copy of NEURON's VecStim, compiled, against the built-in VecStim (with the
    file's delay where it has one)."""
    if lib is None:
        return (path, "VecStim", "nrnivmodl fails", None)
    delay = 1.3 if "delay" in tr.builtin_params else 0.0
    model = {"swc": swc, "insert": [["hh", {}]],
             "point": [["ExpSyn", "soma[0]", 0.5, {"tau": 2.0}]],
             "vecstim": [VECSTIM_TIMES, [[0, 0.005, 1.0]], delay], "tstop": 60.0}
    try:
        status, dv = _compare_spikes(model, lib)
        return (path, "VecStim", f"the built-in VecStim{' with a delay' if delay else ''}, "
                + status, dv)
    except Exception as err:  # noqa: BLE001 - report and go on: this is a survey
        return (path, "VecStim", f"error: {type(err).__name__}: {err}"[:300]
                .replace("\n", " "), None)


def _stopped(model: dict, err: NeuronStopped) -> str:
    """The status of a file whose NEURON run stopped with a scopmath error (its Newton
    iteration failed): hinesbatch's traces over the steps NEURON recorded, and where
    hinesbatch stops."""
    import re

    from hinesbatch.sim import NonFiniteStateError

    at = re.search(r"stopped at t = (\S+) ms", str(err))
    when = f"{float(at.group(1)):g} ms" if at else "an unknown time"
    n = err.partial.shape[1]
    spec = _defaults(model)
    got = run_hinesbatch(dict(model, tstop=(n - 1) * spec["dt"]))[:, :n]
    dv = float(np.max(np.abs(err.partial - got))) if got.shape == err.partial.shape \
        else np.inf
    try:
        run_hinesbatch(model)
        after = "hinesbatch runs on"
    except NonFiniteStateError as stop:
        after = f"hinesbatch's states become non-finite at t = {stop.t_ms:g} ms"
    return (f"NEURON stops with a scopmath error (its Newton iteration failed) at "
            f"t = {when}; before, max|dV| = {dv:.3g} over {n} samples; {after}")


def _compare_batch(hb, items, libs, swc, params=None) -> dict:
    """The files of one library compared in one NEURON run and one hinesbatch run ({} when
    that fails: then each file runs alone)."""
    import warnings

    lib = {libs[p] for p, _ in items}
    if len(lib) != 1 or None in lib:
        return {}
    loaded, batched, models = [], [], []
    try:
        for path, name in items:
            hb.mechanisms.unregister(name)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                hb.load_mechanisms(path)
            model = standard_model(hb.mechanisms.get(name), swc, path)
            if model.get("pointer"):     # a partner cell: compared alone
                hb.mechanisms.unregister(name)
                continue
            loaded.append((path, name))
            if hb.mechanisms.get(name).kind == "artificial":
                continue            # each alone (_compare_one), its spikes compared too
            batched.append((path, name))
            models.append(model)
        if not models or any(m.get("events") for m in models):
            return {}       # each alone: spikes, weights and spikes are compared too
        ref, got = run_batch(models, lib.pop(), swc)
        return {path: (path, name, "compared", float(np.max(np.abs(r - g))))
                for (path, name), r, g in zip(batched, ref, got)}
    except Exception:  # noqa: BLE001 - then each file runs alone, reporting its error
        return {}
    finally:
        for _, name in loaded:
            hb.mechanisms.unregister(name)


def main(argv=None) -> int:
    import argparse

    import hinesbatch as hb
    from hinesbatch.nmodl import NmodlError
    from hinesbatch.nmodl.registry import translation

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir")
    parser.add_argument("--swc", default=None, help="default: a one-compartment soma")
    parser.add_argument("--skip-listed", metavar="LOG", default=None,
                        help="skip the files an earlier run's output compared")
    parser.add_argument("--set", metavar="NAME=VALUE", action="append", default=[],
                        help="a value for the point processes' parameter NAME (where "
                             "they have one); repeatable")
    args = parser.parse_args(argv)
    params = {}
    for item in args.set:
        name, _, value = item.partition("=")
        params[name.strip()] = float(value)
    skip = set()
    if args.skip_listed:
        for line in Path(args.skip_listed).read_text().splitlines():
            if ": compared " in line:
                skip.add(line.split(": ")[0])
    root = Path(args.dir)
    work = Path(tempfile.mkdtemp(prefix="nmodl-compare-"))
    swc = args.swc if args.swc is not None else one_point_soma(work)
    rows = []
    folders: dict = {}
    vecstims: list = []
    for path in sorted(root.rglob("*.mod")):
        if str(path) in skip:
            continue
        try:
            tr = translation(path)
        except NmodlError:
            continue
        if tr.builtin is not None:
            vecstims.append((path, tr))
            continue
        mech = tr.mechanism
        if mech.name in hb.mechanisms.names() and hb.mechanisms.registered(mech.name) is None \
                or mech.name in NEURON_NAMES:
            path = renamed(path, mech.name, f"{mech.name}_t",
                           work / f"{sum(map(len, folders.values())):04d}.mod")
            mech = translation(path).mechanism
        folders.setdefault(path.parent, []).append((path, mech.name))
    rows = []
    for items in folders.values():
        try:       # one build per folder; per file where names clash
            if len({n for _, n in items}) != len(items):     # NEURON loads one of a name
                raise RuntimeError("two files of one mechanism name")
            libs = dict.fromkeys((p for p, _ in items), compile_mods([p for p, _ in items]))
        except RuntimeError:
            libs = {}
            for p, _ in items:
                try:
                    libs[p] = compile_mods([p])
                except RuntimeError:
                    libs[p] = None
        batch = _compare_batch(hb, items, libs, swc, params)
        for path, name in items:
            r = batch.get(path) or _compare_one(hb, path, name, libs[path], swc, params)
            rows.append(r)
            print(f"{r[0]}: {r[1]}: {r[2]}"
                  + ("" if r[3] is None else f" max|dV| = {r[3]:.3g} mV"), flush=True)
            if translation(path).mechanism.diffusion:
                # a soma cannot show longitudinal diffusion: a branched cell too
                from nmodl_diffusion import compare_file

                try:
                    print(compare_file(path), flush=True)
                except Exception as err:  # noqa: BLE001 - a survey: report and go on
                    print(f"{path}: {name}: diffusion: error: {type(err).__name__}: "
                          f"{err}"[:300].replace("\n", " "), flush=True)
    for path, tr in vecstims:     # the built-in VecStim against each compiled copy
        try:
            lib = compile_mods([path])
        except RuntimeError:
            lib = None
        r = _compare_vecstim(path, tr, lib, swc)
        rows.append(r)
        print(f"{r[0]}: {r[1]}: {r[2]}" + ("" if r[3] is None else f" max|dV| = {r[3]:.3g} mV"),
              flush=True)
    dvs = [r[3] for r in rows if r[3] is not None]
    within = sum(1 for d in dvs if d <= 1e-9)
    differ = sum(1 for r in rows if "DIFFER" in r[2])
    print(f"\n{len(rows)} translated files; {len(dvs)} compared with NEURON; "
          f"{within} within 1e-9 mV; worst {max(dvs) if dvs else float('nan'):.3g} mV"
          + (f"; spike times differ in {differ}" if differ else ""))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
