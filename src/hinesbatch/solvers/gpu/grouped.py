"""The ``grouped`` strategy: per-cell batches whose cells repeat, solved class by class.

A batch built from a few morphologies (256,000 cells drawn from 17 reconstructions) holds
many cells with the same matrix: the same tree and the same couplings ``u`` (and ``l``). A
*class* is such a set of cells (:func:`~hinesbatch.tree.schedules.cell_shapes` with
``couplings=True``: exact, bit for bit). Each class is solved as a shared structure, with
``tiled``'s kernel (``hines_tiled_mono``, :class:`~.strategies.SharedTiles`): its schedule
and couplings are stored once, its cells' values are read in place from the canonical
order through a list of the class's cells, so a solve moves 24 bytes per node in fp64 (d
and rhs in, x out) instead of the 44 that a per-cell structure costs. One launch per class;
the launches are spread over a few streams (forked from and joined to the caller's stream
with events), so that one class's last blocks overlap the next class's first.

Cells of a class need not be adjacent, and a class may hold one cell. The number of classes
is capped (:data:`MAX_CLASSES` launches per solve); ``auto`` picks this strategy only when
the classes are few and large (:mod:`.auto`).
"""
from __future__ import annotations

import numpy as np

from .compile import kernel
from .device import cupy_module, device_properties
from .strategies import (STRATEGIES, SharedTiles, Strategy, optional_positive_int,
                         tiled_variants)

__all__ = ["Grouped", "MAX_CLASSES", "STREAMS"]

#: At most this many classes (one kernel launch each per solve).
MAX_CLASSES = 1024
#: Whether a class's groups ask L2 for their next tile during the sweeps
#: (:data:`.strategies.SharedTiles.PREFETCH`). Not here: measured on the H200 (fp64, 256000
#: real cells, same run, benchmarks/experiments/carry/), 1.873-1.884 ms without, 1.924 with,
#: though each large class alone gains 1.5% (why the classes sharing the device lose it was
#: not investigated).
PREFETCH = False
#: Streams the class launches are spread over.
STREAMS = 4


class Grouped(Strategy):
    """Cells with the same matrix solved together as a shared structure (module docstring).

    Options ``batch``, ``lanes``, ``tile_cells`` and ``groups`` are ``tiled``'s, applied to
    every class (a ``tile_cells`` or ``groups`` that does not fit some class is refused); by
    default each class gets ``tiled``'s default for its cell.
    """

    name = "grouped"
    native_is_canonical = True
    options = ("tile_cells", "groups", "batch", "lanes")

    def __init__(self, part, dtype, device, options, budget):
        from ...tree.schedules import cell_shapes
        from .multi import part_structure

        super().__init__(part, dtype, device, options, budget)
        item = self.dtype.itemsize
        props = self.props = device_properties(device)
        batch, lanes = options.pop("batch", None), options.pop("lanes", None)
        tc = optional_positive_int(options, "tile_cells")
        groups = optional_positive_int(options, "groups")
        classes = cell_shapes(part_structure(part), couplings=True)
        if classes.n_shapes > MAX_CLASSES:
            raise ValueError(f"strategy 'grouped' launches one kernel per class of cells with the "
                             f"same matrix; this batch has {classes.n_shapes} classes (at most "
                             f"{MAX_CLASSES}): use 'fine' or 'auto'")
        reps = classes.representatives
        self.tiles = []
        for k in range(classes.n_shapes):
            cell = reps.cell(k)
            self.tiles.append(SharedTiles.plan(cell, tiled_variants(batch, lanes, cell), 1, tc,
                                               item, props, int(classes.counts[k]), "grouped",
                                               groups, prefetch=PREFETCH))
        self.counts = classes.counts.astype(np.int64)
        self.first = np.concatenate([[0], np.cumsum(self.counts)]).astype(np.int64)
        # members: the part's cells class by class (ascending within a class)
        self.members = np.argsort(classes.shape_of_cell, kind="stable").astype(np.int32)
        # launch order: most work first, so that the small classes fill the tails
        work = np.array([t.schedule.n_batches * c for t, c in zip(self.tiles, self.counts)])
        self.order = np.argsort(-work, kind="stable")
        self._streams = None  # (streams, their join events, the fork event), at the first solve
        self._launches = None  # per class in launch order: kernel, grid, arrays; first solve

    def structure_bytes(self):
        return (sum(t.structure_bytes(self.dtype.itemsize) for t in self.tiles)
                + 4 * self.members.size + 8 * (self.part.n_cells + 1))

    def _host_arrays(self):
        out = {"members": self.members,
               "offsets": (self.part.offsets if not self.part.mono else
                           np.arange(self.part.n_cells + 1, dtype=np.int64) * self.part.n)}
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
        streams, joins = self._fork(stream)
        for i, (t, fn, grid, arrays, members, count) in enumerate(self._class_launches(dev)):
            t.launch(fn, grid, d, rhs, arrays, members, dev["offsets"], count, p.cell_start,
                     pivots, streams[i % len(streams)])
        for s, e in zip(streams, joins):
            e.record(s)
            stream.wait_event(e)

    def _class_launches(self, dev) -> list:
        """Per class, in launch order: its plan, kernel, grid, schedule arrays, member list and
        cell count (built once: the grids need the kernels' attributes, device queries)."""
        if self._launches is None:
            self._launches = []
            for k in self.order.tolist():
                t = self.tiles[k]
                fn = kernel(self.device, "hines_tiled.cu", t.template, self.dtype)
                count, first = int(self.counts[k]), int(self.first[k])
                arrays = {key: dev[(k, key)] for key in ("jp", "lu", "node", "stage")}
                self._launches.append((t, fn, t.grid(fn, self.props, count), arrays,
                                       dev["members"][first:], count))
        return self._launches

    solve_native = solve_canonical

    def describe(self):
        sizes = [t.schedule.n_nodes for t in self.tiles]
        smem = [t.smem for t in self.tiles]
        variants = sorted({(t.lanes, t.batch) for t in self.tiles})
        return (f"grouped ({len(self.tiles)} classes of cells with the same matrix, "
                f"{min(sizes)}-{max(sizes)} nodes, {self.counts.min()}-{self.counts.max()} cells "
                f"each; per class tiled's shared-structure kernel, (lanes, nodes per step) "
                f"{', '.join(f'({a}, {b})' for a, b in variants)}, "
                f"{min(t.tile_cells for t in self.tiles)}-"
                f"{max(t.tile_cells for t in self.tiles)} cells per tile, "
                f"{min(t.groups for t in self.tiles)}-{max(t.groups for t in self.tiles)} tiles "
                f"per block, {min(smem)}-{max(smem)} "
                f"B shared memory; {min(STREAMS, len(self.tiles))} streams)")


STRATEGIES[Grouped.name] = Grouped
