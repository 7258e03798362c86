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
     "vecstim": [[0.5, 4.25], [[0, 0.01, 1.0]]],           # times, [point, weight,
                                                            # delay]: NEURON's VecStim
                                                            # (from a compiled
                                                            # vecevent.mod), hinesbatch's
                                                            # built-in
     "sources": [["netstim", 1.0, 3.0, 4], ["vecstim", [2.5, 9.0]]],
     "netcons": [[0, 0, 0.01, 1.0], [1, 0, [0.02, 1.0], 0.5]],  # after netstim's and
                                            # vecstim's, in this order: [source, point,
                                            # weight, delay] (NetCons of several sources
                                            # created in any order)
     "events": True,                        # also NetCon.weight of every NetCon after
                                            # the run (netstim's, then vecstim's) and the
                                            # soma's spike times (threshold 10 mV)
     "record": [["soma[0]", 0.5]],          # or [sec, x, "n_kdr"]: a RANGE variable
     "tstop": 30.0, "dt": 0.025, "celsius": 6.3,
     "v_init": -65.0, "tables": True}       # False: usetable_<name> = 0 for every
                                            # mechanism, Simulation(tables=False)

Run as a script, it compares every translated density mechanism and synapse of a folder
(``python tests/validation/nmodl_compare.py DIR [--set NAME=VALUE ...]``): one line per
file with max |ΔV|, and for synapses that learn (WATCH, FOR_NETCONS, an assigned weight)
whether the NetCons' weights and the soma's spike times after the run are identical.

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
if spec.get("vecstim"):
    times, targets = spec["vecstim"]
    vs, tvec = h.VecStim(), h.Vector(times)
    vs.play(tvec)
    keep += [vs, tvec]
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
if not spec["tables"]:
    for name in [m[0] for m in spec["insert"] + spec["point"]] + ["hh"]:
        if hasattr(h, f"usetable_{name}"):
            setattr(h, f"usetable_{name}", 0)
vecs = []
for sec, x, *var in spec["record"]:
    vec = h.Vector()
    vec.record(getattr(secs[sec](x), f"_ref_{var[0] if var else 'v'}"))
    vecs.append(vec)
h.dt, h.celsius = spec["dt"], spec["celsius"]
h.steps_per_ms = 1.0 / spec["dt"]
h.finitialize(spec["v_init"])
h.continuerun(spec["tstop"])
np.save(spec["out"], np.array([np.array(v) for v in vecs]))
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


def _defaults(model: dict) -> dict:
    out = {"nseg": 1, "d_lambda": None, "insert": [], "point": [], "iclamp": None,
           "netstim": None, "vecstim": None, "record": [["soma[0]", 0.5]], "tstop": 30.0, "dt": 0.025,
           "celsius": 6.3, "v_init": -65.0, "tables": True}
    out.update(model)
    return out


def run_neuron(model: dict, lib: str | None, events: dict | None = None) -> np.ndarray:
    """NEURON's traces of ``model``'s records (voltages [mV] or RANGE variables),
    records × steps + 1. With ``model["events"]``, ``events`` (a dict) receives
    ``"weights"`` (each NetCon's weight vector after the run) and ``"spikes"`` (the
    soma's spike times [ms])."""
    spec = _defaults(model)
    with tempfile.TemporaryDirectory() as tmp:
        spec.update(lib=lib, out=os.path.join(tmp, "v.npy"), swc=str(spec["swc"]))
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
        proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(spec)], env=env,
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"NEURON run failed:\n{proc.stderr[-3000:]}")
        if spec.get("events") and events is not None:
            events.update(json.loads(Path(spec["out"] + ".json").read_text()))
        return np.load(spec["out"])


def run_hinesbatch(model: dict, events: dict | None = None, *,
                   backend: str = "auto") -> np.ndarray:
    """hinesbatch's traces of ``model``'s records (mechanisms must be loaded); with
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
    sim = hb.Simulation(cell, dt=spec["dt"], celsius=spec["celsius"], v_init=spec["v_init"],
                        tables=spec["tables"], backend=backend)
    netcons = []
    if spec["netstim"]:
        start, interval, number, targets = spec["netstim"]
        ns = sim.net_stim(start=start, interval=interval, number=number)
        for k, w, d in targets:
            netcons.append(sim.connect(ns, points[k], weight=_weight(w), delay=d))
    if spec["vecstim"]:
        times, targets = spec["vecstim"]
        vs = sim.vec_stim(times)
        for k, w, d in targets:
            netcons.append(sim.connect(vs, points[k], weight=_weight(w), delay=d))
    made = [sim.net_stim(start=src[1], interval=src[2], number=src[3])
            if src[0] == "netstim" else sim.vec_stim(src[1])
            for src in spec.get("sources") or []]
    for s, k, w, d in spec.get("netcons") or []:
        netcons.append(sim.connect(made[s], points[k], weight=_weight(w), delay=d))
    if spec.get("events"):
        spikes = sim.record_spikes(sim.spike_source(0, "soma[0](0.5)", 10.0))
    keys = [sim.record(var[0] if var else "v", location=f"{sec}({x})")
            for sec, x, *var in spec["record"]]
    res = sim.run(spec["tstop"])
    if spec.get("events") and events is not None:
        events["weights"] = [list(np.ravel(nc.weight)) for nc in netcons]
        events["spikes"] = list(res.spikes[spikes])
    return np.array([res[k] for k in keys])


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
    nrnivmodl and load them into hinesbatch: ``(library, registered names)``. A module
    fixture yields this and unregisters the names after (:func:`unregister`)."""
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
    """A copy of ``path`` at ``out`` whose SUFFIX or POINT_PROCESS ``name`` is ``new``."""
    import re

    text = Path(path).read_text(errors="replace")
    text = re.sub(rf"\b(SUFFIX|POINT_PROCESS)(\s+){name}\b", rf"\g<1>\g<2>{new}", text,
                  count=1)
    Path(out).write_text(text)
    return Path(out)


def standard_model(mech, swc, params: dict | None = None) -> dict:
    """The standard protocol for one translated mechanism: a density mechanism with hh
    everywhere and a current clamp at the soma; a point process on the soma with hh (a
    synapse driven by a NetStim). A synapse that learns (WATCH, FOR_NETCONS or an
    assigned weight) gets two NetCons from the NetStim, a clamp that makes the soma
    spike between their events, and the comparison of the NetCons' weights and the
    soma's spikes after the run. ``params``: values for the point process's parameters
    of those names."""
    if mech.kind == "density":
        return {"swc": swc, "insert": [["hh", {}], [mech.name, {}]],
                "iclamp": [1.0, 20.0, 0.3], "tstop": 30.0}
    own = {k: v for k, v in (params or {}).items() if k in mech.field_names}
    model = {"swc": swc, "insert": [["hh", {}]],
             "point": [[mech.name, "soma[0]", 0.5, own]],
             "iclamp": [1.0, 20.0, 0.1], "tstop": 30.0}
    if mech.net_receive:
        model["netstim"] = [2.0, 5.0, 4, [[0, 0.005, 1.0]]]
    if learns(mech):
        model.update(iclamp=[1.0, 30.0, 0.3], events=True, tstop=40.0,
                     netstim=[2.0, 3.1, 10, [[0, 0.005, 1.0], [0, 0.003, 2.5]]])
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
        model = standard_model(hb.mechanisms.get(name), swc, params)
        ref_events, got_events = {}, {}
        ref = run_neuron(model, lib, ref_events)
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


def _compare_batch(hb, items, libs, swc, params=None) -> dict:
    """The files of one library compared in one NEURON run and one hinesbatch run ({} when
    that fails: then each file runs alone)."""
    import warnings

    lib = {libs[p] for p, _ in items}
    if len(lib) != 1 or None in lib:
        return {}
    loaded, models = [], []
    try:
        for path, name in items:
            hb.mechanisms.unregister(name)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                hb.load_mechanisms(path)
            loaded.append((path, name))
            models.append(standard_model(hb.mechanisms.get(name), swc, params))
        if any(m.get("events") for m in models):
            return {}       # each alone: weights and spikes are compared too
        ref, got = run_batch(models, lib.pop(), swc)
        return {path: (path, name, "compared", float(np.max(np.abs(r - g))))
                for (path, name), r, g in zip(loaded, ref, got)}
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
    for path in sorted(root.rglob("*.mod")):
        if str(path) in skip:
            continue
        try:
            tr = translation(path)
        except NmodlError:
            continue
        if tr.builtin is not None:
            print(f"{path}: {tr.builtin}: NEURON's own file of the built-in {tr.builtin}, "
                  "which hinesbatch uses (not compared)", flush=True)
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
    dvs = [r[3] for r in rows if r[3] is not None]
    within = sum(1 for d in dvs if d <= 1e-9)
    print(f"\n{len(rows)} translated files; {len(dvs)} compared with NEURON; "
          f"{within} within 1e-9 mV; worst {max(dvs) if dvs else float('nan'):.3g} mV")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
