"""How ``hines_tiled`` kernels arrange cells that share one structure: :class:`SharedTiles`.

The planner behind ``tiled`` on a :class:`~hinesbatch.tree.MonoBatch` and behind every class
of ``grouped`` (and its one launch, :mod:`.classes_launch`): the width of the elimination
steps, the tile of cells a group of threads stages in shared memory, the groups per block, and
the launch itself.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..device import blocks_per_sm, resident_blocks
from ..kernel_build import SLOT_VARIANTS, TILED_VARIANTS
from ....tree.schedules.tiled import (Schedule, kernel_arrays, lu_len, schedule_steps,
                                      tiled_schedule)
from .base import allow_smem, call_kernel, i32, i64

__all__ = ["SharedTiles", "tiled_variants"]


@dataclass(frozen=True)
class SharedTiles:
    """How ``hines_tiled_mono`` solves cells that share one structure (``tiled`` on a
    MonoBatch, every class of ``grouped``): ``batch`` nodes per elimination step, ``lanes``
    lanes per cell, the step schedule, ``tile_cells`` cells per tile, ``groups`` groups of
    threads per block (each solves its own tiles, with its own barrier; the block stages the
    schedule once for all), ``buffers`` tile buffers per group, the block's shared memory in
    bytes, whether a group with one buffer asks L2 for its next tile during the sweeps
    (``prefetch``: :data:`PREFETCH`), and whether the cells come from a member list
    (``listed``: ``grouped``'s classes; each group then keeps its tile's cell starts and the
    next tile's in shared memory, :meth:`per_cell_bytes`)."""

    batch: int
    lanes: int
    schedule: Schedule
    tile_cells: int
    groups: int
    buffers: int
    smem: int
    prefetch: bool = True
    slots: bool = False  # values in slot order (hines_tiled_slots), not canonical
    listed: bool = False  # cells from a member list (grouped), not a MonoBatch's rows

    #: Fallbacks (batch, lanes) when the preferred width's tile does not fit, in turn.
    DEFAULTS = ((8, 8), (16, 16), (4, 4), (2, 2), (1, 1))
    #: Widths (nodes per step = lanes per cell) :meth:`preferred` chooses among, and the
    #: factor by which the next width must cut the steps to be taken.
    WIDTHS = (8, 16, 32)
    WIDEN = 0.65
    THREADS = 64  # default threads per group (tile_cells = THREADS // lanes)
    #: A warp stages the 32 // lanes cells of a sweep's warp side by side (runs of ``lanes``
    #: nodes each), not one cell (runs of 32 nodes):
    #: :func:`hinesbatch.tree.schedules.tiled.stage_geometry`.
    STAGE_WARP_CELLS = True
    MAX_GROUPS = 15  # named barriers 1..15 (0 is __syncthreads's)
    #: Whether :meth:`plan` has a group with one buffer ask L2 for its next tile between its
    #: sweeps (``prefetch.global.L2``), unless told. On the H200 (fp64, measured side by side):
    #: 313 nodes x 256000 cells 0.818 -> 0.792 ms, x 435920 1.365 -> 1.326; asked when the
    #: sweeps start instead, 0.846, slower than not at all.
    PREFETCH = True
    #: Whether ``tiled`` reads a MonoBatch's cells through an identity member list (the
    #: kernel's listed variant, as ``grouped`` does) when its arrangement has one group and
    #: one buffer, unless told (``listed``). On an H100 (fp64, measured side by side): 256 binary
    #: cells of 510 nodes 0.0351 -> 0.0315 ms, 3000 x ca1 at 1405 nodes 0.152 -> 0.141, 100 x
    #: ca1 0.0164 both; ``bench multi`` then has ``tiled`` at or below ``grouped`` on every
    #: MonoBatch.
    LISTED_ONE_GROUP = True

    @classmethod
    def preferred(cls, cell, reroot=None) -> list[tuple[int, int]]:
        """(batch, lanes) to try for ``cell`` when not given: one lane per node of a step,
        8 lanes, doubled while that cuts the steps of the schedule below :data:`WIDEN` times
        the narrower one's; then the :data:`DEFAULTS`. A large cell's sweeps are bound by the
        latency of their steps (shared memory holds few such cells per SM), so more lanes pay
        when the steps fall enough; see docs/gpu.md for the measurements that set the rule.
        Steps are counted from the root :meth:`rerooted` would choose (``reroot``)."""
        def steps(batch):
            return min(schedule_steps(cell, batch, r)
                       for r in ((False, True) if reroot is None else (reroot,)))

        width = cls.WIDTHS[0]
        fewest = steps(width)
        for wider in cls.WIDTHS[1:]:
            fewer = steps(wider)
            if fewer >= cls.WIDEN * fewest:
                break
            width, fewest = wider, fewer
        return [(width, width)] + [v for v in cls.DEFAULTS if v != (width, width)]

    @staticmethod
    def rerooted(cell, batch: int, reroot=None) -> bool:
        """Whether ``cell``'s schedule of ``batch`` nodes per step eliminates it from its
        centre (:func:`hinesbatch.tree.schedules.tiled.elimination_tree`): ``reroot`` when
        given (a bool), by
        default when that takes fewer steps than from its own root (node 0). A shorter
        longest chain of steps: of the 17 real cells of the benchmark, 389 nodes with 8 per
        step take 58 steps from the centre against 73, 881 nodes with 16 take 68 against 76;
        ca1 (313 nodes, 8 per step) would take 46 against 45 and keeps its root."""
        if reroot is not None:
            return reroot
        return schedule_steps(cell, batch, True) < schedule_steps(cell, batch, False)

    @classmethod
    def plan(cls, cell, variants, buffers: int, tc, item: int, props: dict, n_cells: int,
             strategy: str = "tiled", groups=None, prefetch=None,
             max_threads: int = 512, slots: bool = False, reroot=None,
             listed: bool | None = False) -> "SharedTiles":
        """Choose among ``variants`` ((batch, lanes) pairs) the first whose smallest tile of
        ``cell`` fits in a block's shared memory (``props``: :func:`..device.device_properties`);
        cells per tile: ``tc``, by default :meth:`default_tile_cells`; groups per block:
        ``groups``, by default :meth:`default_groups`; L2 prefetch of the next tile:
        ``prefetch``, by default :data:`PREFETCH`; a block of at most ``max_threads`` threads
        (``hines_tiled_mono``'s bound; ``hines_tiled_classes`` takes 768). ``ValueError``
        naming ``strategy`` when nothing fits, or when ``tc`` or ``groups`` does not.
        ``slots``: for values in slot order (``hines_tiled_slots``: one buffer, and a width of
        :data:`..kernel_build.SLOT_VARIANTS`, else ``ValueError``). ``reroot``: whether the
        schedule
        eliminates the cell from its centre (:meth:`rerooted`; by default when that takes
        fewer steps). ``listed``: cells from a member list (one tile buffer); ``None``: with
        :data:`LISTED_ONE_GROUP`, an arrangement of one group and one buffer is planned again
        listed (same width, tile size and root flag of its schedule) and taken when the tile's
        cell starts fit beside it; otherwise, and for several groups, not listed."""
        if listed and (buffers != 1 or slots):
            raise ValueError("cells from a member list are solved with one tile buffer, in "
                             "canonical order")
        limit = props["smem_per_block_optin"]
        batch, lanes, schedule, fixed, per_cell, fit = cls._first_fit(
            cell, variants, buffers, item, limit, strategy, max_threads, slots, reroot,
            bool(listed))
        granule = 32 // lanes
        if tc is None:
            tc = cls.default_tile_cells(fixed, per_cell, lanes, fit, props, n_cells,
                                        groups is None)
        elif tc % granule or tc > fit:
            raise ValueError(f"tile_cells={tc} must be a multiple of {granule} (32 // lanes) and "
                             f"at most {fit} for cells of {cell.n_nodes} nodes (shared memory: "
                             f"{fixed + tc * per_cell} bytes needed, {limit} per block; at most "
                             f"{max_threads} threads)")
        most = cls.most_groups(fixed, tc * per_cell, tc * lanes, limit, max_threads)
        if groups is None:
            groups = cls._groups_for(tc, fixed, per_cell, lanes, props, n_cells)
        elif groups > most:
            raise ValueError(f"groups={groups} must be at most {most} for tiles of {tc} cells of "
                             f"{cell.n_nodes} nodes (shared memory: "
                             f"{fixed + groups * tc * per_cell} bytes needed, {limit} per block; "
                             f"at most {max_threads} threads and {cls.MAX_GROUPS} groups)")
        plan = cls(batch, lanes, schedule, int(tc), int(groups), buffers,
                   fixed + int(groups * tc) * per_cell,
                   cls.PREFETCH if prefetch is None else bool(prefetch), slots, bool(listed))
        if listed is None and cls.LISTED_ONE_GROUP and groups == buffers == 1 and not slots:
            try:  # the same arrangement, each tile's cell starts in shared memory too
                return cls.plan(cell, [(batch, lanes)], 1, tc, item, props, n_cells, strategy,
                                1, prefetch, max_threads, reroot=schedule.rerooted, listed=True)
            except ValueError:  # the starts do not fit beside the tile: as planned
                pass
        return plan

    @classmethod
    def _first_fit(cls, cell, variants, buffers: int, item: int, limit: int, strategy: str,
                   max_threads: int, slots: bool, reroot, listed: bool):
        """The first of ``variants`` whose smallest tile of ``cell`` fits in ``limit`` bytes:
        ``(batch, lanes, schedule, fixed, per_cell, fit)`` (:meth:`plan`), else
        ``ValueError`` naming ``strategy``."""
        need = None
        for batch, lanes in variants:
            if slots and (buffers != 1 or (lanes, batch // lanes) not in SLOT_VARIANTS):
                raise ValueError(f"values in slot order are solved with one tile buffer and "
                                 f"(lanes, nodes per lane) among {SLOT_VARIANTS}; got {buffers} "
                                 f"buffer(s), lanes={lanes}, batch={batch}")
            schedule = tiled_schedule(cell, batch, lanes=lanes, item=item,
                                      stage_cells=32 // lanes if cls.STAGE_WARP_CELLS else 1,
                                      reroot=cls.rerooted(cell, batch, reroot))
            # bulk copies: planes on 16 bytes; a cell's pitch within its slots
            assert not slots or (schedule.slot_stride * item % 16 == 0
                                 and schedule.slot_stride >= cell.n_nodes + 16 // item)
            fixed = cls.schedule_smem(schedule, item, slots)
            per_cell = cls.per_cell_bytes(schedule, item, buffers, listed)
            granule = 32 // lanes
            fit = min((limit - fixed) // per_cell, max_threads // lanes) // granule * granule
            if fit >= granule:
                return batch, lanes, schedule, fixed, per_cell, fit
            need = fixed + granule * per_cell
        raise ValueError(f"strategy {strategy!r} needs {need} bytes of shared memory for "
                         f"cells of {cell.n_nodes} nodes but a block may use {limit}; use "
                         f"'interleaved'")

    @staticmethod
    def per_cell_bytes(schedule: Schedule, item: int, buffers: int = 1,
                       listed: bool = False) -> int:
        """Shared memory per cell of a tile: its two planes of ``slot_stride`` words in each
        tile buffer, and with a member list (``listed``) two cell starts (int64: the tile's,
        and the next tile's, loaded during the sweeps)."""
        return 2 * schedule.slot_stride * item * buffers + (16 if listed else 0)

    #: Threads of a block of several groups at most (the groups rule, :meth:`default_groups`).
    GROUP_BLOCK_THREADS = 256
    #: Hardware barriers a block of several groups reserves (its barrier ids are in a
    #: register, so ptxas reserves all 16): at most 4 such blocks per SM
    #: (:data:`..device.SM_BARRIERS`), against 32 one-group blocks (``__syncthreads`` only).
    GROUP_BARRIERS = 16

    @classmethod
    def default_groups(cls, fixed: int, tile_bytes: int, tile_threads: int, most: int,
                       props: dict, tiles: int) -> int:
        """Groups per block (up to ``most``): the number that puts the most tiles on an SM,
        counting shared memory (``fixed`` bytes of schedule per block, ``tile_bytes`` per
        tile; :func:`hinesbatch.solvers.gpu.device.resident_blocks`, registers not counted),
        among blocks of at most
        :data:`GROUP_BLOCK_THREADS` threads, the most groups at a tie; and no more groups than
        leave every SM a block when the batch has few ``tiles``. Measured on the H200 (fp64,
        16 cells of 59-1681 nodes, groups 1-15): with
        the persistent grid and the staggered start, several groups beat one-group blocks at
        equal tiles per SM (313 nodes, 4 tiles: 0.96 against 1.03 ms for 256000 cells; 341
        nodes: 0.082 against 0.093 ms for 15000) and by far with more tiles (1,681 nodes: 0.37
        against 0.53 ms); larger blocks lost on small cells (200 nodes, one block of 8 groups
        of 64 threads: 1.22x the best). This rule lands within 1.09x of the best on all 16.
        When leaving every SM a block costs a partial last round of resident blocks that more
        groups (up to the best) would not need, the fewest groups that need the fewest rounds
        (2560 copies of a 510-node cell, 320 tiles: 2 groups make 160 blocks of one per SM, 2
        rounds; 3 make 107 blocks, 1 round; see docs/multi-morphology.md for the timing)."""
        fits = [g for g in range(1, most + 1)
                if g == 1 or g * tile_threads <= cls.GROUP_BLOCK_THREADS]
        best = max(fits, key=lambda g: (cls._tiles_per_sm(fixed, tile_bytes, tile_threads, g,
                                                           props), g))
        spread = max(1, min(best, tiles // props["sm_count"]))

        def rounds(g):  # rounds of resident blocks for the batch's tiles
            resident = cls._tiles_per_sm(fixed, tile_bytes, tile_threads, g, props) // g
            return -(-(-(-tiles // g)) // (resident * props["sm_count"]))

        return min((g for g in fits if spread <= g <= best), key=lambda g: (rounds(g), g))

    @classmethod
    def _tiles_per_sm(cls, fixed: int, tile_bytes: int, tile_threads: int, g: int,
                      props: dict) -> int:
        return g * resident_blocks(g * tile_threads, fixed + g * tile_bytes, props,
                                   barriers=cls.GROUP_BARRIERS if g > 1 else 1)

    @classmethod
    def most_groups(cls, fixed: int, tile_bytes: int, tile_threads: int, limit: int,
                     max_threads: int = 512) -> int:
        return max(1, min((limit - fixed) // tile_bytes, max_threads // tile_threads,
                          cls.MAX_GROUPS))

    @classmethod
    def _groups_for(cls, tc: int, fixed: int, per_cell: int, lanes: int, props: dict,
                    n_cells: int) -> int:
        """:meth:`default_groups` for tiles of ``tc`` cells of ``per_cell`` bytes."""
        most = cls.most_groups(fixed, tc * per_cell, tc * lanes, props["smem_per_block_optin"])
        return cls.default_groups(fixed, tc * per_cell, tc * lanes, most, props,
                                  -(-n_cells // tc))

    @classmethod
    def tile_sizes(cls, lanes: int, fit: int) -> range:
        """Cells per tile to choose among: multiples of the ``32 // lanes`` cells of a warp up
        to ``THREADS // lanes`` (at least one warp's, at most ``fit``)."""
        granule = 32 // lanes
        return range(granule, min(fit, max(granule, cls.THREADS // lanes)) + 1, granule)

    @classmethod
    def default_tile_cells(cls, fixed: int, per_cell: int, lanes: int, fit: int, props: dict,
                           n_cells: int, free_groups: bool = True) -> int:
        """Cells per tile: ``THREADS // lanes`` (at least the ``32 // lanes`` of a warp, at
        most ``fit``), or, with groups chosen by :meth:`default_groups` (``free_groups``) and a
        batch that fills the device at that size, the multiple of ``32 // lanes`` below it
        that puts the most cells on an SM (the larger at a tie): smaller tiles let more
        groups share what a large cell's schedule leaves of an SM's shared memory."""
        sizes = cls.tile_sizes(lanes, fit)
        top = sizes[-1]
        if not free_groups:
            return top

        cells = {tc: tc * cls._tiles_per_sm(
                     fixed, tc * per_cell, tc * lanes,
                     cls._groups_for(tc, fixed, per_cell, lanes, props, n_cells), props)
                 for tc in sizes}
        if n_cells <= cells[top] * props["sm_count"]:
            return top
        return max(cells, key=lambda tc: (cells[tc], tc))

    def blocks(self, n_cells: int) -> int:
        """Blocks that solve ``n_cells`` cells with one tile per group."""
        return -(-(-(-n_cells // self.tile_cells)) // self.groups)

    def grid(self, fn, props: dict, n_cells: int) -> int:
        """Blocks to launch for ``n_cells`` cells: one per tile with one group and one
        buffer; otherwise only the blocks resident on the device at once (a persistent
        grid), whose groups go on to further tiles: with two buffers a group loads its next
        tile during the sweeps, and several groups start out of phase (the kernel's staggered
        start), so that one group's loads overlap the others' sweeps. Blocks need not all be
        resident for the result: tiles are independent, and a group waits only for the groups
        of its own block."""
        blocks = self.blocks(n_cells)
        if self.buffers == 1 and self.groups == 1:
            return blocks
        barriers = self.GROUP_BARRIERS if self.groups > 1 else 1
        resident = blocks_per_sm(fn, self.threads, self.smem, props, barriers)
        return min(blocks, resident * props["sm_count"])

    @classmethod
    def schedule_smem(cls, schedule: Schedule, item: int, slots: bool = False) -> int:
        """Shared memory of the schedule in a block: ``(l, u)`` per slot (:func:`hinesbatch.tree.schedules.tiled.lu_len`),
        slot pairs (int2) per entry, the staging table, the groups' start flags, and in slot
        order the groups' mbarriers (8 bytes each, 8-byte aligned)."""
        return (lu_len(schedule.n_nodes) * 2 * item + 8 * schedule.jp.size
                + 4 * schedule.n_nodes + 4 * cls.MAX_GROUPS
                + (8 * (cls.MAX_GROUPS + 1) if slots else 0))

    @property
    def template(self) -> str:
        several = "true" if self.groups > 1 else "false"  # one group: __syncthreads only
        if self.slots:
            return f"hines_tiled_slots<{{T}}, {self.lanes}, {self.batch // self.lanes}, {several}>"
        listed = "true" if self.listed else "false"  # cells from a member list (grouped)
        return (f"hines_tiled_mono<{{T}}, {self.lanes}, {self.batch // self.lanes}, {several}, "
                f"{listed}>")

    def pitch(self, item: int) -> int:
        """Words per cell of values in slot order: the cell's nodes rounded up to 16 bytes,
        so that every cell's values start on 16 bytes (bulk copies)."""
        words = 16 // item
        return -(-self.schedule.n_nodes // words) * words

    @property
    def prefetches(self) -> bool:
        """Whether groups ask L2 for their next tile: with ``prefetch``, one buffer and
        several groups (a persistent grid; one group per block gets one tile)."""
        return self.prefetch and self.buffers == 1 and self.groups > 1

    @property
    def threads(self) -> int:
        return self.groups * self.tile_cells * self.lanes

    def structure_bytes(self, item: int) -> int:
        """Device bytes of the schedule: what :meth:`host_arrays` uploads."""
        return sum(a.nbytes for a in self.host_arrays(np.dtype(f"f{item}")).values())

    def host_arrays(self, dtype) -> dict:
        """The schedule as the kernel reads it
        (:func:`hinesbatch.tree.schedules.tiled.kernel_arrays`)."""
        return kernel_arrays(self.schedule, dtype)

    def launch(self, fn, grid: int, d, rhs, arrays: dict, members, starts, n_cells: int,
               cell_base: int, pivots, stream) -> None:
        """Solve ``n_cells`` cells (positions 0.. of ``members``, with their values at
        ``starts``; or, both ``NULL``, the rows of ``d`` and ``rhs``) with ``grid`` blocks."""
        s = self.schedule
        allow_smem(fn, self.smem, carveout=True)
        if self.slots:  # a MonoBatch in slot order: no member list, no staging table
            args = (d, rhs, arrays["jp"], arrays["lu"], arrays["node"], i32(s.n_batches),
                    i32(s.n_nodes), i32(s.slot_stride), i32(self.pitch(d.dtype.itemsize)),
                    i32(self.tile_cells), i32(self.prefetches), i64(n_cells),
                    i64(cell_base), *pivots)
        else:
            args = (d, rhs, arrays["jp"], arrays["lu"], arrays["node"], arrays["stage"], members,
                    starts, i32(s.n_batches), i32(s.n_nodes), i32(s.slot_stride),
                    i32(s.stage_cells.bit_length() - 1), i32(self.tile_cells),
                    i32(self.buffers), i32(self.prefetches), i64(n_cells), i64(cell_base),
                    *pivots)
        call_kernel(fn, (grid,), (self.threads,), args, stream, self.smem)

    def describe(self) -> str:
        s = self.schedule
        return (f"{self.groups} group{'s' if self.groups > 1 else ''} of {self.tile_cells} "
                f"cell{'s' if self.tile_cells > 1 else ''} per block, {self.lanes} lanes per "
                f"cell, {s.batch} nodes per step: "
                f"{s.n_batches} steps for {s.n_nodes} nodes"
                f"{' from the centre' if s.rerooted else ''}, {self.buffers} tile "
                f"buffer{'s' if self.buffers > 1 else ''} per group"
                f"{', next tile prefetched into L2' if self.prefetches else ''}"
                f"{', cells through a member list' if self.listed else ''}"
                f", {self.smem} B shared memory")


def tiled_variants(batch, lanes, cell, reroot=None) -> list[tuple[int, int]]:
    """(batch, lanes) pairs to try, from the options (validated) or the defaults for
    ``cell`` (:meth:`SharedTiles.preferred`, counting steps as ``reroot`` says)."""
    valid = [(kb * v, kb) for kb, v in TILED_VARIANTS]
    if batch is None and lanes is None:
        return SharedTiles.preferred(cell, reroot)
    chosen = [(b, l) for b, l in valid
              if (batch is None or b == batch) and (lanes is None or l == lanes)]
    if not chosen:
        raise ValueError(f"(batch, lanes) must be one of {sorted(valid)}; got batch={batch!r}, "
                         f"lanes={lanes!r}")
    return sorted(chosen, key=lambda bl: -bl[1])[:1] if lanes is None else chosen[:1]
