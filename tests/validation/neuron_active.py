"""Active models in NEURON (hh, pas, IClamp, SEClamp, ExpSyn, Exp2Syn, NetCon, NetStim).

A model is described once, as plain data (a JSON-able ``dict``), and built twice: in NEURON
by :func:`run_models` (each call in a fresh Python process, since NEURON keeps global state)
and in hinesbatch by :func:`hinesbatch_simulation`, so both simulators get the same cells,
stimuli and recordings. A model::

    {"cells": [{"morphology": "path.swc", "d_lambda": 0.1, "ra": 100.0, "cm": 1.0,
                "mechanisms": [{"name": "hh", "region": "all", "params": {}}],
                "point_processes": [{"kind": "IClamp", "location": "soma[0](0.5)",
                                     "params": {"delay": 5.0, "dur": 50.0, "amp": 1.0}}]}],
     "sources": [{"cell": 0, "location": "soma[0](0.5)", "threshold": 10.0},
                 {"net_stim": {"start": 20.0, "interval": 7.3, "number": 6}}],
     "connections": [{"source": 1, "target": [0, 0], "weight": 0.01, "delay": 1.0}],
     "records": [{"key": "v_soma", "variable": "v", "cell": 0, "location": "soma[0](0.5)"},
                 {"key": "i_stim", "variable": "i", "target": [0, 0], "every": 2}],
     "dt": 0.025, "tstop": 100.0, "celsius": 6.3, "v_init": -65.0, "usetable": 1}

- ``cells[i]`` is gid ``i``. ``nseg`` (a number) or ``d_lambda`` (NEURON's ``lambda_f`` rule
  at 100 Hz, as ``fixnseg.hoc``); ``ra`` [Ω·cm], ``cm`` [µF/cm²].
- Regions: ``"all"``, an SWC type name (``"soma"``, ``"axon"``, ``"dend"``, ``"apic"``), a
  section name (``"dend[3]"``) or a list of these. Parameters use NEURON's names
  (``gnabar_hh``, ``g_pas``); point-process parameters too (``IClamp`` ``delay`` is ``del``).
- A point process is named ``[cell, index]``, its position in the cell's list.
- Sources: a threshold on a cell's location, or a NetStim (noise 0). Every source's spikes
  are recorded (``NetCon.record``) under its index as a string key, ``"0"``, ``"1"``...
- Records: ``v`` or a range variable (``m_hh``, ``ina``...) at a location, or a
  point-process variable (``i``, ``g``, ``A``, ``B``) of a target, every ``every``-th step
  from t = 0.
- ``rates_at`` (optional, a list of mV): after the run, hh's ``rates(v)`` at each voltage
  is returned as traces ``"rates/minf"``, ``"rates/mtau"``, ... (``times`` holds the
  voltages).
- ``usetable`` is ``usetable_hh``; the run is ``finitialize(v_init)`` then
  ``continuerun(tstop)`` at fixed step with ``secondorder = 0``.

A result is ``{"t": float64[n], "traces": {key: float64[m]}, "times": {key: float64[m]},
"spikes": {source_key: float64[k]}, "nseg": {cell: {section: nseg}}, "error": None}``; when
NEURON refuses the model (for example ``lambda_f`` on a 0 diameter), ``"error"`` holds its
message and the arrays are empty.
"""
from __future__ import annotations

import copy
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

__all__ = ["REAL", "cylinder_model", "cylinder_swc", "distal_location", "events_model",
           "format_location", "hh_cell_model", "hinesbatch_simulation", "long_firing_model",
           "max_abs_diff", "parse_location", "regions_model", "ring_model", "run_hinesbatch",
           "run_model", "run_models", "simulator_missing", "two_cell_model"]

HERE = Path(__file__).resolve().parent
REAL = HERE.parent / "data" / "morphologies" / "real"

#: NEURON's stdlib lambda_f frequency for the d_lambda rule [Hz].
D_LAMBDA_FREQ = 100.0

_TEMPLATE = """
begintemplate HinesbatchCell
public soma, axon, dend, apic, all, somatic, axonal, basal, apical
create soma[1], axon[1], dend[1], apic[1]
objref all, somatic, axonal, basal, apical
proc init() {
    all = new SectionList()
    somatic = new SectionList()
    axonal = new SectionList()
    basal = new SectionList()
    apical = new SectionList()
}
endtemplate HinesbatchCell
"""

_LOCATION = re.compile(r"^\s*([^()\s]+)\s*\(\s*([^()]+?)\s*\)\s*$")

#: Point-process parameters whose NEURON attribute differs from the model's name.
_PP_ATTR = {"delay": "del"}


def parse_location(location) -> tuple[str, float]:
    """``"soma[0](0.5)"`` or ``("soma[0]", 0.5)`` -> ``("soma[0]", 0.5)``."""
    if isinstance(location, str):
        match = _LOCATION.match(location)
        if match is None:
            raise ValueError(f"location {location!r} is not of the form 'section(x)'")
        return match.group(1), float(match.group(2))
    section, x = location
    return str(section), float(x)


def format_location(section: str, x: float) -> str:
    """``("dend[3]", 0.25)`` -> ``"dend[3](0.25)"`` (x written so that it reads back exactly)."""
    return f"{section}({float(x)!r})"


# --------------------------------------------------------------------------- models

def hh_cell_model(path, *, usetable: int = 1, d_lambda: float = 0.1, ra: float = 100.0,
                  cm: float = 1.0, clamp: str = "soma[0](0.5)", amp: float = 1.0,
                  delay: float = 5.0, dur: float = 50.0, tstop: float = 100.0,
                  dt: float = 0.025, celsius: float = 6.3, v_init: float = -65.0,
                  record=("soma[0](0.5)",), states=()) -> dict:
    """hh everywhere, one IClamp, v (and ``states``) at every ``record`` location.

    Records are keyed ``"<variable>@<location>"``; the spike source 0 is a 10 mV threshold
    at the clamp location.
    """
    records = [{"key": f"{var}@{loc}", "variable": var, "cell": 0, "location": loc}
               for loc in record for var in ("v", *states)]
    return {
        "cells": [{"morphology": os.fspath(path), "d_lambda": d_lambda, "ra": ra, "cm": cm,
                   "mechanisms": [{"name": "hh", "region": "all", "params": {}}],
                   "point_processes": [{"kind": "IClamp", "location": clamp,
                                        "params": {"delay": delay, "dur": dur, "amp": amp}}]}],
        "sources": [{"cell": 0, "location": clamp, "threshold": 10.0}],
        "connections": [], "records": records,
        "dt": dt, "tstop": tstop, "celsius": celsius, "v_init": v_init, "usetable": usetable,
    }


def regions_model(path, *, usetable: int = 1, seclamp: bool = False, distal: str,
                  tstop: float = 100.0) -> dict:
    """pas in dend/apic, hh in soma/axon (d_lambda 0.1, Ra 100), several clamps.

    IClamps: 0.8 nA 5–55 ms and 0.3 nA 60.0125–80 ms at ``soma[0](0.5)``, −0.2 nA 20–40 ms
    at ``distal``. With ``seclamp``, an SEClamp at ``distal`` (rs 0.01 MΩ; −65 mV for 10 ms,
    −20 mV for 20 ms, −70 mV for 30 ms) replaces the distal IClamp. Records v, ina and
    m_hh at the soma, v at ``distal``, every clamp's ``i``.
    """
    pps = [{"kind": "IClamp", "location": "soma[0](0.5)",
            "params": {"delay": 5.0, "dur": 50.0, "amp": 0.8}},
           {"kind": "IClamp", "location": "soma[0](0.5)",
            "params": {"delay": 60.0125, "dur": 19.9875, "amp": 0.3}}]
    if seclamp:
        pps.append({"kind": "SEClamp", "location": distal,
                    "params": {"rs": 0.01, "dur1": 10.0, "amp1": -65.0, "dur2": 20.0,
                               "amp2": -20.0, "dur3": 30.0, "amp3": -70.0}})
    else:
        pps.append({"kind": "IClamp", "location": distal,
                    "params": {"delay": 20.0, "dur": 20.0, "amp": -0.2}})
    records = [{"key": f"{var}@soma", "variable": var, "cell": 0, "location": "soma[0](0.5)"}
               for var in ("v", "ina", "m_hh")]
    records.append({"key": "v@distal", "variable": "v", "cell": 0, "location": distal})
    records += [{"key": f"i@{pps[k]['kind']}[{k}]", "variable": "i", "target": [0, k]}
                for k in range(len(pps))]
    return {
        "cells": [{"morphology": os.fspath(path), "d_lambda": 0.1, "ra": 100.0, "cm": 1.0,
                   "mechanisms": [
                       {"name": "pas", "region": ["dend", "apic"],
                        "params": {"g_pas": 1e-4, "e_pas": -65.0}},
                       {"name": "hh", "region": ["soma", "axon"], "params": {}}],
                   "point_processes": pps}],
        "sources": [{"cell": 0, "location": "soma[0](0.5)", "threshold": 10.0}],
        "connections": [], "records": records,
        "dt": 0.025, "tstop": tstop, "celsius": 6.3, "v_init": -65.0, "usetable": usetable,
    }


def two_cell_model(*, usetable: int = 1, weight: float = 0.05, post_dend: str,
                   tstop: float = 100.0) -> dict:
    """c91662 (pre) → mp_ma_40984_gc2 (post), both hh everywhere, d_lambda 0.1, Ra 100.

    The pre cell gets IClamp 1 nA 5–55 ms at soma[0](0.5). Its soma (threshold 10 mV)
    drives, with delay 1 ms and ``weight`` [µS], an ExpSyn (τ 2 ms, e 0) at the post soma
    and an Exp2Syn (0.5/5 ms, e 0) at ``post_dend``. A NetStim (start 20, interval 7.3,
    6 spikes) drives another ExpSyn (delay 0.5) and Exp2Syn (delay 0.0123) at the post
    soma with weight 0.01 µS. Records v at both somas and ``post_dend``, ExpSyn g,
    Exp2Syn A, B and g.
    """
    hh = [{"name": "hh", "region": "all", "params": {}}]
    pre = {"morphology": os.fspath(REAL / "c91662.swc"), "d_lambda": 0.1, "ra": 100.0,
           "cm": 1.0, "mechanisms": hh,
           "point_processes": [{"kind": "IClamp", "location": "soma[0](0.5)",
                                "params": {"delay": 5.0, "dur": 50.0, "amp": 1.0}}]}
    post = {"morphology": os.fspath(REAL / "mp_ma_40984_gc2.CNG.swc"), "d_lambda": 0.1,
            "ra": 100.0, "cm": 1.0, "mechanisms": hh,
            "point_processes": [
                {"kind": "ExpSyn", "location": "soma[0](0.5)", "params": {"tau": 2.0, "e": 0.0}},
                {"kind": "Exp2Syn", "location": post_dend,
                 "params": {"tau1": 0.5, "tau2": 5.0, "e": 0.0}},
                {"kind": "ExpSyn", "location": "soma[0](0.5)", "params": {"tau": 2.0, "e": 0.0}},
                {"kind": "Exp2Syn", "location": "soma[0](0.5)",
                 "params": {"tau1": 0.5, "tau2": 5.0, "e": 0.0}}]}
    records = [{"key": "v@pre", "variable": "v", "cell": 0, "location": "soma[0](0.5)"},
               {"key": "v@post", "variable": "v", "cell": 1, "location": "soma[0](0.5)"},
               {"key": "v@post_dend", "variable": "v", "cell": 1, "location": post_dend}]
    for k, kind in enumerate(["ExpSyn", "Exp2Syn", "ExpSyn", "Exp2Syn"]):
        for var in (("g",) if kind == "ExpSyn" else ("A", "B", "g")):
            records.append({"key": f"{var}@{kind}[{k}]", "variable": var, "target": [1, k]})
    return {
        "cells": [pre, post],
        "sources": [{"cell": 0, "location": "soma[0](0.5)", "threshold": 10.0},
                    {"cell": 1, "location": "soma[0](0.5)", "threshold": 10.0},
                    {"net_stim": {"start": 20.0, "interval": 7.3, "number": 6}}],
        "connections": [{"source": 0, "target": [1, 0], "weight": weight, "delay": 1.0},
                        {"source": 0, "target": [1, 1], "weight": weight, "delay": 1.0},
                        {"source": 2, "target": [1, 2], "weight": 0.01, "delay": 0.5},
                        {"source": 2, "target": [1, 3], "weight": 0.01, "delay": 0.0123}],
        "records": records,
        "dt": 0.025, "tstop": tstop, "celsius": 6.3, "v_init": -65.0, "usetable": usetable,
    }


def ring_model(n: int = 4, *, usetable: int = 1, weight: float = 0.1, delay: float = 1.0,
               path=None, tstop: float = 100.0) -> dict:
    """``n`` cells (hh everywhere, d_lambda 0.1, Ra 100) in a ring.

    Cell i's soma (threshold 10 mV) drives an ExpSyn (τ 2 ms, e 0) at cell (i+1) mod n's
    soma with ``weight`` [µS] and ``delay`` [ms]; a NetStim (one spike at 5 ms) kicks
    cell 0's ExpSyn with the same weight and delay 0. Records v at every soma and every
    ExpSyn's g; sources 0..n-1 are the cells, n the NetStim.
    """
    path = os.fspath(path or REAL / "ko20x-07.CNG.swc")
    cells = [{"morphology": path, "d_lambda": 0.1, "ra": 100.0, "cm": 1.0,
              "mechanisms": [{"name": "hh", "region": "all", "params": {}}],
              "point_processes": [{"kind": "ExpSyn", "location": "soma[0](0.5)",
                                   "params": {"tau": 2.0, "e": 0.0}}]} for _ in range(n)]
    sources = [{"cell": i, "location": "soma[0](0.5)", "threshold": 10.0} for i in range(n)]
    sources.append({"net_stim": {"start": 5.0, "interval": 10.0, "number": 1}})
    connections = [{"source": i, "target": [(i + 1) % n, 0], "weight": weight, "delay": delay}
                   for i in range(n)]
    connections.append({"source": n, "target": [0, 0], "weight": weight, "delay": 0.0})
    records = [{"key": f"v@{i}", "variable": "v", "cell": i, "location": "soma[0](0.5)"}
               for i in range(n)]
    records += [{"key": f"g@{i}", "variable": "g", "target": [i, 0]} for i in range(n)]
    return {"cells": cells, "sources": sources, "connections": connections, "records": records,
            "dt": 0.025, "tstop": tstop, "celsius": 6.3, "v_init": -65.0, "usetable": usetable}


def long_firing_model(path=None, *, usetable: int = 1, tstop: float = 1000.0,
                      distal: str | None = None) -> dict:
    """hh everywhere (d_lambda 0.1, Ra 100) with IClamp 1 nA from 5 ms to the end of the run.

    v at soma[0](0.5) (and ``distal``) is recorded every 4th step (0.1 ms).
    """
    record = ("soma[0](0.5)",) if distal is None else ("soma[0](0.5)", distal)
    model = hh_cell_model(path or REAL / "c91662.swc", usetable=usetable, dur=tstop,
                          tstop=tstop, record=record)
    for rec in model["records"]:
        rec["every"] = 4
    return model


def cylinder_model(*, length: float = 20.0, diam: float = 20.0, usetable: int = 1,
                   amp: float = 0.5, delay: float = 0.0, dur: float = 1.0, tstop: float = 0.1,
                   ra: float = 35.4, states=("m_hh", "h_hh", "n_hh", "ina")) -> dict:
    """One section ``soma[0]`` set by ``L`` and ``diam`` (no 3-D points), nseg 1, hh, IClamp.

    NEURON only (hinesbatch reads morphologies from files; :func:`cylinder_swc` gives the
    Import3d equivalent, whose ``ri`` differs in the last bit). Records v, ``states`` and
    the clamp's ``i`` at soma[0](0.5).
    """
    model = hh_cell_model("soma.swc", usetable=usetable, d_lambda=None, ra=ra, amp=amp,
                          delay=delay, dur=dur, tstop=tstop, states=states)
    model["cells"][0].update(morphology={"cylinder": {"L": length, "diam": diam}}, nseg=1)
    model["records"].append({"key": "i@IClamp[0]", "variable": "i", "target": [0, 0]})
    return model


#: Delays [ms] of the NetCons from the NetStim spike at 20 ms in :func:`events_model`.
EVENT_DELAYS = (0.0, 0.0124, 0.0125, 0.0126, 0.025, 1.0)
#: Delays [ms] of the NetCons from the soma's threshold in :func:`events_model`.
THRESHOLD_DELAYS = (0.0, 0.0125, 1.0)


def events_model(path, *, usetable: int = 1, tstop: float = 30.0) -> dict:
    """Event delivery at its ties, on one hh compartment (``path``: a one-point soma SWC).

    hh, nseg 1, Ra 35.4, IClamp 0.5 nA 1–30 ms, dt 0.025, ``tstop`` ms. At soma[0](0.5):

    - ExpSyn k (τ 2 ms, e 0), k < 6, gets the NetStim spike at 20 ms (source 1) through a
      NetCon of delay ``EVENT_DELAYS[k]``, weight 1e-4 µS;
    - ExpSyn 6 gets a NetStim spike at 3.0125 ms (source 2) with delay 0;
    - ExpSyn 7 + j gets the soma's own 10 mV threshold spikes (source 0) with delay
      ``THRESHOLD_DELAYS[j]``;
    - Exp2Syn 10 (0.5/5 ms) gets the spike at 20 ms twice with delay 1: weights 1e-4 and
      3e-4 µS, two events at one time.

    So eleven point processes share one node. Records v and every synapse's g (and the
    Exp2Syn's A and B) every step.
    """
    syn = {"kind": "ExpSyn", "location": "soma[0](0.5)", "params": {"tau": 2.0, "e": 0.0}}
    pps = [{"kind": "IClamp", "location": "soma[0](0.5)",
            "params": {"delay": 1.0, "dur": 29.0, "amp": 0.5}}]
    pps += [copy.deepcopy(syn) for _ in range(len(EVENT_DELAYS) + 1 + len(THRESHOLD_DELAYS))]
    pps.append({"kind": "Exp2Syn", "location": "soma[0](0.5)",
                "params": {"tau1": 0.5, "tau2": 5.0, "e": 0.0}})
    connections = [{"source": 1, "target": [0, 1 + k], "weight": 1e-4, "delay": d}
                   for k, d in enumerate(EVENT_DELAYS)]
    connections.append({"source": 2, "target": [0, 1 + len(EVENT_DELAYS)], "weight": 1e-4,
                        "delay": 0.0})
    first = 2 + len(EVENT_DELAYS)
    connections += [{"source": 0, "target": [0, first + j], "weight": 1e-4, "delay": d}
                    for j, d in enumerate(THRESHOLD_DELAYS)]
    last = len(pps) - 1
    connections += [{"source": 1, "target": [0, last], "weight": w, "delay": 1.0}
                    for w in (1e-4, 3e-4)]
    records = [{"key": "v", "variable": "v", "cell": 0, "location": "soma[0](0.5)"}]
    records += [{"key": f"g@ExpSyn[{k - 1}]", "variable": "g", "target": [0, k]}
                for k in range(1, last)]
    records += [{"key": f"{var}@Exp2Syn", "variable": var, "target": [0, last]}
                for var in ("A", "B", "g")]
    return {
        "cells": [{"morphology": os.fspath(path), "nseg": 1, "ra": 35.4, "cm": 1.0,
                   "mechanisms": [{"name": "hh", "region": "all", "params": {}}],
                   "point_processes": pps}],
        "sources": [{"cell": 0, "location": "soma[0](0.5)", "threshold": 10.0},
                    {"net_stim": {"start": 20.0, "interval": 10.0, "number": 1}},
                    {"net_stim": {"start": 3.0125, "interval": 10.0, "number": 1}}],
        "connections": connections, "records": records,
        "dt": 0.025, "tstop": tstop, "celsius": 6.3, "v_init": -65.0, "usetable": usetable,
    }


def cylinder_swc(directory, *, length: float = 20.0) -> Path:
    """A one-point soma SWC: Import3d makes it one cylinder with L = diam = ``length`` µm."""
    path = Path(directory) / f"cylinder_{length:g}.swc"
    path.write_text(f"# one-point soma\n1 1 0 0 0 {length / 2!r} -1\n")
    return path


def distal_location(geometry) -> str:
    """The segment farthest (path length) from ``soma[0](0.5)``, as ``"sec(x)"``.

    ``geometry`` is a ``hinesbatch`` ``CellGeometry``; distances are along sections from the
    root section's centre (its x = 0.5 when it is a soma, else its x = 0). Ties go to the
    earlier section.
    """
    names = geometry.section_names
    length = np.asarray(geometry.length_um, dtype=float)
    parent = np.asarray(geometry.section_parent)
    parent_x = np.asarray(geometry.section_parent_x, dtype=float)
    start = np.zeros(len(names))  # distance of each section's x = 0 from the reference
    root_ref = {}
    for k in range(len(names)):  # parents come before children in CellGeometry
        p = int(parent[k])
        if p < 0:
            ref = 0.5 if names[k].startswith("soma") else 0.0
            root_ref[k] = ref
            start[k] = -ref * length[k]  # signed; |.| taken per point below
        else:
            start[k] = _dist(start, root_ref, length, p, parent_x[k])
    best, best_d = None, -1.0
    for k, name in enumerate(names):
        n = int(geometry.nseg[k])
        x = (n - 0.5) / n
        d = _dist(start, root_ref, length, k, x)
        if d > best_d:
            best, best_d = (name, x), d
    return format_location(*best)


def _dist(start, root_ref, length, k, x):
    if k in root_ref:
        return abs(x - root_ref[k]) * length[k]
    return start[k] + x * length[k]


# --------------------------------------------------------------------------- NEURON side

def run_models(models: list[dict], *, timeout: float = 600.0) -> list[dict]:
    """Run every model in NEURON, one after the other in one fresh Python process.

    Each model starts from a clean NEURON (all sections, point processes, NetCons and
    NetStims of the previous one deleted). Returns one result per model (module docstring).
    """
    with tempfile.TemporaryDirectory(prefix="hb-neuron-") as tmp:
        spec = Path(tmp) / "models.json"
        out = Path(tmp) / "results.npz"
        spec.write_text(json.dumps(models))
        code = ("import sys; sys.path.insert(0, sys.argv[1]); import neuron_active; "
                "neuron_active._worker(sys.argv[2], sys.argv[3])")
        env = dict(os.environ, MPLBACKEND="Agg")
        proc = subprocess.run([sys.executable, "-c", code, str(HERE), str(spec), str(out)],
                              capture_output=True, text=True, timeout=timeout, env=env,
                              check=False)
        if proc.returncode != 0 or not out.exists():
            raise RuntimeError(f"NEURON worker failed (exit {proc.returncode}):\n"
                               f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        with np.load(out, allow_pickle=False) as data:
            return _unpack(data)


def run_model(model: dict, **kwargs) -> dict:
    """:func:`run_models` for one model."""
    return run_models([model], **kwargs)[0]


def _worker(spec_path: str, out_path: str) -> None:
    models = json.loads(Path(spec_path).read_text())
    h = _load_neuron()
    results = []
    for model in models:
        try:
            results.append(_run_neuron(h, model))
        except RuntimeError as exc:  # NEURON's refusals (hoc_execerror) arrive as these
            results.append({"error": f"{type(exc).__name__}: {exc}"})
        _clear(h)
    np.savez(out_path, **_pack(results))


def _pack(results: list[dict]) -> dict:
    arrays = {}
    meta = []
    for m, res in enumerate(results):
        meta.append({"error": res.get("error"), "nseg": res.get("nseg", {}),
                     "traces": list(res.get("traces", {})),
                     "spikes": list(res.get("spikes", {}))})
        if res.get("error") is not None:
            continue
        arrays[f"{m}/t"] = res["t"]
        for j, key in enumerate(res["traces"]):
            arrays[f"{m}/trace/{j}"] = res["traces"][key]
            arrays[f"{m}/time/{j}"] = res["times"][key]
        for j, key in enumerate(res["spikes"]):
            arrays[f"{m}/spikes/{j}"] = res["spikes"][key]
    arrays["meta"] = np.array(json.dumps(meta))
    return arrays


def _unpack(data) -> list[dict]:
    out = []
    for m, meta in enumerate(json.loads(str(data["meta"]))):
        res = {"error": meta["error"], "nseg": {int(c): v for c, v in meta["nseg"].items()},
               "t": np.empty(0), "traces": {}, "times": {}, "spikes": {}}
        if meta["error"] is None:
            res["t"] = data[f"{m}/t"]
            for j, key in enumerate(meta["traces"]):
                res["traces"][key] = data[f"{m}/trace/{j}"]
                res["times"][key] = data[f"{m}/time/{j}"]
            for j, key in enumerate(meta["spikes"]):
                res["spikes"][key] = data[f"{m}/spikes/{j}"]
        out.append(res)
    return out


def _load_neuron():
    from neuron import h

    h.load_file("stdlib.hoc")
    h.load_file("import3d.hoc")
    h.load_file("stdrun.hoc")
    h(_TEMPLATE)
    return h


def _clear(h) -> None:
    for sec in list(h.allsec()):
        h.delete_section(sec=sec)


def _instantiate(h, path: str):
    """One cell through Import3d into a hoc template object (NEURON's ``%.8g`` path).

    Returns the object and its sections by plain name (``"soma[0]"``). Only the sections of
    the cell are returned (those with 3-D points): the template's unused placeholder
    sections stay unconnected roots without mechanisms, which touch nothing.
    """
    obj = h.HinesbatchCell()
    if isinstance(path, dict):  # {"cylinder": {"L": .., "diam": ..}}: soma[0], no 3-D points
        sec = obj.soma[0]
        sec.L, sec.diam = path["cylinder"]["L"], path["cylinder"]["diam"]
        return obj, {"soma[0]": sec}
    reader = h.Import3d_SWC_read()
    reader.quiet = 1
    reader.input(os.fspath(path))
    gui = h.Import3d_GUI(reader, False)
    gui.instantiate(obj)
    prefix = obj.hname() + "."
    return obj, {sec.name()[len(prefix):]: sec for sec in h.allsec()
                 if sec.name().startswith(prefix) and sec.n3d() > 0}


def _region_sections(sections: dict, region) -> list:
    regions = [region] if isinstance(region, str) else list(region)
    chosen = []
    for name, sec in sections.items():
        kind = name.split("[", 1)[0]
        if any(r == "all" or r == kind or r == name for r in regions):
            chosen.append(sec)
    unknown = [r for r in regions if r != "all" and r not in sections
               and not any(n.split("[", 1)[0] == r for n in sections)]
    if unknown:
        raise ValueError(f"region(s) {unknown} match no section")
    return chosen


def _run_neuron(h, model: dict) -> dict:
    h.celsius = model.get("celsius", 6.3)
    h.usetable_hh = int(model.get("usetable", 1))
    keep = []  # every NEURON object must live until the run ends
    cells, pps = [], []
    nseg_report = {}
    for gid, cell in enumerate(model["cells"]):
        obj, sections = _instantiate(h, cell["morphology"])
        keep.append(obj)
        for sec in sections.values():
            sec.Ra = cell.get("ra", 35.4)
            sec.cm = cell.get("cm", 1.0)
        if cell.get("d_lambda") is not None:
            for sec in sections.values():
                lam = h.lambda_f(D_LAMBDA_FREQ, sec=sec)
                sec.nseg = int((sec.L / (cell["d_lambda"] * lam) + 0.9) / 2) * 2 + 1
        else:
            for sec in sections.values():
                sec.nseg = int(cell.get("nseg") or 1)
        for mech in cell.get("mechanisms", []):
            for sec in _region_sections(sections, mech.get("region", "all")):
                sec.insert(mech["name"])
                for seg in sec:
                    for pname, value in mech.get("params", {}).items():
                        setattr(seg, pname, value)
        cell_pps = []
        for pp in cell.get("point_processes", []):
            name, x = parse_location(pp["location"])
            obj_pp = getattr(h, pp["kind"])(sections[name](x))
            for pname, value in pp.get("params", {}).items():
                setattr(obj_pp, _PP_ATTR.get(pname, pname), value)
            cell_pps.append(obj_pp)
        cells.append(sections)
        pps.append(cell_pps)
        nseg_report[gid] = {name: int(sec.nseg) for name, sec in sections.items()}

    stims = {}
    for k, src in enumerate(model.get("sources", [])):
        if "net_stim" in src:
            ns = h.NetStim()
            p = {"start": 50.0, "interval": 10.0, "number": 10, **src["net_stim"]}
            ns.start, ns.interval, ns.number, ns.noise = (p["start"], p["interval"],
                                                          p["number"], 0.0)
            stims[k] = ns
            keep.append(ns)

    def netcon(k, target):
        src = model["sources"][k]
        if k in stims:
            return h.NetCon(stims[k], target)
        name, x = parse_location(src["location"])
        sec = cells[src["cell"]][name]
        nc = h.NetCon(sec(x)._ref_v, target, sec=sec)
        nc.threshold = src.get("threshold", 10.0)
        return nc

    for con in model.get("connections", []):
        gid, index = con["target"]
        nc = netcon(con["source"], pps[gid][index])
        nc.weight[0] = con.get("weight", 0.0)
        nc.delay = con.get("delay", 1.0)
        keep.append(nc)
    spike_vecs = {}
    for k in range(len(model.get("sources", []))):
        nc = netcon(k, None)  # its record() call comes last, so this vector fills
        vec = h.Vector()
        nc.record(vec)
        keep.append(nc)
        spike_vecs[str(k)] = vec

    rec_vecs = {}
    for rec in model.get("records", []):
        var = rec["variable"]
        if "target" in rec:
            gid, index = rec["target"]
            ref = getattr(pps[gid][index], f"_ref_{var}")
        else:
            name, x = parse_location(rec["location"])
            ref = getattr(cells[rec.get("cell", 0)][name](x), f"_ref_{var}")
        rec_vecs[rec["key"]] = (h.Vector().record(ref), int(rec.get("every", 1)))
    t_vec = h.Vector().record(h._ref_t)

    dt = float(model.get("dt", 0.025))
    h.dt = dt
    h.steps_per_ms = 1.0 / dt  # else stdrun's setdt() may change dt
    h.secondorder = 0
    h.finitialize(model.get("v_init", -65.0))
    h.continuerun(model["tstop"])
    if h.dt != dt:
        raise RuntimeError(f"NEURON changed dt to {h.dt}")
    t = np.array(t_vec)
    result = {"error": None, "t": t, "traces": {}, "times": {}, "nseg": nseg_report,
              "spikes": {k: np.array(v) for k, v in spike_vecs.items()}}
    for key, (vec, every) in rec_vecs.items():
        result["traces"][key] = np.array(vec)[::every]
        result["times"][key] = t[::every]
    if model.get("rates_at"):
        # hh's PROCEDURE rates(v) at the given voltages (the table when usetable_hh = 1)
        # sets the range variables minf_hh, mtau_hh, ... of the instance setdata_hh names
        sec = next(sec for sec in cells[0].values() if sec.has_membrane("hh"))
        volts = [float(v) for v in model["rates_at"]]
        names = ("minf", "mtau", "hinf", "htau", "ninf", "ntau")
        table = {name: [] for name in names}
        h.setdata_hh(sec(0.5))
        for v in volts:
            h.rates_hh(v)
            for name in names:
                table[name].append(getattr(sec(0.5), f"{name}_hh"))
        for name in names:
            result["traces"][f"rates/{name}"] = np.array(table[name])
            result["times"][f"rates/{name}"] = np.array(volts)
    del keep
    return result


# --------------------------------------------------------------------------- hinesbatch side

def hinesbatch_simulation(model: dict, *, backend: str = "serial"):
    """Build ``model`` with hinesbatch's public API (``hb.Cell``, ``hb.Simulation``).

    Returns ``(sim, cells, record_keys, spike_keys)``: the ``hb.Cell`` objects by gid;
    ``record_keys[key]`` is the key ``sim.record`` returned for the model's record ``key``;
    ``spike_keys[str(k)]`` the key of source ``k``'s spikes.
    """
    import hinesbatch as hb

    cells, pps = [], []
    for cell in model["cells"]:
        if not isinstance(cell["morphology"], (str, os.PathLike)):
            raise TypeError(f"hinesbatch reads morphologies from files, not "
                            f"{cell['morphology']!r}: write an SWC (cylinder_swc)")
        kwargs = {"ra": cell.get("ra", 35.4), "cm": cell.get("cm", 1.0)}
        if cell.get("d_lambda") is not None:
            kwargs["d_lambda"] = cell["d_lambda"]
        else:
            kwargs["nseg"] = cell.get("nseg") or 1
        c = hb.Cell(cell["morphology"], **kwargs)
        for mech in cell.get("mechanisms", []):
            c.insert(mech["name"], mech.get("region", "all"), **mech.get("params", {}))
        pps.append([c.place(pp["kind"], pp["location"], **pp.get("params", {}))
                    for pp in cell.get("point_processes", [])])
        cells.append(c)
    sim = hb.Simulation(cells, dt=model.get("dt", 0.025), celsius=model.get("celsius", 6.3),
                        v_init=model.get("v_init", -65.0), backend=backend,
                        tables=bool(model.get("usetable", 1)))
    sources = []
    for src in model.get("sources", []):
        if "net_stim" in src:
            sources.append(sim.net_stim(noise=0.0, **src["net_stim"]))
        else:
            sources.append(sim.spike_source(src["cell"], src["location"],
                                            threshold=src.get("threshold", 10.0)))
    for con in model.get("connections", []):
        gid, index = con["target"]
        sim.connect(sources[con["source"]], pps[gid][index], weight=con.get("weight", 0.0),
                    delay=con.get("delay", 1.0))
    record_keys = {}
    for rec in model.get("records", []):
        every = int(rec.get("every", 1))
        if "target" in rec:
            gid, index = rec["target"]
            record_keys[rec["key"]] = sim.record(rec["variable"], target=pps[gid][index],
                                                 every=every)
        else:
            record_keys[rec["key"]] = sim.record(rec["variable"], cell=rec.get("cell", 0),
                                                 location=rec["location"], every=every)
    spike_keys = {str(k): sim.record_spikes(src) for k, src in enumerate(sources)}
    return sim, cells, record_keys, spike_keys


def run_hinesbatch(model: dict, *, backend: str = "serial") -> dict:
    """Run ``model`` in hinesbatch; the result has the layout of :func:`run_models`'s
    (``nseg`` from each cell's ``geometry``)."""
    sim, cells, record_keys, spike_keys = hinesbatch_simulation(model, backend=backend)
    res = sim.run(model["tstop"])
    nseg = {gid: dict(zip(c.geometry.section_names, np.asarray(c.geometry.nseg).tolist()))
            for gid, c in enumerate(cells)}
    return {"error": None, "nseg": nseg, "t": np.asarray(res.t, dtype=float),
            "traces": {k: np.asarray(res[v], dtype=float) for k, v in record_keys.items()},
            "times": {k: np.asarray(res.time(v), dtype=float) for k, v in record_keys.items()},
            "spikes": {k: np.asarray(res.spikes[v], dtype=float) for k, v in spike_keys.items()}}


def simulator_missing() -> str | None:
    """Why hinesbatch cannot run active models here, or None when it can."""
    try:
        import hinesbatch as hb
    except ImportError as exc:
        return f"hinesbatch is not importable ({type(exc).__name__}: {exc})"
    missing = [name for name in ("Cell", "Simulation") if not hasattr(hb, name)]
    if missing:
        return (f"hinesbatch has no {' and no '.join(missing)}: the active-membrane simulator "
                "is not part of this build")
    return None


def max_abs_diff(a, b) -> float:
    """max |a - b| over equal-length float arrays (NaN anywhere counts as inf)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise AssertionError(f"shapes differ: {a.shape} vs {b.shape}")
    if a.size == 0:
        return 0.0
    d = np.abs(a - b)
    return math.inf if np.isnan(d).any() else float(d.max())
