"""The ``hinesbatch`` command: a thin dispatcher over the command modules.

Each command module exposes ``configure(parser)`` (adds its arguments) and ``run(args) -> int``.
:func:`main` runs a command and returns its status (tests call it); :func:`console_main` is
the program, which also ends the process.
"""
from __future__ import annotations

import argparse
import atexit
import contextlib
import importlib
import os
import re
import sys
import warnings
from typing import NoReturn

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
#: Commands that run the user's code (model files): their processes end the usual way.
USER_CODE_COMMANDS = frozenset({"run"})


def _module(path: str):
    return importlib.import_module(f"hinesbatch.{path}")


def _add_commands(sub, table: dict, only: str | None = None, *,
                  configure: bool = True) -> None:
    """One sub-parser per entry; a module that fails to import leaves its command in place,
    reporting the failure when it is run, so the other commands keep working.

    Only the command ``only`` (every command when None) imports its module and gets its
    arguments, unless ``configure`` is false; the others keep their name and help."""
    for name, (path, help_) in table.items():
        p = sub.add_parser(name, help=help_, description=help_[:1].upper() + help_[1:] + ".")
        p.set_defaults(_module=path, _configured=False)
        if not configure or only not in (None, name):
            continue
        try:
            _module(path).configure(p)
        except ImportError as exc:
            p.set_defaults(_broken=f"'{name}' is unavailable: importing hinesbatch.{path} "
                                  f"failed: {exc}")
        p.set_defaults(_configured=True)


def _selected(argv: list[str]) -> tuple[str | None, str | None]:
    """The command and benchmark that ``argv`` names (None where it names none): the first
    words that are not options (the top-level options take no values)."""
    words = [a for a in argv if not a.startswith("-")]
    command = words[0] if words else None
    benchmark = words[1] if command == "bench" and len(words) > 1 else None
    return command, benchmark


def _version() -> str:
    from . import __version__

    return __version__


def build_parser(selected: tuple[str | None, str | None] | None = None
                 ) -> argparse.ArgumentParser:
    """The parser of every command, or, with ``selected`` (``(command, benchmark)`` as
    :func:`_selected` returns), one that imports only the modules of that command: a command
    loads no other command's dependencies."""
    command, benchmark = selected if selected is not None else (None, None)
    parser = argparse.ArgumentParser(prog="hinesbatch", description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"hinesbatch {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_commands(sub, COMMANDS, command, configure=selected is None or command is not None)
    bench = sub.add_parser(
        "bench", help="benchmarks that reproduce the papers' figures",
        description="Benchmarks: each states the question it answers, prints its rows as they "
                    "finish and writes JSON and Markdown results ('hinesbatch bench "
                    "BENCHMARK --help').")
    _add_commands(bench.add_subparsers(dest="benchmark", metavar="BENCHMARK", required=True),
                  BENCHMARKS, benchmark,
                  configure=selected is None or (command == "bench" and benchmark is not None))
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command ``argv`` (default ``sys.argv[1:]``) names; returns the exit status.

    Ctrl-C ends a command with one line on stderr and status 130 (no traceback). Warnings
    about SWC files are shown as ``file.swc:LINE: warning: ...``, without a source line of
    hinesbatch.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    with _swc_warnings_as_compiler_messages():
        try:
            parser = build_parser(_selected(argv))
            args, extra = parser.parse_known_args(argv)
            if not args._configured:  # argv named its command in an unforeseen way
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


def console_main() -> NoReturn:
    """The ``hinesbatch`` program: :func:`main` on ``sys.argv``, then the end of the process.

    When the command has returned, its files are written and closed. The interpreter's own
    shutdown would then tear down every module (about 570 after a simulation, Numba's and
    LLVM's among them) and collect their objects, a tenth of a second that changes nothing
    outside the process. So the program runs the exit handlers (:mod:`atexit`, as the
    interpreter would), flushes the standard streams and ends with the command's status. A
    command that runs the user's code (:data:`USER_CODE_COMMANDS`), or a process with another
    thread still running, ends the usual way.
    """
    argv = sys.argv[1:]
    status = main(argv)
    if _selected(argv)[0] in USER_CODE_COMMANDS or _other_threads_running():
        sys.exit(status)
    _end_process(status)


def _other_threads_running() -> bool:
    threading = sys.modules.get("threading")
    return threading is not None and any(
        t.is_alive() and not t.daemon for t in threading.enumerate()
        if t is not threading.main_thread())


def _end_process(status: int) -> NoReturn:
    """Run the exit handlers, flush stdout and stderr, and end the process with ``status``,
    without the interpreter's teardown of modules and objects."""
    try:
        atexit._run_exitfuncs()  # what the interpreter's exit runs first
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # a closed or broken pipe: nothing to keep
                stream.flush()
        os._exit(status)


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
    console_main()
