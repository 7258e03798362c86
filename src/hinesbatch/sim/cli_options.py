"""What the simulation commands share: the ``--iclamp`` and ``--record`` option types, the
default location and spike threshold, the checks made before a run (disk space, plot
format), and one-line error reporting.

``hinesbatch simulate`` (:mod:`hinesbatch.sim.command`), its active-membrane part
(:mod:`hinesbatch.sim.command_active`) and ``hinesbatch run``
(:mod:`hinesbatch.sim.run_command`) import from here; nothing here imports them.
"""
from __future__ import annotations

import os
import shutil
import sys
from typing import NamedTuple

from ..errors import BackendUnavailableError, SingularSystemError
from ..io.npz import npz_path as _npz_path
from .errors import NonFiniteStateError
from .memory import format_bytes
from .stimuli import MAX_STEPS

__all__ = ["ClampOption", "RecordOption", "DEFAULT_LOCATION", "SPIKE_THRESHOLD_MV",
           "USER_ERRORS", "npz_path", "check_disk", "plot_path", "one_line", "fail"]

#: Where clamps and recordings sit when no location is given.
DEFAULT_LOCATION = ("soma[0]", 0.5)
#: ``--spikes`` records spikes at the soma's middle crossing this potential upwards [mV]
#: (NEURON's NetCon default threshold).
SPIKE_THRESHOLD_MV = 10.0
#: Errors reported as one line and exit status 1: bad input, unusable files, runs that
#: cannot be done here.
USER_ERRORS = (ValueError, TypeError, OSError, MemoryError, BackendUnavailableError,
               SingularSystemError, NonFiniteStateError)


class ClampOption(NamedTuple):
    """One ``--iclamp``: amplitude [nA], onset [ms], duration [ms], and where (None: the
    default location)."""

    amp: float
    delay: float
    dur: float
    location: tuple[str, float] | None = None


class RecordOption(NamedTuple):
    """One ``--record``: a variable (NEURON's name: ``v``, ``m_hh``, ``ina``, ...) and where
    (None: the default location)."""

    variable: str
    location: tuple[str, float] | None = None


def npz_path(out: str | os.PathLike) -> str:
    """The file ``np.savez`` writes for ``out``: ``out`` with ``.npz`` appended if missing."""
    return os.fspath(_npz_path(out))


def check_disk(out: str, args, traces: int = 1) -> None:
    """``OSError`` when the output (and a streamed recording beside it) cannot fit on disk;
    ``traces`` recordings per cell of ``args.cells`` cells, ``args.tstop / args.dt`` steps
    kept one in ``args.record_every``, 8 bytes a sample."""
    steps = max(0.0, args.tstop / args.dt) if args.dt > 0 else 0.0
    if not steps <= MAX_STEPS:  # refused by the simulation, with its own message
        return
    size = args.cells * traces * (steps // args.record_every + 1) * 8
    size *= 2 if args.stream else 1  # the .npy and the .npz exist together at the end
    folder = os.path.dirname(os.path.abspath(out))
    free = shutil.disk_usage(folder).free
    if size > free:
        raise OSError(f"{out} would take about {format_bytes(size)} but {folder} has "
                      f"{format_bytes(free)} free; use fewer --cells, --record-every K or "
                      "another folder")


def plot_path(plot: str, option: str = "--plot") -> str:
    """The file the plot goes to (``.png`` appended without an extension), once matplotlib
    is known to be importable and to write that format; ``OSError`` or ``ValueError``
    naming ``option`` otherwise."""
    try:
        import matplotlib  # noqa: F401
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        raise OSError(f"{option} needs matplotlib: pip install 'hinesbatch[plot]'") from None
    root, ext = os.path.splitext(plot)
    if not ext:
        return plot + ".png"
    formats = FigureCanvasBase.get_supported_filetypes()
    if ext[1:].lower() not in formats:
        raise ValueError(f"{option} {plot}: matplotlib cannot write '{ext}' files; use one of "
                         f"{', '.join('.' + f for f in sorted(formats))}")
    return plot


def one_line(exc: BaseException) -> str:
    """``exc``'s message on one line (its type's name when it has none), with a hint for
    allocations too large for the machine."""
    text = str(exc) or type(exc).__name__
    if isinstance(exc, MemoryError) and "Unable to allocate" in text:
        text += " (too large for this machine: use fewer --cells, --record-every K or --stream)"
    return " ".join(text.split())


def fail(message: str, command: str = "simulate") -> int:
    """Print ``hinesbatch COMMAND: error: MESSAGE`` on stderr; return exit status 1."""
    print(f"hinesbatch {command}: error: {message}", file=sys.stderr)
    return 1
