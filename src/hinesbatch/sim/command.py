"""``hinesbatch simulate``: a passive cell with a current clamp, traces to ``.npz`` (and a plot).

A thin layer over :func:`hinesbatch.sim.simulate_passive`; see ``docs/simulation.md``.
Output files are written to a temporary file in the target folder and renamed over the
target only when complete, so an interrupted or failing write never damages an earlier file;
the folders and the plot are checked before the simulation starts.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile

import numpy as np

from ..errors import BackendUnavailableError, SingularSystemError
from .errors import NonFiniteStateError
from .memory import format_bytes
from .passive import DEFAULT_ICLAMP, DEFAULT_TSTOP, NEURON_DEFAULTS, simulate_passive
from .stimuli import MAX_STEPS, parse_location

__all__ = ["configure", "run", "write_npz", "npz_path"]

DESCRIPTION = """\
Simulate a passive cell (NEURON's pas mechanism everywhere) driven by a current clamp, with
NEURON's fixed-step backward Euler, and save the membrane potential at one location.

The cell is an SWC file (default: the bundled c91662.swc), discretized as NEURON does
(--nseg or --d-lambda). The output is an .npz file holding t [ms], v [mV] (one row per
cell) and params (every parameter used, as JSON)."""

EPILOG = """\
examples:
  hinesbatch simulate --out traces.npz
  hinesbatch simulate cell.swc --d-lambda 0.1 --tstop 500 --iclamp 0.2,50,300 \\
      --record 'dend[12](0.5)' --out traces.npz --plot traces.png
  hinesbatch simulate cell.swc --cells 10000 --tstop 10000 --record-every 40 --stream \\
      --out big.npz

Long runs: the memory a run needs is checked before it starts. --record-every K keeps one
sample in K; --stream writes the recordings to disk as the run goes instead of holding them
in memory.

exit status: 0 success, 1 error (one line on stderr), 2 bad arguments, 130 interrupted"""


def _iclamp(text: str) -> tuple[float, float, float]:
    parts = text.split(",")
    try:
        if len(parts) != 3:
            raise ValueError
        return tuple(float(p) for p in parts)  # type: ignore[return-value]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected AMP_NA,DELAY_MS,DUR_MS (three numbers, e.g. 0.1,10,50), got {text!r}"
        ) from None


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


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``simulate``'s arguments to ``parser``."""
    d = NEURON_DEFAULTS
    amp, delay, dur = DEFAULT_ICLAMP
    parser.add_argument("swc", nargs="?", help="SWC file (default: the bundled c91662.swc)")
    parser.add_argument("--tstop", type=float, default=DEFAULT_TSTOP, metavar="MS",
                        help=f"end time [ms] (default {DEFAULT_TSTOP:g})")
    parser.add_argument("--dt", type=float, default=d["dt"], metavar="MS",
                        help=f"time step [ms] (default NEURON's {d['dt']:g})")
    parser.add_argument("--iclamp", type=_iclamp, default=DEFAULT_ICLAMP,
                        metavar="AMP_NA,DELAY_MS,DUR_MS",
                        help=f"current clamp (default {amp:g},{delay:g},{dur:g})")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--nseg", type=_positive_int, metavar="N",
                       help="segments per section (default NEURON's 1)")
    group.add_argument("--d-lambda", type=float, metavar="X",
                       help="choose nseg per section by NEURON's d_lambda rule (0.1 is usual)")
    parser.add_argument("--cm", type=float, default=d["cm"], metavar="UF_PER_CM2",
                        help=f"membrane capacitance [µF/cm²] (default {d['cm']:g})")
    parser.add_argument("--ra", type=float, default=d["ra"], metavar="OHM_CM",
                        help=f"axial resistivity [Ω·cm] (default {d['ra']:g})")
    parser.add_argument("--g-pas", type=float, default=d["g_pas"], metavar="S_PER_CM2",
                        help=f"leak conductance [S/cm²] (default {d['g_pas']:g})")
    parser.add_argument("--e-pas", type=float, default=d["e_pas"], metavar="MV",
                        help=f"leak reversal [mV] (default {d['e_pas']:g})")
    parser.add_argument("--v-init", type=float, default=d["v_init"], metavar="MV",
                        help=f"initial potential [mV] (default {d['v_init']:g})")
    parser.add_argument("--cells", type=_positive_int, default=1, metavar="N",
                        help="simulate N identical copies as one batch (default 1)")
    parser.add_argument("--backend", default="auto",
                        help="solver backend: auto (default), serial, multicore, gpu, ...")
    parser.add_argument("--clamp", type=_location, default=("soma[0]", 0.5), metavar="SECTION(X)",
                        help="where the clamp sits (default soma[0](0.5))")
    parser.add_argument("--record", type=_location, default=("soma[0]", 0.5),
                        metavar="SECTION(X)", help="where v is recorded (default soma[0](0.5))")
    parser.add_argument("--record-every", type=_positive_int, default=1, metavar="K",
                        help="record one sample every K steps (default 1: every step)")
    parser.add_argument("--stream", action="store_true",
                        help="write the recordings to a file beside --out as the run goes "
                             "instead of holding them in memory (for runs too long for memory)")
    parser.add_argument("--out", required=True, metavar="TRACES.npz",
                        help="output file: t [ms], v [mV] (cells x samples), params (JSON); "
                             "'.npz' is appended when missing")
    parser.add_argument("--plot", metavar="TRACES.png",
                        help="also plot v(t) (needs matplotlib; the format follows the "
                             "extension, '.png' is appended when there is none)")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress bar on stderr (default: on long runs in a terminal)")
    parser.description = DESCRIPTION
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter


#: Errors reported as one line and exit status 1: bad input, unusable files, runs that
#: cannot be done here.
USER_ERRORS = (ValueError, TypeError, OSError, MemoryError, BackendUnavailableError,
               SingularSystemError, NonFiniteStateError)


def run(args: argparse.Namespace) -> int:
    """Run the simulation ``args`` describe; write the files; print a summary.

    Returns the exit status: 0, or 1 with a one-line message on stderr. The output folder
    and the plot are checked before the run; on any failure or interruption no temporary
    file is left behind and an earlier file at ``--out`` is untouched.
    """
    out = npz_path(args.out)
    try:
        plot = _plot_path(args.plot) if args.plot else None
        for path in (out, plot):
            if path is not None:
                _check_writable(path)
        _check_disk(out, args)
    except USER_ERRORS as exc:
        return _fail(_one_line(exc))
    with contextlib.ExitStack() as cleanup:
        record_to = None
        if args.stream:
            record_to = _temporary(out, ".v.npy")
            cleanup.callback(_remove, record_to)
        try:
            result = simulate_passive(
                args.swc, tstop=args.tstop, dt=args.dt, iclamp=args.iclamp, nseg=args.nseg,
                d_lambda=args.d_lambda, cm=args.cm, ra=args.ra, g_pas=args.g_pas,
                e_pas=args.e_pas, v_init=args.v_init, n_cells=args.cells, backend=args.backend,
                clamp=args.clamp, record=args.record, record_every=args.record_every,
                record_to=record_to, progress=args.progress,
            )
            write_npz(out, result)
            if plot is not None:
                _plot(result, plot)
        except USER_ERRORS as exc:
            return _fail(_one_line(exc))
        _summary(result, out, plot)
        del result  # close the memory map before its file is removed
    return 0


def npz_path(out: str | os.PathLike) -> str:
    """The file ``np.savez`` writes for ``out``: ``out`` with ``.npz`` appended if missing."""
    out = os.fspath(out)
    return out if out.endswith(".npz") else out + ".npz"


def write_npz(path: str | os.PathLike, result) -> str:
    """Save ``t`` (n_samples,) [ms], ``v`` (n_cells, n_samples) [mV] and ``params`` (a JSON
    string) to ``path`` (``.npz`` appended if missing), atomically: into a temporary file in
    the same folder, renamed over ``path`` once complete. Returns the path written."""
    path = npz_path(path)
    params = np.array(json.dumps(result.params))
    _atomic_write(path, lambda f: np.savez(f, t=result.t, v=result.v, params=params))
    return path


def _atomic_write(path: str, write) -> None:
    """``write(file)`` into a temporary file beside ``path``, then rename it to ``path``."""
    tmp = _temporary(path, ".tmp")
    try:
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        _remove(tmp)
        raise


def _temporary(path: str, suffix: str) -> str:
    """A new empty file in ``path``'s folder, hidden and named after ``path``."""
    folder, name = os.path.split(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=suffix, dir=folder)
    try:
        os.fchmod(fd, _new_file_mode())  # as open() would create it, not mkstemp's 0600
    finally:
        os.close(fd)
    return tmp


def _new_file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


def _check_writable(path: str) -> None:
    """``OSError`` naming ``path`` unless a file can be created in its folder."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise OSError(f"cannot write {path}: the folder {folder} does not exist")
    if os.path.isdir(path):
        raise OSError(f"cannot write {path}: it is a folder")
    try:
        _remove(_temporary(path, ".check"))
    except OSError as exc:
        raise OSError(f"cannot write {path}: {exc.strerror or exc} in {folder}") from None


def _check_disk(out: str, args) -> None:
    """``OSError`` when the output (and a streamed recording beside it) cannot fit on disk."""
    steps = max(0.0, args.tstop / args.dt) if args.dt > 0 else 0.0
    if not steps <= MAX_STEPS:  # refused by the simulation, with its own message
        return
    size = args.cells * (steps // args.record_every + 1) * 8
    size *= 2 if args.stream else 1  # the .npy and the .npz exist together at the end
    folder = os.path.dirname(os.path.abspath(out))
    free = shutil.disk_usage(folder).free
    if size > free:
        raise OSError(f"{out} would take about {format_bytes(size)} but {folder} has "
                      f"{format_bytes(free)} free; use fewer --cells, --record-every K or "
                      "another folder")


def _plot_path(plot: str) -> str:
    """The file the plot goes to (``.png`` appended without an extension), once matplotlib
    is known to be importable and to write that format."""
    try:
        import matplotlib  # noqa: F401
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        raise OSError("--plot needs matplotlib: pip install 'hinesbatch[plot]'") from None
    root, ext = os.path.splitext(plot)
    if not ext:
        return plot + ".png"
    formats = FigureCanvasBase.get_supported_filetypes()
    if ext[1:].lower() not in formats:
        raise ValueError(f"--plot {plot}: matplotlib cannot write '{ext}' files; use one of "
                         f"{', '.join('.' + f for f in sorted(formats))}")
    return plot


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
        _atomic_write(path, lambda f: fig.savefig(f, dpi=120, format=fmt))
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


def _one_line(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    if isinstance(exc, MemoryError) and "Unable to allocate" in text:
        text += " (too large for this machine: use fewer --cells, --record-every K or --stream)"
    return " ".join(text.split())


def _fail(message: str) -> int:
    print(f"hinesbatch simulate: error: {message}", file=sys.stderr)
    return 1
