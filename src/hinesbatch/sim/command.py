"""``hinesbatch simulate``: a passive cell with a current clamp, traces to ``.npz`` (and a plot).

A thin layer over :func:`hinesbatch.sim.simulate_passive`; see ``docs/simulation.md``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

from ..errors import BackendUnavailableError, SingularSystemError
from .passive import DEFAULT_ICLAMP, DEFAULT_TSTOP, NEURON_DEFAULTS, simulate_passive
from .stimuli import parse_location

__all__ = ["configure", "run", "write_npz"]


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
    parser.add_argument("--out", required=True, metavar="TRACES.npz",
                        help="output file: t [ms], v [mV] (cells x samples), params (JSON)")
    parser.add_argument("--plot", metavar="TRACES.png", help="also plot v(t) (needs matplotlib)")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress bar on stderr (default: on long runs in a terminal)")


def run(args: argparse.Namespace) -> int:
    """Run the simulation ``args`` describe; print a summary. Returns the exit status."""
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            return _fail("--plot needs matplotlib: pip install 'hinesbatch[plot]'")
    try:
        result = simulate_passive(
            args.swc, tstop=args.tstop, dt=args.dt, iclamp=args.iclamp, nseg=args.nseg,
            d_lambda=args.d_lambda, cm=args.cm, ra=args.ra, g_pas=args.g_pas,
            e_pas=args.e_pas, v_init=args.v_init, n_cells=args.cells, backend=args.backend,
            clamp=args.clamp, record=args.record, progress=args.progress,
        )
        write_npz(args.out, result)
        if args.plot:
            _plot(result, args.plot)
    except (ValueError, TypeError, OSError, BackendUnavailableError, SingularSystemError) as exc:
        return _fail(str(exc))
    _summary(result, args)
    return 0


def write_npz(path: str | os.PathLike, result) -> None:
    """Save ``t`` (n_steps+1,) [ms], ``v`` (n_cells, n_steps+1) [mV] and ``params`` (a JSON string)."""
    np.savez(path, t=result.t, v=result.v, params=np.array(json.dumps(result.params)))


def _plot(result, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    p = result.params
    fig, ax = plt.subplots(figsize=(7, 3.5), layout="constrained")
    ax.plot(result.t, result.v[: min(8, result.v.shape[0])].T, lw=1)
    rec = p["record"]
    ax.set(xlabel="t (ms)", ylabel=f"v at {rec['section']}({rec['x']:g}) (mV)",
           title=f"{os.path.basename(p['morphology'])}: passive, IClamp "
                 f"{p['iclamp']['amp_nA']:g} nA")
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _summary(result, args) -> None:
    p, info = result.params, result.info
    n_steps = p["n_steps"]
    cells = p["n_cells"]
    rate = n_steps * info["n_nodes"] * cells / info["loop_s"] if info["loop_s"] > 0 else float("nan")
    lines = [
        f"cell:     {p['morphology']} ({info['n_sections']} sections, {info['n_nodes']} nodes"
        f"{f' x {cells} cells' if cells > 1 else ''})",
        f"run:      {n_steps} steps of {p['dt_ms']:g} ms to {result.t[-1]:g} ms; IClamp "
        f"{p['iclamp']['amp_nA']:g} nA from {p['iclamp']['delay_ms']:g} ms for "
        f"{p['iclamp']['dur_ms']:g} ms at {p['clamp']['section']}({p['clamp']['x']:g})",
        f"backend:  {info['backend']}",
        f"time:     {info['loop_s']:.3f} s stepping ({rate / 1e6:.1f} M node-steps/s), "
        f"{info['setup_s']:.3f} s set-up",
        f"v:        {result.v[0, 0]:.3f} -> {result.v[0, -1]:.3f} mV "
        f"(min {result.v.min():.3f}, max {result.v.max():.3f})",
        f"output:   {args.out}" + (f", {args.plot}" if args.plot else ""),
    ]
    print("\n".join(lines))


def _fail(message: str) -> int:
    print(f"hinesbatch simulate: error: {message}", file=sys.stderr)
    return 1
