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
}


def _module(path: str):
    return importlib.import_module(f"hinesbatch.{path}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hinesbatch", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (path, help_) in COMMANDS.items():
        p = sub.add_parser(name, help=help_, description=help_)
        p.set_defaults(_module=path)
        _module(path).configure(p)
    bench = sub.add_parser("bench", help="benchmarks that reproduce the papers' figures")
    bsub = bench.add_subparsers(dest="benchmark", metavar="BENCHMARK", required=True)
    for name, (path, help_) in BENCHMARKS.items():
        p = bsub.add_parser(name, help=help_, description=help_)
        p.set_defaults(_module=path)
        _module(path).configure(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(_module(args._module).run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
