"""Every benchmark writes into the current folder unless ``--out`` says otherwise, never into
the repository's ``benchmarks/results/`` (which holds the committed snapshots)."""
from __future__ import annotations

import argparse
import importlib

import pytest


@pytest.mark.parametrize("name", ["cpu", "hines", "multi", "tridiagonal"])
def test_bench_out_defaults_to_the_current_folder(name):
    module = importlib.import_module(f"hinesbatch.bench.{name}")
    parser = argparse.ArgumentParser()
    module.configure(parser)
    assert parser.parse_args([]).out == "."
    assert parser.parse_args(["--out", "elsewhere"]).out == "elsewhere"
