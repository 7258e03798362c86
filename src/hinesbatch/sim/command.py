"""``hinesbatch simulate``: a cell driven by current clamps, traces to ``.npz`` (and plots).

Without ``--mechanism`` the cell is passive, a thin layer over
:func:`hinesbatch.sim.simulate_passive` (``docs/simulation.md``); with ``--mechanism`` it is
built as :class:`hinesbatch.Cell` and run by :class:`hinesbatch.Simulation`
(:mod:`hinesbatch.sim.command_active`). Output files are written to a temporary file in the
target folder and renamed over the target only when complete, so an interrupted or failing
write never damages an earlier file; the folders and the plot are checked before the
simulation starts.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import sys

import numpy as np

from ..io.atomic import atomic_write, check_writable, remove_file, temporary_file
from .cli_options import (DEFAULT_LOCATION, SPIKE_THRESHOLD_MV, USER_ERRORS, ClampOption,
                          RecordOption, check_disk, fail, npz_path, one_line, plot_path)
from .passive import DEFAULT_ICLAMP, DEFAULT_TSTOP, NEURON_DEFAULTS, simulate_passive
from .stimuli import parse_location

__all__ = ["configure", "run", "write_npz"]

DESCRIPTION = """\
Simulate a cell driven by current clamps with NEURON's fixed-step backward Euler, and save
the recorded traces.

Without --mechanism the cell is passive (NEURON's pas everywhere, --g-pas, --e-pas) with one
clamp and v recorded at one location. With --mechanism NAME (repeatable) exactly the named
mechanisms are inserted in every section with NEURON's default parameters, as NEURON's
'forall insert NAME': --mechanism hh is NEURON's hh, --mechanism pas --mechanism hh adds the
leak. Then several --iclamp and --record (any state or current, e.g. m_hh or ina) are
allowed, and --spikes records the soma's spikes.

The cell is an SWC file (default: the bundled c91662.swc), discretized as NEURON does
(--nseg or --d-lambda). Without --mechanism the output is an .npz file holding t [ms], v [mV]
(one row per cell) and params (every parameter used, as JSON); with --mechanism it holds
every recording by key (e.g. 'v@0:soma[0](0.5)' is v of cell 0), its sample times and
units, the spike times and the run's details (see hinesbatch.load_results)."""

EPILOG = """\
examples:
  hinesbatch simulate --out traces.npz
  hinesbatch simulate cell.swc --d-lambda 0.1 --tstop 500 --iclamp 0.2,50,300 \\
      --record 'dend[12](0.5)' --out traces.npz --plot traces.png
  hinesbatch simulate cell.swc --cells 10000 --tstop 10000 --record-every 40 --stream \\
      --out big.npz
  hinesbatch simulate cell.swc --mechanism hh --d-lambda 0.1 --ra 100 --iclamp 1,5,50 \\
      --record v --record 'm_hh@dend[3](0.5)' --spikes --out hh.npz --raster spikes.png

Long runs: the memory a run needs is checked before it starts. --record-every K keeps one
sample in K; --stream (passive model) writes the recordings to disk as the run goes instead
of holding them in memory.

exit status: 0 success, 1 error (one line on stderr), 2 bad arguments, 130 interrupted"""

_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_ICLAMP_FORM = "AMP_NA,DELAY_MS,DUR_MS[@SECTION(X)]"
_RECORD_FORM = "VAR[@SECTION(X)]"


def _iclamp(text: str) -> ClampOption:
    head, at, where = text.partition("@")
    parts = head.split(",")
    try:
        if len(parts) != 3:
            raise ValueError
        amp, delay, dur = (float(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected {_ICLAMP_FORM} (three numbers, e.g. 0.1,10,50 or "
            f"0.1,10,50@dend[3](0.5)), got {text!r}") from None
    if not all(math.isfinite(value) for value in (amp, delay, dur)):
        raise argparse.ArgumentTypeError(f"--iclamp {text!r}: the numbers must be finite")
    return ClampOption(amp, delay, dur, _location(where) if at else None)


def _record(text: str) -> RecordOption:
    """``VAR@SECTION(X)``, ``VAR`` (at the default location) or ``SECTION(X)`` (v there)."""
    variable, at, where = text.partition("@")
    variable = variable.strip()
    if not at and ("(" in variable or "[" in variable):
        return RecordOption("v", _location(variable))  # a location alone: v there
    if not _VARIABLE.match(variable):
        raise argparse.ArgumentTypeError(
            f"expected {_RECORD_FORM} (e.g. v, m_hh@soma[0](0.5) or 'dend[2](1)' for v "
            f"there), got {text!r}: {variable!r} is not a variable name")
    return RecordOption(variable, _location(where) if at else None)


def _location(text: str) -> tuple[str, float]:
    try:
        return parse_location(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _mechanism(text: str) -> str:
    name = text.strip()
    if not _VARIABLE.match(name):
        raise argparse.ArgumentTypeError(f"expected a mechanism name (e.g. hh), got {text!r}")
    return name


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``simulate``'s arguments to ``parser``."""
    d = NEURON_DEFAULTS
    amp, delay, dur = DEFAULT_ICLAMP
    parser.add_argument("swc", nargs="?", help="SWC file (default: the bundled c91662.swc)")
    parser.add_argument("--tstop", type=float, default=DEFAULT_TSTOP, metavar="MS",
                        help=f"end time [ms] (default {DEFAULT_TSTOP:g})")
    parser.add_argument("--dt", type=float, default=d["dt"], metavar="MS",
                        help=f"time step [ms] (default NEURON's {d['dt']:g})")
    parser.add_argument("--mechanism", action="append", type=_mechanism, metavar="NAME",
                        help="insert NAME in every section with NEURON's default parameters "
                             "(repeatable; e.g. hh, pas); without it the cell is passive")
    parser.add_argument("--iclamp", action="append", type=_iclamp, metavar=_ICLAMP_FORM,
                        help=f"current clamp: amplitude [nA], onset [ms], duration [ms] and "
                             f"where (default {amp:g},{delay:g},{dur:g} at --clamp; "
                             "repeatable with --mechanism)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--nseg", type=_positive_int, metavar="N",
                       help="segments per section (default NEURON's 1)")
    group.add_argument("--d-lambda", type=float, metavar="X",
                       help="choose nseg per section by NEURON's d_lambda rule (0.1 is usual)")
    parser.add_argument("--cm", type=float, default=d["cm"], metavar="UF_PER_CM2",
                        help=f"membrane capacitance [µF/cm²] (default {d['cm']:g})")
    parser.add_argument("--ra", type=float, default=d["ra"], metavar="OHM_CM",
                        help=f"axial resistivity [Ω·cm] (default {d['ra']:g})")
    parser.add_argument("--g-pas", type=float, metavar="S_PER_CM2",
                        help=f"leak conductance [S/cm²] of pas (default {d['g_pas']:g})")
    parser.add_argument("--e-pas", type=float, metavar="MV",
                        help=f"leak reversal [mV] of pas (default {d['e_pas']:g})")
    parser.add_argument("--v-init", type=float, default=d["v_init"], metavar="MV",
                        help=f"initial potential [mV] (default {d['v_init']:g})")
    parser.add_argument("--celsius", type=float, metavar="DEG_C",
                        help="temperature [°C] of the mechanisms (default NEURON's 6.3)")
    parser.add_argument("--no-tables", action="store_true",
                        help="compute hh's rates exactly instead of from its TABLE (NEURON's "
                             "usetable_hh = 0)")
    parser.add_argument("--cells", type=_positive_int, default=1, metavar="N",
                        help="simulate N identical copies as one batch (default 1)")
    parser.add_argument("--backend", default="auto",
                        help="backend: auto (default), serial, multicore, gpu; without "
                             "--mechanism also the other solver backends")
    parser.add_argument("--precision", choices=("float64", "float32"), default="float64",
                        help="with --mechanism and --backend gpu: float64 (default) or float32")
    parser.add_argument("--clamp", type=_location, default=DEFAULT_LOCATION,
                        metavar="SECTION(X)",
                        help="where a clamp without @SECTION(X) sits (default soma[0](0.5))")
    parser.add_argument("--record", action="append", type=_record, metavar=_RECORD_FORM,
                        help="record VAR (default v) at SECTION(X) (default soma[0](0.5)); "
                             "a bare SECTION(X) records v there; repeatable with --mechanism")
    parser.add_argument("--record-every", type=_positive_int, default=1, metavar="K",
                        help="record one sample every K steps (default 1: every step)")
    parser.add_argument("--spikes", action="store_true",
                        help="record the spike times of every cell at soma[0](0.5) "
                             f"(upward crossings of {SPIKE_THRESHOLD_MV:g} mV)")
    parser.add_argument("--stream", action="store_true",
                        help="write the recordings to a file beside --out as the run goes "
                             "instead of holding them in memory (for runs too long for memory; "
                             "passive model)")
    parser.add_argument("--out", required=True, metavar="TRACES.npz",
                        help="output file (.npz; '.npz' is appended when missing)")
    parser.add_argument("--plot", metavar="TRACES.png",
                        help="also plot the traces (needs matplotlib; the format follows the "
                             "extension, '.png' is appended when there is none)")
    parser.add_argument("--spikes-out", metavar="SPIKES.h5",
                        help="also write the spikes as a SONATA spike report (HDF5, needs "
                             "h5py; implies --spikes)")
    parser.add_argument("--raster", metavar="RASTER.png",
                        help="also plot the spikes as a raster (needs matplotlib; implies "
                             "--spikes)")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress bar on stderr (default: on long runs in a terminal)")
    parser.description = DESCRIPTION
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter


#: Exit status of a bad combination of arguments (argparse's).
EXIT_USAGE = 2
#: Options of mechanisms, meaningless for the passive model.
_ACTIVE_ONLY = (("celsius", "--celsius"), ("no_tables", "--no-tables"), ("spikes", "--spikes"),
                ("spikes_out", "--spikes-out"), ("raster", "--raster"))


def run(args: argparse.Namespace) -> int:
    """Run the simulation ``args`` describe; write the files; print a summary.

    Returns the exit status: 0, 1 with a one-line message on stderr, or 2 for options that
    do not go together. The output folder and the plot are checked before the run; on any
    failure or interruption no temporary file is left behind and an earlier file at
    ``--out`` is untouched.
    """
    clamps = [c if c.location else c._replace(location=args.clamp)
              for c in (args.iclamp or [ClampOption(*DEFAULT_ICLAMP)])]
    records = [r if r.location else r._replace(location=DEFAULT_LOCATION)
               for r in (args.record or [RecordOption("v")])]
    problem = _active_problem(args) if args.mechanism else _passive_problem(args, clamps, records)
    if problem:
        print(f"hinesbatch simulate: error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    if args.mechanism:
        from .command_active import run_active

        return run_active(args, clamps, records)
    return _run_passive(args, clamps[0], records[0])


def _passive_problem(args, clamps, records) -> str | None:
    """Why these options need ``--mechanism``, or None."""
    for attr, option in _ACTIVE_ONLY:
        if getattr(args, attr):
            return f"{option} needs --mechanism (without it the cell is passive)"
    if len(clamps) > 1:
        return ("the passive model takes one --iclamp; for several, insert the leak as a "
                "mechanism: --mechanism pas")
    if len(records) > 1 or records[0].variable != "v":
        return ("the passive model records v at one location; for several --record or other "
                "variables, insert the leak as a mechanism: --mechanism pas")
    return None


def _active_problem(args) -> str | None:
    """Why these options do not go with ``--mechanism``, or None."""
    if args.stream:
        return "--stream works for the passive model only (without --mechanism)"
    for value, option in ((args.g_pas, "--g-pas"), (args.e_pas, "--e-pas")):
        if value is not None and "pas" not in args.mechanism:
            return f"{option} sets a parameter of pas, which is not inserted: add --mechanism pas"
    return None


def _run_passive(args: argparse.Namespace, clamp: ClampOption, record: RecordOption) -> int:
    out = npz_path(args.out)
    try:
        plot = plot_path(args.plot) if args.plot else None
        for path in (out, plot):
            if path is not None:
                check_writable(path)
        check_disk(out, args)
    except USER_ERRORS as exc:
        return fail(one_line(exc))
    d = NEURON_DEFAULTS
    with contextlib.ExitStack() as cleanup:
        record_to = None
        if args.stream:
            record_to = temporary_file(out, ".v.npy")
            cleanup.callback(remove_file, record_to)
        try:
            result = simulate_passive(
                args.swc, tstop=args.tstop, dt=args.dt, iclamp=tuple(clamp[:3]),
                nseg=args.nseg, d_lambda=args.d_lambda, cm=args.cm, ra=args.ra,
                g_pas=d["g_pas"] if args.g_pas is None else args.g_pas,
                e_pas=d["e_pas"] if args.e_pas is None else args.e_pas, v_init=args.v_init,
                n_cells=args.cells, backend=args.backend, clamp=clamp.location,
                record=record.location, record_every=args.record_every,
                record_to=record_to, progress=args.progress,
            )
            write_npz(out, result)
            if plot is not None:
                _plot(result, plot)
        except USER_ERRORS as exc:
            return fail(one_line(exc))
        _summary(result, out, plot)
        del result  # close the memory map before its file is removed
    return 0


def write_npz(path: str | os.PathLike, result) -> str:
    """Save ``t`` (n_samples,) [ms], ``v`` (n_cells, n_samples) [mV] and ``params`` (a JSON
    string) to ``path`` (``.npz`` appended if missing), atomically: into a temporary file in
    the same folder, renamed over ``path`` once complete. Returns the path written."""
    path = npz_path(path)
    params = np.array(json.dumps(result.params))

    def write(tmp: str) -> None:
        with open(tmp, "wb") as f:
            np.savez(f, t=result.t, v=result.v, params=params)

    atomic_write(path, write)
    return path


#: Samples per trace drawn at most (longer traces are thinned evenly).
_PLOT_SAMPLES = 20_000


def _plot(result, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    p = result.params
    step = max(1, result.t.size // _PLOT_SAMPLES)
    fig, ax = plt.subplots(figsize=(7, 3.5), layout="constrained")
    try:
        ax.plot(result.t[::step], np.asarray(result.v[: min(8, result.v.shape[0]), ::step]).T, lw=1)
        rec = p["record"]
        ax.set(xlabel="t (ms)", ylabel=f"v at {rec['section']}({rec['x']:g}) (mV)",
               title=f"{os.path.basename(p['morphology'])}: passive, IClamp "
                     f"{p['iclamp']['amp_nA']:g} nA")
        fmt = os.path.splitext(path)[1][1:].lower()
        atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=120, format=fmt))
    finally:
        plt.close(fig)


def _summary(result, out: str, plot: str | None) -> None:
    p, info = result.params, result.info
    n_steps = p["n_steps"]
    cells = p["n_cells"]
    timed = (n_steps - 1) * info["n_nodes"] * cells
    rate = timed / info["loop_s"] if info["loop_s"] > 0 else float("nan")
    every = p["record_every"]
    samples = f"{result.t.size} samples" + (f", one every {every} steps" if every > 1 else "")
    lines = [
        f"cell:     {p['morphology']} ({info['n_sections']} sections, {info['n_nodes']} nodes"
        f"{f' x {cells} cells' if cells > 1 else ''})",
        f"run:      {n_steps} steps of {p['dt_ms']:g} ms to {result.t[-1] if every == 1 else p['tstop_ms']:g} ms; IClamp "
        f"{p['iclamp']['amp_nA']:g} nA from {p['iclamp']['delay_ms']:g} ms for "
        f"{p['iclamp']['dur_ms']:g} ms at {p['clamp']['section']}({p['clamp']['x']:g}); {samples}",
        f"backend:  {info['backend']}",
        f"time:     {info['loop_s']:.3f} s stepping ({rate / 1e6:.1f} M node-steps/s), "
        f"{info['first_step_s']:.3f} s first step (loading or compiling kernels), "
        f"{info['setup_s']:.3f} s set-up",
        f"v:        {result.v[0, 0]:.3f} -> {result.v[0, -1]:.3f} mV "
        f"(min {result.v.min():.3f}, max {result.v.max():.3f})",
        f"output:   {out}" + (f", {plot}" if plot else ""),
    ]
    print("\n".join(lines))
