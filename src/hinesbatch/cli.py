"""The ``hinesbatch`` command: a thin dispatcher over the command modules.

Each command module exposes ``configure(parser)`` (adds its arguments) and ``run(args) -> int``.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import re
import sys
import warnings

DESCRIPTION = """\
Batched Hines solvers for neuron morphologies, on CPUs and GPUs: simulate a cell (passive, or
with NEURON's mechanisms), run a model file, report what this machine can run, or reproduce
the benchmarks."""

EPILOG = """\
examples:
  hinesbatch info                       versions, backends and GPUs found here
  hinesbatch simulate --out traces.npz  a passive run of the bundled cell
  hinesbatch simulate --mechanism hh --spikes --out hh.npz
                                        Hodgkin-Huxley everywhere, soma spikes recorded
  hinesbatch simulate --help            every option of the simulation
  hinesbatch run model.json             run the model a file describes
  hinesbatch mechanisms check mods/     which .mod files translate, and why not
  hinesbatch bench cpu --quick          a quick CPU benchmark, results in this folder
  hinesbatch bench sim --quick          the hh simulation against NEURON, quickly
  hinesbatch bench network --quick      NEURON's ringtest against NEURON, quickly

'hinesbatch COMMAND --help' describes each command."""

# command name -> module (relative to the package) holding configure() and run(), and help
COMMANDS = {
    "info": ("info", "versions, backends and whether a GPU was found"),
    "simulate": ("sim.command", ("simulate a morphology (passive, or with --mechanism hh ...) "
                                 "driven by current clamps")),
    "run": ("sim.run_command", "run the model a .json or .py file describes"),
    "mechanisms": ("nmodl.check", "NMODL files: which translate, and why the others do not"),
}
BENCHMARKS = {
    "cpu": ("bench.cpu", "serial vs multicore CPU solves, and simulate vs NEURON"),
    "sim": ("bench.sim", "the Hodgkin-Huxley simulation on the CPU against NEURON"),
    "network": ("bench.network", "NEURON's ringtest over MPI ranks against NEURON's threads"),
    "hines": ("bench.hines", "the cuHinesBatch figures: every GPU layout against the CPU"),
    "multi": ("bench.multi", "multi-morphology batches: levels, fine, dhs against one thread per cell"),
    "tridiagonal": ("bench.tridiagonal",
                    "the cuThomasBatch figures: GPU tridiagonal solvers vs cuSPARSE and the CPU"),
}
#: Exit status after Ctrl-C (128 + SIGINT), as shells report it.
EXIT_INTERRUPTED = 130


def _module(path: str):
    return importlib.import_module(f"hinesbatch.{path}")


def _add_commands(sub, table: dict) -> None:
    """One sub-parser per entry; a module that fails to import leaves its command in place,
    reporting the failure when it is run, so the other commands keep working."""
    for name, (path, help_) in table.items():
        p = sub.add_parser(name, help=help_, description=help_[:1].upper() + help_[1:] + ".")
        try:
            _module(path).configure(p)
        except ImportError as exc:
            p.set_defaults(_broken=f"'{name}' is unavailable: importing hinesbatch.{path} "
                                  f"failed: {exc}")
        p.set_defaults(_module=path)


def _version() -> str:
    from . import __version__

    return __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hinesbatch", description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"hinesbatch {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_commands(sub, COMMANDS)
    bench = sub.add_parser(
        "bench", help="benchmarks that reproduce the papers' figures",
        description="Benchmarks: each states the question it answers, prints its rows as they "
                    "finish and writes JSON and Markdown results ('hinesbatch bench "
                    "BENCHMARK --help').")
    _add_commands(bench.add_subparsers(dest="benchmark", metavar="BENCHMARK", required=True),
                  BENCHMARKS)
    return parser


def _numba_without_scipy() -> None:
    """Import Numba's array functions without its probe for SciPy's BLAS.

    ``numba.np.arraymath`` imports ``scipy.linalg`` when it is first imported (when the
    first kernel is compiled or loaded from the cache), only to choose how ``np.convolve``
    and ``np.correlate`` take inner products in compiled code; hinesbatch uses neither,
    and the import costs about 0.2 s of every command's start-up. SciPy stays importable
    afterwards. A process that imported either module already is left alone.
    """
    if "numba.np.arraymath" in sys.modules or "scipy.linalg" in sys.modules:
        return
    blocked = [name for name in ("scipy", "scipy.linalg") if name not in sys.modules]
    for name in blocked:
        sys.modules[name] = None  # makes `import scipy...` fail at once
    try:
        import numba.np.arraymath  # noqa: F401
    except ImportError:  # no Numba: the commands say so themselves
        pass
    finally:
        for name in blocked:
            del sys.modules[name]


def main(argv: list[str] | None = None) -> int:
    """Run the command ``argv`` (default ``sys.argv[1:]``) names; returns the exit status.

    Ctrl-C ends a command with one line on stderr and status 130 (no traceback). Warnings
    about SWC files are shown as ``file.swc:LINE: warning: ...``, without a source line of
    hinesbatch.
    """
    _numba_without_scipy()
    with _swc_warnings_as_compiler_messages():
        try:
            parser = build_parser()
            args, extra = parser.parse_known_args(argv)
            broken = getattr(args, "_broken", None)
            if broken:
                parser.exit(2, f"hinesbatch: error: {broken}\n")
            if extra:
                parser.error(f"unrecognized arguments: {' '.join(extra)}")
            return int(_module(args._module).run(args) or 0)
        except KeyboardInterrupt:
            print("\nhinesbatch: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED


_LOCATED = re.compile(r"^(?P<where>\S.*?:\d+): (?P<text>.*)$", re.DOTALL)


@contextlib.contextmanager
def _swc_warnings_as_compiler_messages():
    """Show SWC warnings (their messages start ``file.swc:LINE:``) as a compiler's, and the
    others as Python does; restored on exit."""
    from .morphology import SWCWarning

    default = warnings.formatwarning

    def formatwarning(message, category, filename, lineno, line=None):
        if not issubclass(category, SWCWarning):
            return default(message, category, filename, lineno, line)
        match = _LOCATED.match(str(message))
        if match is None:
            return f"warning: {message} [{category.__name__}]\n"
        return f"{match['where']}: warning: {match['text']} [{category.__name__}]\n"

    warnings.formatwarning = formatwarning
    try:
        yield
    finally:
        warnings.formatwarning = default


if __name__ == "__main__":
    sys.exit(main())
