"""The NMODL files of ``tests/data/nmodl`` that unit tests load by name."""
from __future__ import annotations

import warnings
from pathlib import Path

import hinesbatch as hb

DATA = Path(__file__).parent / "data" / "nmodl"


def load(*names: str) -> None:
    """Load ``DATA/<name>.mod`` for each name (the translator's notices silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in names:
            hb.load_mechanisms(DATA / f"{n}.mod")
