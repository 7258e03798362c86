"""``grouped``'s classes solved in one launch (``hines_tiled_classes`` in ``hines_tiled.cu``).

One launch per class leaves the device partly idle at every class's end: a persistent grid's
last round of tiles is partial (the 256000 real cells of ``bench multi``: 0.89 to 19.1 rounds
per class, 7 of 17 classes with a last round less than half full), and the next class's
blocks, bound to their own tiles, cannot make up for it (0.30 ms of per-launch cost in 2.1
ms). Here one persistent block per SM solves class after
class: each class's arrangement is planned for a block that has the SM's shared memory to
itself (its schedule staged once, as many groups of ``tiled``'s as fit, up to
:data:`MAX_THREADS` threads),
the block's groups take the class's tiles from a counter, and a block whose class has no tiles
left moves on to the class with the most work left. Blocks start spread over the classes in
proportion to their nodes, so a block changes class only a few times.

Only the widths of one node per lane and step, 8, 16 or 32 lanes per cell, are compiled into
the launch (with the others, the 64 registers a 1024-thread block allowed spilled).

``grouped``'s default for batches of two classes or more (``grouped.ONE_LAUNCH``). Its
solutions are bit for bit those of one launch per class in every GPU test. compute-sanitizer's
racecheck reports hazards in ``hines_tiled_classes``; a small kernel correct by construction
with its barriers (a persistent block, a named barrier per group, warps passing them unequally
often between block barriers) draws the same reports, and draws none when every warp passes
them equally often: the reports are the tool's (docs/multi-morphology.md).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .shared_tiles import SharedTiles

__all__ = ["ClassesLaunch", "LANES", "FIELDS", "MAX_THREADS", "block_arrangement"]

#: Lanes per cell that ``hines_tiled_classes`` is compiled for (one node per lane and step).
LANES = (8, 16, 32)
#: int64 fields of a class's row in the launch's table (``HB_CLASS_FIELDS`` in the kernel).
FIELDS = 14
#: Threads of a block at most (``__launch_bounds__(768, 1)``): 80 registers per thread. With
#: 1024 threads (64 registers) ptxas issued each step's loads of the parents' values after the
#: pivot's reciprocal, not before it: the classes of 881-1,681 nodes alone took 12-15% longer
#: than one launch per class, and the 256000 real cells 1.776 ms against 1.656 with 768
#: (H200, fp64, measured side by side). The smallest classes fit
#: fewer cells per SM: 96 of 59 nodes, against 120 (counted by the planner, not timed apart).
MAX_THREADS = 768
#: Static shared memory of ``hines_tiled_classes`` at most (the class, its lanes, the next
#: class: 96 bytes by ptxas; tests/unit/test_cu_compile.py checks the bound).
STATIC_SMEM = 128
#: Dynamic shared memory a class needs beyond ``tiled``'s layout: the groups' next tiles and
#: the block's first (``taken`` in ``hb_tiled_groups``).
EXTRA_SMEM = 4 * (SharedTiles.MAX_GROUPS + 1)
#: Whether groups ask L2 for their next tile during the sweeps (SharedTiles.PREFETCH). Not
#: here: on the H200 (fp64, measured side by side) 256000 real cells take 1.781-1.783 ms
#: without, 1.827 with (as with one launch per class, ``grouped``).
PREFETCH = False


def block_arrangement(cell, variants, item: int, props: dict, n_cells: int, tc=None,
                      groups=None, reroot=None) -> SharedTiles | None:
    """``cell``'s arrangement (``tiled``'s width for it, from ``variants``) for a block with
    an SM's shared memory to itself: among ``tiled``'s tile sizes
    (:meth:`~.shared_tiles.SharedTiles.tile_sizes`), the tile size and groups that hold
    the most cells, the most groups at a tie (their tiles overlap one another's loads and
    sweeps, and the class's end is finer), unless ``tc`` / ``groups`` are given. ``None``
    when the width is not among :data:`LANES`. ``reroot``: ``tiled``'s option."""
    # the block's limit counts its static shared memory too
    one = dict(props, smem_per_block_optin=props["smem_per_block_optin"] - EXTRA_SMEM
               - STATIC_SMEM)
    width = SharedTiles.plan(cell, variants, 1, tc, item, one, n_cells, "grouped",
                             max_threads=MAX_THREADS, reroot=reroot, listed=True)
    if width.lanes not in LANES or width.batch != width.lanes:
        return None
    if tc is None or groups is None:
        s, lanes = width.schedule, width.lanes
        fixed = SharedTiles.schedule_smem(s, item)
        per_cell = SharedTiles.per_cell_bytes(s, item, listed=True)
        limit = one["smem_per_block_optin"]
        fit = (limit - fixed) // per_cell
        sizes = [tc] if tc is not None else SharedTiles.tile_sizes(lanes, fit)
        options = []
        for size in sizes:
            most = SharedTiles.most_groups(fixed, size * per_cell, size * lanes, limit,
                                            MAX_THREADS)
            g = groups if groups is not None else most
            if fixed + g * size * per_cell <= limit:
                options.append((size * g, g, size))
        if options:
            _, groups, tc = max(options)
    return SharedTiles.plan(cell, [(width.batch, width.lanes)], 1, tc, item, one, n_cells,
                            "grouped", groups, PREFETCH, MAX_THREADS, reroot=reroot, listed=True)


@dataclass
class ClassesLaunch:
    """The launch of every class: the classes' arrangements (``tiles``, one per block that has
    an SM to itself), their table for the kernel, and the blocks' first classes."""

    tiles: list
    counts: np.ndarray  # cells per class
    first: np.ndarray  # where each class's cells start in the member list
    order: np.ndarray  # classes by work, most first

    @property
    def threads(self) -> int:
        return max(t.threads for t in self.tiles)

    @property
    def smem(self) -> int:
        return max(t.smem for t in self.tiles) + EXTRA_SMEM

    def host_arrays(self, dtype) -> dict:
        """The classes' schedules end to end, and their table (:data:`FIELDS` per class)."""
        parts = [t.host_arrays(dtype) for t in self.tiles]
        entries = np.concatenate([[0], np.cumsum([p["jp"].shape[0] for p in parts])])
        stages = np.concatenate([[0], np.cumsum([p["stage"].size for p in parts])])
        lus = np.concatenate([[0], np.cumsum([p["lu"].shape[0] for p in parts])])
        table = np.array([[entries[k], stages[k], self.first[k], self.counts[k],
                           t.schedule.n_batches, t.schedule.n_nodes, t.schedule.slot_stride,
                           t.schedule.stage_cells.bit_length() - 1, t.tile_cells, t.groups,
                           t.lanes, int(t.prefetches), t.tile_cells * t.schedule.n_nodes,
                           lus[k]]
                          for k, t in enumerate(self.tiles)], dtype=np.int64).reshape(-1, FIELDS)
        return {key: np.concatenate([p[key] for p in parts])
                for key in ("jp", "lu", "node", "stage")} | {"classes": table}

    def homes(self, blocks: int) -> np.ndarray:
        """Each block's first class: the blocks spread over the classes (most work first) in
        proportion to their nodes (a class with less than a block's share may get none)."""
        work = np.array([c * t.schedule.n_nodes for t, c in zip(self.tiles, self.counts)],
                        dtype=np.float64)[self.order]
        edges = np.cumsum(work) / work.sum()
        at = (np.arange(blocks) + 0.5) / blocks
        return self.order[np.minimum(np.searchsorted(edges, at), len(work) - 1)].astype(np.int32)

    def describe(self) -> str:
        return (f"one launch for all classes (one block per SM, {self.threads} threads, "
                f"{self.smem} B shared memory; groups take tiles from a counter per class, a "
                f"block moves to the class with the most work left)")
