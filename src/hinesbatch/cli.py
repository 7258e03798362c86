"""The ``hinesbatch`` command: a thin dispatcher over the command modules.

Each command module exposes ``configure(parser)`` (adds its arguments) and ``run(args) -> int``.
"""
from __future__ import annotations

import argparse
import importlib
import sys

# command name -> module (relative to the package) holding configure() and run()
COMMANDS = {
    "info": ("info", "versions, backends and whether a GPU was found"),
    "simulate": ("sim.command", "passive simulation of a morphology with a current clamp"),
}
BENCHMARKS = {
    "cpu": ("bench.cpu", "serial vs multicore CPU solves, and simulate vs NEURON"),
    "hines": ("bench.hines", "the cuHinesBatch figures: every GPU layout against the CPU"),
    "multi": ("bench.multi", "multi-morphology batches: levels, fine, dhs against one thread per cell"),
    "tridiagonal": ("bench.tridiagonal",
                    "the cuThomasBatch figures: GPU tridiagonal solvers vs cuSPARSE and the CPU"),
}


def _module(path: str):
    return importlib.import_module(f"hinesbatch.{path}")


def _add_commands(sub, table: dict) -> None:
    """One sub-parser per entry; a module that fails to import leaves its command in place,
    reporting the failure when it is run, so the other commands keep working."""
    for name, (path, help_) in table.items():
        p = sub.add_parser(name, help=help_, description=help_)
        try:
            _module(path).configure(p)
        except ImportError as exc:
            p.set_defaults(_broken=f"'{name}' is unavailable: importing hinesbatch.{path} "
                                  f"failed: {exc}")
        p.set_defaults(_module=path)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hinesbatch", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_commands(sub, COMMANDS)
    bench = sub.add_parser("bench", help="benchmarks that reproduce the papers' figures")
    _add_commands(bench.add_subparsers(dest="benchmark", metavar="BENCHMARK", required=True),
                  BENCHMARKS)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    broken = getattr(args, "_broken", None)
    if broken:
        parser.exit(2, f"hinesbatch: error: {broken}\n")
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return int(_module(args._module).run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
