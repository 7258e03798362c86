"""The ``grouped`` strategy: per-cell batches whose cells repeat, solved class by class.

A batch built from a few morphologies (256,000 cells drawn from 17 reconstructions) holds
many cells with the same matrix: the same tree and the same couplings ``u`` (and ``l``). A
*class* is such a set of cells (:func:`~hinesbatch.tree.schedules.cell_shapes` with
``couplings=True``: exact, bit for bit). Each class is solved as a shared structure, with
``tiled``'s kernel (``hines_tiled_mono``, :class:`~.shared_tiles.SharedTiles`): its schedule
and couplings are stored once, its cells' values are read in place from the canonical
order through a list of the class's cells and of where their values start (one load per
cell, kept in shared memory with the tile), so a solve moves 24 bytes per node in fp64 (d
and rhs in, x out) instead of the 44 that a per-cell structure costs. One launch per
class, spread over a few streams (forked from and joined to the caller's stream with events),
so that one class's last blocks overlap the next class's first; or all classes in one launch
(:mod:`.classes_launch`: one persistent block per SM takes class after class), the default for a
batch of two classes or more (:data:`ONE_LAUNCH`).

Cells of a class need not be adjacent, and a class may hold one cell. The number of classes
is capped (:data:`MAX_CLASSES` launches per solve); ``auto`` picks this strategy only when
the classes are few and large (:mod:`hinesbatch.solvers.gpu.auto`).
"""
from __future__ import annotations

import numpy as np

from .. import options as check
from ..device import blocks_per_sm, cupy_module, device_properties
from ..kernel_build import kernel
from .base import Strategy, allow_smem, call_kernel, i32, i64
from .classes_launch import FIELDS, ClassesLaunch, block_arrangement
from .shared_tiles import SharedTiles, tiled_variants

__all__ = ["Grouped", "MAX_CLASSES", "STREAMS", "ONE_LAUNCH", "one_launch_by_default"]

#: At most this many classes (one kernel launch each per solve).
MAX_CLASSES = 1024
#: Whether a class's groups ask L2 for their next tile during the sweeps
#: (:data:`.shared_tiles.SharedTiles.PREFETCH`). Not here: on the H200 (fp64, 256000 real
#: cells, measured side by side) 1.873-1.884 ms without, 1.924 with, though each large class
#: alone gains 1.5 % (the classes sharing the device lose it).
PREFETCH = False
#: Streams the class launches are spread over.
STREAMS = 4
#: Whether a batch of two classes or more is solved in one launch when nothing stands against
#: it (the ``one_launch`` option's default; :mod:`.classes_launch`). Faster on every batch of
#: several classes in ``bench multi`` (H100, fp64: 256000 real cells 1.643 against 1.741 ms,
#: 2560 0.047 against 0.088, 10 random cells 0.015 against 0.039); one class has no other
#: class's tail to fill, and its arrangement for a block with the SM to itself is slower on
#: small batches (100 x ca1: 0.041 against 0.017 ms). compute-sanitizer's racecheck reports
#: on the one launch are the tool's (:mod:`.classes_launch`).
ONE_LAUNCH = True


def one_launch_by_default(n_classes: int) -> bool:
    """Whether ``grouped`` with no ``one_launch``, ``tile_cells`` or ``groups`` option asks for
    the one launch for a batch of ``n_classes`` classes (:data:`ONE_LAUNCH`: two or more; it
    still falls back to one launch per class when a class's width is not compiled into it)."""
    return ONE_LAUNCH and n_classes > 1


class Grouped(Strategy):
    """Cells with the same matrix solved together as a shared structure (module docstring).

    Options ``batch``, ``lanes``, ``tile_cells``, ``groups`` and ``reroot`` are ``tiled``'s,
    applied to every class (a ``tile_cells`` or ``groups`` that does not fit some class is
    refused); by default each class gets ``tiled``'s default for its cell. ``one_launch=True``: all
    classes in one launch (:mod:`.classes_launch`), refused when a class's width is not one that
    launch is compiled for; ``False``: one launch per class; by default (:data:`ONE_LAUNCH`)
    one launch for a batch of two classes or more when neither ``tile_cells`` nor ``groups`` is
    given and every class's width is compiled into it, else one launch per class.
    """

    name = "grouped"
    native_is_canonical = True
    options = ("tile_cells", "groups", "batch", "lanes", "reroot", "one_launch")

    def __init__(self, part, dtype, device, options, budget):
        from ....tree.schedules import cell_shapes

        super().__init__(part, dtype, device, options, budget)
        item = self.dtype.itemsize
        props = self.props = device_properties(device)
        batch, lanes = options.pop("batch", None), options.pop("lanes", None)
        tc = check.optional(check.positive_int, "tile_cells", options.pop("tile_cells", None))
        groups = check.optional(check.positive_int, "groups", options.pop("groups", None))
        reroot = check.optional(check.flag, "reroot", options.pop("reroot", None))
        one = check.optional(check.flag, "one_launch", options.pop("one_launch", None))
        classes = cell_shapes(part.structure, couplings=True)
        if classes.n_shapes > MAX_CLASSES:
            raise ValueError(f"strategy 'grouped' launches one kernel per class of cells with the "
                             f"same matrix; this batch has {classes.n_shapes} classes (at most "
                             f"{MAX_CLASSES}): use 'fine' or 'auto'")
        reps = classes.representatives
        self.tiles = []
        for k in range(classes.n_shapes):
            cell = reps.cell(k)
            self.tiles.append(SharedTiles.plan(cell, tiled_variants(batch, lanes, cell, reroot),
                                               1, tc, item, props, int(classes.counts[k]),
                                               "grouped", groups, prefetch=PREFETCH,
                                               reroot=reroot, listed=True))
        self.counts = classes.counts.astype(np.int64)
        self.first = np.concatenate([[0], np.cumsum(self.counts)]).astype(np.int64)
        # members: the part's cells class by class (ascending within a class)
        self.members = np.argsort(classes.shape_of_cell, kind="stable").astype(np.int32)
        # launch order: most work first, so that the small classes fill the tails
        work = np.array([t.schedule.n_batches * c for t, c in zip(self.tiles, self.counts)])
        self.order = np.argsort(-work, kind="stable")
        self.one = None  # the one launch of every class (ClassesLaunch), when it serves
        if one or (one is None and tc is None and groups is None
                   and one_launch_by_default(classes.n_shapes)):
            blocks = [block_arrangement(reps.cell(k),
                                        tiled_variants(batch, lanes, reps.cell(k), reroot),
                                        item, props, int(classes.counts[k]), tc, groups, reroot)
                      for k in range(classes.n_shapes)]
            if all(b is not None for b in blocks):
                self.one = ClassesLaunch(blocks, self.counts, self.first, self.order)
            elif one:
                k = next(k for k, b in enumerate(blocks) if b is None)
                raise ValueError(f"one_launch=True: class {k} ({reps.cell(k).n_nodes} nodes) "
                                 f"is solved {self.tiles[k].lanes} lanes per cell and "
                                 f"{self.tiles[k].batch} nodes per step; the one launch is "
                                 f"compiled for one node per lane and step with 8, 16 or 32 "
                                 f"lanes (give lanes and batch, or one_launch=False)")
        self._home = None  # the one launch's blocks' first classes (device), at the first solve
        self._streams = None  # (streams, their join events, the fork event), at the first solve
        self._launches = None  # per class in launch order: kernel, grid, arrays; first solve

    def structure_bytes(self):
        tiles = self._active_tiles()
        extra = (len(tiles) * (8 * FIELDS + 4) + 4 * 32 * self.props["sm_count"]  # table,
                 if self.one else 0)  # counters, blocks' first classes
        return (sum(t.structure_bytes(self.dtype.itemsize) for t in tiles) + extra
                + 12 * self.members.size)

    def _host_arrays(self):
        offsets = (self.part.offsets if not self.part.mono else
                   np.arange(self.part.n_cells + 1, dtype=np.int64) * self.part.n)
        # members and where their values start (offsets[members]: one load per cell)
        out = {"members": self.members, "starts": offsets[self.members].astype(np.int64)}
        if self.one:
            out.update(self.one.host_arrays(self.dtype))
            out["counters"] = np.zeros(len(self.one.tiles), np.int32)
            return out
        for k, t in enumerate(self.tiles):
            out.update({(k, key): value for key, value in t.host_arrays(self.dtype).items()})
        return out

    def _fork(self, stream):
        cupy = cupy_module()
        if self._streams is None:
            with cupy.cuda.Device(self.device):
                n = min(STREAMS, len(self.tiles))
                self._streams = ([cupy.cuda.Stream(non_blocking=True) for _ in range(n)],
                                 [cupy.cuda.Event(block=False, disable_timing=True)
                                  for _ in range(n)],
                                 cupy.cuda.Event(block=False, disable_timing=True))
        streams, joins, fork = self._streams
        fork.record(stream)
        for s in streams:
            s.wait_event(fork)
        return streams, joins

    def solve_canonical(self, d, rhs, pivots, stream):
        p, dev = self.part, self._arrays()
        if p.n_cells == 0:
            return
        if self.one:
            self._solve_in_one_launch(d, rhs, pivots, stream, dev)
            return
        streams, joins = self._fork(stream)
        for i, (t, fn, grid, arrays, members, starts, count) in enumerate(
                self._class_launches(dev)):
            t.launch(fn, grid, d, rhs, arrays, members, starts, count, p.cell_start, pivots,
                     streams[i % len(streams)])
        for s, e in zip(streams, joins):
            e.record(s)
            stream.wait_event(e)

    def _class_launches(self, dev) -> list:
        """Per class, in launch order: its plan, kernel, grid, schedule arrays, member list,
        starts and cell count (built once: the grids need the kernels' attributes, device
        queries)."""
        if self._launches is None:
            self._launches = []
            for k in self.order.tolist():
                t = self.tiles[k]
                fn = kernel(self.device, "hines_tiled.cu", t.template, self.dtype)
                count, first = int(self.counts[k]), int(self.first[k])
                arrays = {key: dev[(k, key)] for key in ("jp", "lu", "node", "stage")}
                self._launches.append((t, fn, t.grid(fn, self.props, count), arrays,
                                       dev["members"][first:], dev["starts"][first:], count))
        return self._launches

    def _solve_in_one_launch(self, d, rhs, pivots, stream, dev):
        one = self.one
        fn = kernel(self.device, "hines_tiled.cu", "hines_tiled_classes<{T}>", self.dtype)
        cupy = cupy_module()
        if self._home is None:  # at the first solve: the grid needs the kernel's attributes
            allow_smem(fn, one.smem, carveout=True)
            blocks = blocks_per_sm(fn, one.threads, one.smem, self.props,
                                   SharedTiles.GROUP_BARRIERS) * self.props["sm_count"]
            with cupy.cuda.Device(self.device):
                self._home = cupy.asarray(one.homes(blocks))
        counters = dev["counters"]  # zeroed on the stream before every solve
        cupy.cuda.runtime.memsetAsync(counters.data.ptr, 0, counters.nbytes, stream.ptr)
        call_kernel(fn, (self._home.size,), (one.threads,),
              (d, rhs, dev["jp"], dev["lu"], dev["node"], dev["stage"], dev["members"],
               dev["starts"], dev["classes"], i32(len(one.tiles)), self._home, counters,
               i64(self.part.cell_start), *pivots), stream, one.smem)

    solve_native = solve_canonical

    def _active_tiles(self) -> list:
        """The classes' arrangements as solved: for the one launch, or one launch each."""
        return self.one.tiles if self.one else self.tiles

    def describe(self):
        tiles = self._active_tiles()
        sizes = [t.schedule.n_nodes for t in tiles]
        smem = [t.smem for t in tiles]
        variants = sorted({(t.lanes, t.batch) for t in tiles})
        return (f"grouped ({len(tiles)} classes of cells with the same matrix, "
                f"{min(sizes)}-{max(sizes)} nodes, {self.counts.min()}-{self.counts.max()} cells "
                f"each; per class tiled's shared-structure sweeps, (lanes, nodes per step) "
                f"{', '.join(f'({a}, {b})' for a, b in variants)}, "
                f"{min(t.tile_cells for t in tiles)}-{max(t.tile_cells for t in tiles)} cells "
                f"per tile, {min(t.groups for t in tiles)}-{max(t.groups for t in tiles)} tiles "
                f"per block, {min(smem)}-{max(smem)} B shared memory; "
                + (self.one.describe() if self.one else
                   f"one launch per class on {min(STREAMS, len(tiles))} streams") + ")")

