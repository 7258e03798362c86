#!/usr/bin/env python3
"""Time versions of the GPU engine side by side, on the same GPU, in one run.

    python3 scripts/engine-ab.py NAME=SRC_DIR [NAME=SRC_DIR ...] [--cases CASE ...]
        [--rounds 2] [--out rows.json]

Each SRC_DIR holds a ``hinesbatch`` package (for example ``git archive REV src | tar -x -C
DIR``, then ``DIR/src``). Every case runs in a fresh Python process per version, the
versions in turn, ``--rounds`` times, so that clock and cache drift hits all of them alike;
the table gives each version's median seconds per run (``Results.meta["step_seconds"]``)
and its ratio to the first version. Cell 0's trace is compared with the serial CPU engine
(max |dV|), so that a faster version that computes something else is seen.

Cases (Jaxley's Fig. 2 cell, hh with exact rates, 800 steps; batches at d_lambda 0.1):
``fig2-N-fp64``, ``fig2-N-fp32`` (N cells), ``single-N`` and ``mixed-N`` (N cells of one
real morphology, or of all 17, float64; ``single-N-fp32``, ``mixed-N-fp32`` in float32).

``--phases`` adds, for the last version, runs with a phase of the step left out of the
kernel (``no-solve``: the Hines solve, only the diagonal divided out; ``no-membrane``: the
mechanisms' currents and states): timings of where a step's time goes, whose voltages are
of course wrong.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

DEFAULT_CASES = ("fig2-100-fp64", "fig2-1000-fp64", "fig2-1000-fp32", "fig2-10000-fp64",
                 "single-4000", "mixed-4000")

_CHILD = r"""
import json, re, sys, time
import numpy as np
import hinesbatch as hb
from hinesbatch.bench import _sim_gpu_work as work
from hinesbatch.engine.gpu import runner

kind, n, precision, phase = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
if phase != "all":
    whole = runner.kernel_source

    def cut(*args, **kwargs):
        text = whole(*args, **kwargs)
        if phase == "no-solve":
            a, b = text.index("/* 4. elimination"), text.index("/* 6. v, then")
            return (text[:a] + "for (int i = tid; i < n; i += nt) B[i] = B[i]/Dg[i];\n"
                    "        __syncthreads();\n        " + text[b:])
        text = re.sub(r"\b\w+_cur\(D_[^;]*;", "g = R(0.0); c = R(0.0);", text)
        return re.sub(r"\b\w+_state\(D_[^;]*;", ";", text)

    runner.kernel_source = cut
if kind == "fig2":
    path = work.real_morphologies([work.FIG2_MORPHOLOGY])[0]
    cells = work.fig2_cells(hb, path, work.amplitudes(n))
else:
    names = [work.BATCH_MORPHOLOGY] if kind == "single" else None
    cells = work.batch_cells(hb, work.real_morphologies(names), n)
sim = hb.Simulation(cells, dt=work.DT, celsius=work.CELSIUS, v_init=work.V_INIT,
                    backend="gpu", precision=precision, tables=False)
key = sim.record("v", cell=0, location=work.stimulus_location(cells[0]))
sim.run(work.tstop())
seconds = []
for _ in range(3):
    res = sim.run(work.tstop())
    seconds.append(res.meta["step_seconds"])
ref = hb.Simulation([cells[0]], dt=work.DT, celsius=work.CELSIUS, v_init=work.V_INIT,
                    backend="serial", tables=False)
rkey = ref.record("v", cell=0, location=work.stimulus_location(cells[0]))
dv = float(np.max(np.abs(np.asarray(res[key]) - np.asarray(ref.run(work.tstop())[rkey]))))
gpu = sim._gpu
kernel = gpu.kernels[id(gpu.parts[0].device)]
print("ROW " + json.dumps({"seconds": float(np.median(seconds)), "dv": dv,
                           "regs": int(kernel.num_regs), "local_bytes": int(kernel.local_size_bytes),
                           "describe": " / ".join(str(sim.describe()).splitlines())}))
"""


def _case(text: str) -> tuple[str, int, str]:
    parts = text.split("-")
    precision = {"fp64": "float64", "fp32": "float32"}[parts[2]] if len(parts) > 2 \
        else "float64"
    return parts[0], int(parts[1]), precision


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("versions", nargs="+", metavar="NAME=SRC_DIR")
    ap.add_argument("--cases", nargs="+", default=list(DEFAULT_CASES))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--phases", action="store_true",
                    help="also time the last version without the solve, and without the mechanisms")
    ap.add_argument("--out")
    ap.add_argument("--timeout", type=float, default=300.0, help="per child process [s]")
    args = ap.parse_args()
    versions = [(*v.split("=", 1), "all") for v in args.versions]
    if args.phases:
        name, src, _ = versions[-1]
        versions += [(f"{name}:{phase}", src, phase) for phase in ("no-solve", "no-membrane")]
    rows = []
    for case in args.cases:
        kind, n, precision = _case(case)
        times = {name: [] for name, _, _ in versions}
        info = {}
        for _ in range(args.rounds):
            for name, src, phase in versions:
                env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                    [os.path.abspath(src)] + [p for p in os.environ.get("PYTHONPATH", "")
                                              .split(os.pathsep) if p]))
                start = time.perf_counter()
                try:
                    out = subprocess.run([sys.executable, "-c", _CHILD, kind, str(n), precision,
                                          phase],
                                         env=env, capture_output=True, text=True,
                                         timeout=args.timeout, check=False)
                except subprocess.TimeoutExpired:
                    print(f"{case} {name}: timed out", flush=True)
                    continue
                line = next((ln for ln in out.stdout.splitlines() if ln.startswith("ROW ")), None)
                if line is None:
                    print(f"{case} {name}: failed\n{out.stderr[-2000:]}", flush=True)
                    continue
                row = json.loads(line[4:])
                times[name].append(row["seconds"])
                info[name] = row
                print(f"{case} {name}: {row['seconds']:.4f} s, max|dV| {row['dv']:.3g} mV, "
                      f"{row['regs']} registers, {row['local_bytes']} local bytes "
                      f"({time.perf_counter() - start:.0f} s)", flush=True)
        base = None
        for name, _, _ in versions:
            if not times[name]:
                continue
            t = sorted(times[name])[len(times[name]) // 2]
            base = base or t
            rows.append({"case": case, "version": name, "seconds": t, "vs_first": base / t,
                         "runs": times[name], "max_abs_dv_mV": info[name]["dv"],
                         "registers": info[name]["regs"],
                         "local_bytes": info[name]["local_bytes"],
                         "describe": info[name]["describe"]})
    print(f"\n{'case':16s} {'version':12s} {'seconds':>9s} {'speedup':>8s} {'max|dV|':>9s}")
    for r in rows:
        print(f"{r['case']:16s} {r['version']:12s} {r['seconds']:9.4f} {r['vs_first']:8.3f} "
              f"{r['max_abs_dv_mV']:9.2g}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
