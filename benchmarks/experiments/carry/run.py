#!/usr/bin/env python3
"""Contributions carried in registers along a lane's chain, and the next tile prefetched into
L2 during the sweeps: A/B on the device, in one run.

* ``tiled_schedule(..., carry=True)`` lets each entry of a step follow its node's parent, so
  that the contribution to the parent stays in the lane's registers instead of a
  read-modify-write of the parent's slot (and x of the parent in the forward sweep);
  ``carry=False`` is the packed, bank-ordered schedule of before, every contribution pushed.
  (``carry.patch``, against 83f16a6; left out: slower.)
* With one tile buffer per group (``nbuf = 1``), a group stages its next tile only after
  writing the current one back. ``hb_tile_prefetch`` asks L2 for that tile's ``d`` and
  ``rhs`` earlier (``prefetch.global.L2``, one per 128-byte line, no registers held).
  In the first variants timed a macro ``HB_TILE_PREFETCH`` said when: 0 never, 1 when the
  sweeps start, 2 between the backward and the forward sweep (kept: ``SharedTiles.PREFETCH``
  and the kernel's ``prefetch`` argument).

Times the cases of ``../split_planes/run.py`` (fp64, median of 7, L2 rotated) with whatever
``hinesbatch`` is on ``PYTHONPATH``, in each arrangement that code offers (:func:`modes`):

    PYTHONPATH=VARIANT/src python3 benchmarks/experiments/carry/run.py OUT.json LABEL
"""
from __future__ import annotations

import functools
import inspect
import sys
from pathlib import Path

from hinesbatch.solvers.gpu import strategies

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "split_planes"))
from run import main  # noqa: E402  (split_planes/run.py: its cases, timed)


def modes() -> list:
    """(name, set-up) of each arrangement the code on PYTHONPATH offers: with
    ``SharedTiles.PREFETCH``, on and off, twice, alternating; with the ``carry`` option of
    ``tiled_schedule`` (carry.patch), carry and push."""
    schedule = strategies.tiled_schedule
    tiles = strategies.SharedTiles

    def use(builder, prefetch=None):
        def setup():
            strategies.tiled_schedule = builder
            if prefetch is not None:
                tiles.PREFETCH = prefetch
        return setup

    if hasattr(tiles, "PREFETCH"):
        return [(name, use(schedule, on)) for _ in range(2)
                for name, on in (("prefetch", True), ("no prefetch", False))]
    if "carry" not in inspect.signature(schedule).parameters:
        return [("push", use(schedule))]
    return [("carry", use(schedule)), ("push", use(functools.partial(schedule, carry=False)))]


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], modes)
