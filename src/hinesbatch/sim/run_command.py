"""``hinesbatch run MODEL``: run a model described in a ``.json`` or ``.py`` file.

The file is read by :func:`hinesbatch.io.load_model`, which returns the simulation, its end
time and the outputs it names; this command runs it with a progress bar, writes the outputs
(each atomically, after checking every folder before the run) and prints a summary.
"""
from __future__ import annotations

import argparse
import time

from .cli_options import USER_ERRORS, fail, one_line
from .command_active import OUTPUT_OPTIONS, check_outputs, summary_lines, write_outputs
from .passive import show_progress

__all__ = ["configure", "run"]

DESCRIPTION = """\
Run the model a file describes: cells, mechanisms, stimuli, connections, recordings, the end
time and the files to write ('outputs': npz, spikes, plot, raster). A .json file holds the
description as data; a .py file builds it with the Python API (see the user guide). The
options below override the file's outputs."""

EPILOG = """\
examples:
  hinesbatch run model.json
  hinesbatch run model.py --out traces.npz --spikes-out spikes.h5 --raster raster.png

exit status: 0 success, 1 error (one line on stderr), 2 bad arguments, 130 interrupted"""

_COMMAND = "run"


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``run``'s arguments to ``parser``."""
    parser.add_argument("model", metavar="MODEL", help="model file (.json or .py)")
    parser.add_argument("--out", metavar="TRACES.npz",
                        help="write the recordings here (.npz) instead of the file's 'npz'")
    parser.add_argument("--spikes-out", metavar="SPIKES.h5",
                        help="write the spikes here (SONATA, HDF5) instead of the file's 'spikes'")
    parser.add_argument("--plot", metavar="TRACES.png",
                        help="plot the traces here instead of the file's 'plot'")
    parser.add_argument("--raster", metavar="RASTER.png",
                        help="plot the spike raster here instead of the file's 'raster'")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress bar on stderr (default: on when stderr is a terminal)")
    parser.description = DESCRIPTION
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter


def run(args: argparse.Namespace) -> int:
    """Load, run and save the model ``args.model``; print a summary. Returns the exit status:
    0, or 1 with one line on stderr (a model file's errors start with its path)."""
    overrides = {"npz": args.out, "spikes": args.spikes_out, "plot": args.plot,
                 "raster": args.raster}
    try:
        from ..io import load_model
    except ImportError as exc:
        return fail(f"reading model files needs hinesbatch.io, which failed to import: {exc}",
                     _COMMAND)
    try:
        start = time.perf_counter()
        simulation, tstop, outputs = load_model(args.model)
        outputs = dict(outputs or {})
        outputs.update({k: v for k, v in overrides.items() if v is not None})
        paths = check_outputs(outputs)
        setup_s = time.perf_counter() - start
        show = show_progress(args.progress, float("inf"))  # any model may run long
        start = time.perf_counter()
        res = simulation.run(tstop, progress=show)
        run_s = time.perf_counter() - start
        written = write_outputs(res, paths)
    except USER_ERRORS as exc:
        return fail(one_line(exc), _COMMAND)
    # what ran, as the engine reports it (no second pass over the time grid)
    dt, n_steps, n_cells = res.meta["dt"], int(res.meta["steps"]), int(res.meta["n_cells"])
    lines = [f"model:    {args.model}",
             *summary_lines(res, n_cells=n_cells, n_steps=n_steps, dt=dt, tstop=tstop,
                            setup_s=setup_s, run_s=run_s, written=written, spikes=False)]
    if not written:
        lines.append("(the model names no outputs: give "
                     f"{', '.join(OUTPUT_OPTIONS.values())} to keep the results)")
    print("\n".join(lines))
    return 0
