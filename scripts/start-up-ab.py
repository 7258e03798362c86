#!/usr/bin/env python3
"""Time the phases of a whole ``hinesbatch simulate`` command for versions side by side.

    python3 scripts/start-up-ab.py NAME=SRC_DIR [NAME=SRC_DIR ...] [--rounds 10] [--neuron]
        [--out rows.json]

Each SRC_DIR holds a ``hinesbatch`` package (for example ``git archive REV src | tar -x -C
DIR``, then ``DIR/src``). The command is the one ``hinesbatch bench sim`` times (c91662.swc,
hh everywhere, d_lambda 0.1, Ra 100, IClamp 1 nA 5-55 ms, dt 0.025 ms, 100 ms, ``--backend
serial``), run in a fresh interpreter per version, the versions in turn, ``--rounds`` times
after one untimed round that fills the caches. Inside the process, wrappers time the
imports, discretization (where the first kernel is loaded), initialization, stepping and
writing; outside, the wall and CPU time of the whole process, which the version's program
ends as it does (``console_main`` where there is one). CPU time suffers less than wall time
from other work on the machine. ``--neuron`` adds NEURON's script of
the same model (:func:`hinesbatch.bench.neuron_models.neuron_script`) to each round. The
table gives the minimum of each phase over the rounds [ms]: on a shared machine the
minimum is the least disturbed run (docs/decisions/020-start-up-time.md).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SWC = ROOT / "tests" / "data" / "morphologies" / "real" / "c91662.swc"
ARGS = ["simulate", str(SWC), "--mechanism", "hh", "--d-lambda", "0.1", "--ra", "100.0",
        "--cm", "1.0", "--iclamp", "1.0,5.0,50.0", "--dt", "0.025", "--v-init", "-65.0",
        "--tstop", "100.0", "--backend", "serial"]

# Runs in the child: times phases by wrapping functions that every version has.
_CHILD = r"""
import atexit, json, sys, time
T0 = time.perf_counter()
ph = {}
def add(label, t):
    ph[label] = ph.get(label, 0.0) + time.perf_counter() - t
t = time.perf_counter(); import numpy; add("import numpy", t)
t = time.perf_counter(); import hinesbatch; add("import hinesbatch (Numba, discretize)", t)
t = time.perf_counter()
import hinesbatch.cli as cli, hinesbatch.sim.command
add("import cli, simulate command", t)
t = time.perf_counter()
import hinesbatch.engine, hinesbatch.model, hinesbatch.sim.command_active
add("import engine, model, mechanisms", t)
import hinesbatch.engine.results as R, hinesbatch.engine.simulation as S
import hinesbatch.model.cell as C
def wrap(owner, name, label):
    f = getattr(owner, name)
    def w(*a, **kw):
        t = time.perf_counter()
        try:
            return f(*a, **kw)
        finally:
            add(label, t)
    setattr(owner, name, w)
wrap(cli, "build_parser", "argument parser")
prop = C.Cell.__dict__["geometry"]
getter = getattr(prop, "func", None) or prop.fget
def geometry(self):
    if "_timed_geometry" not in self.__dict__:
        t = time.perf_counter()
        self.__dict__["_timed_geometry"] = getter(self)
        add("discretize (first kernel load)", t)
    return self.__dict__["_timed_geometry"]
C.Cell.geometry = property(geometry)
wrap(S.Simulation, "_initialize", "finitialize (kernel module)")
wrap(S.Simulation, "_run_cpu", "stepping")
wrap(R.Results, "save", "write .npz")
main = cli.main
def timed_main(argv=None):
    t = time.perf_counter()
    status = main(argv)
    inner = sum(v for k, v in ph.items() if not k.startswith("import"))
    ph["rest (SWC, cell, layout, checks, summary)"] = time.perf_counter() - t - inner
    ph["in-process total"] = time.perf_counter() - T0
    assert status == 0, status
    return status
cli.main = timed_main
atexit.register(lambda: print("PHASES " + json.dumps(ph)))
sys.argv = ["hinesbatch", *sys.argv[1:]]
if hasattr(cli, "console_main"):  # the program as the version ends it
    cli.console_main()
sys.exit(cli.main())
"""


def _run(argv, env) -> tuple[float, float, dict]:
    before, start = os.times(), time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    wall, after = time.perf_counter() - start, os.times()
    cpu = (after.children_user - before.children_user
           + after.children_system - before.children_system)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:3])} ... failed:\n{proc.stderr[-2000:]}")
    phases = {}
    for line in proc.stdout.splitlines():
        if line.startswith("PHASES "):
            phases = json.loads(line[len("PHASES "):])
    return wall, cpu, phases


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("versions", nargs="+", metavar="NAME=SRC_DIR")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--neuron", action="store_true", help="NEURON's script in each round")
    parser.add_argument("--out", help="write every run's numbers here (JSON)")
    args = parser.parse_args(argv)
    versions = dict(v.split("=", 1) for v in args.versions)
    tmp = tempfile.mkdtemp(prefix="start-up-ab-")
    runs = {}
    for name, src in versions.items():
        env = dict(os.environ, PYTHONPATH=os.path.abspath(src))
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: bytecode cached
        runs[name] = ([sys.executable, "-c", _CHILD, *ARGS, "--out",
                       os.path.join(tmp, f"{name}.npz")], env)
    if args.neuron:
        sys.path.insert(0, os.path.abspath(next(iter(versions.values()))))
        from hinesbatch.bench.neuron_models import neuron_script
        from hinesbatch.bench.sim import PROTOCOL

        script = os.path.join(tmp, "neuron_hh.py")
        Path(script).write_text(neuron_script(SWC, PROTOCOL, tstop=100.0,
                                              out=os.path.join(tmp, "neuron.npz")))
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        runs["NEURON"] = ([sys.executable, script], env)
    rows = {name: [] for name in runs}
    for k in range(args.rounds + 1):  # round 0 fills the caches: not counted
        for name, (cmd, env) in runs.items():
            wall, cpu, phases = _run(cmd, env)
            if k:
                rows[name].append({**phases, "process wall time": wall,
                                   "process CPU time (user + system)": cpu})
    keys = list(dict.fromkeys(key for r in rows.values() for row in r for key in row))
    print(f"{'minimum of ' + str(args.rounds) + ' rounds [ms]':44s}"
          + "".join(f"{name:>12s}" for name in rows))
    for key in keys:
        cells = [min((row[key] for row in r if key in row), default=None)
                 for r in rows.values()]
        print(f"{key:44s}" + "".join("           -" if c is None else f"{1e3 * c:12.1f}"
                                     for c in cells))
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
