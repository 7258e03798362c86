"""The ``tiled`` strategy: canonical values staged through shared memory by tiles of cells."""
from __future__ import annotations

import numpy as np

from .. import options as check
from ..device import cupy_module, device_properties
from ..device_parts import Part
from ..kernel_build import kernel
from .base import NULL, Strategy, allow_smem, call_kernel, i32, i64
from .shared_tiles import SharedTiles, tiled_variants

__all__ = ["Tiled"]


class Tiled(Strategy):
    """Canonical values staged through shared memory by tiles of cells (hines_tiled.cu).

    Shared structure: ``lanes`` lanes of a warp work on one cell and eliminate ``batch``
    independent nodes per step of the schedule (:mod:`hinesbatch.tree.schedules.tiled`),
    ``batch // lanes`` each;
    ``tile_cells`` cells per tile (a multiple of ``32 // lanes``), ``groups`` tiles solved
    side by side in a block, which stages the schedule once for them; with one group and
    ``buffers=1`` (default) one block per tile is launched; otherwise only the blocks that stay
    resident, whose groups go on to further tiles (several groups start out of phase; with
    ``buffers=2`` a group loads its next tile while it solves the current one). Two buffers
    halve the tiles an SM holds, and the kernel is bound by shared-memory traffic, not by
    device memory: on the H200 the best two-buffer configuration took 1.25 ms against 1.04 ms
    for the best one-buffer one (256000 cells of 313 nodes; 0.245 against 0.140 ms for 3000
    of 1405 nodes), although at a few equal (batch, lanes, threads) two buffers were up to 6%
    (17%) faster (benchmarks/results/h200/hines_tiled.md). ``reroot``: eliminate the cell
    from its centre (True), from its own root (False), or from the one that takes fewer
    steps (default; :meth:`SharedTiles.rerooted`). ``listed``: read the cells through an
    identity member list, the kernel variant ``grouped`` runs (one buffer; by default with one
    group and one buffer when :data:`SharedTiles.LISTED_ONE_GROUP`). Per-cell structures: one
    lane per cell, ``tile_cells`` cells per one-warp block.

    Native layout of a shared structure (:meth:`native_shape`): each cell's values in its
    schedule's slot order, ``pitch`` words per cell, so that a tile's cells are moved by bulk
    copies (``hines_tiled_slots``, planned as :meth:`slot_plan`) instead of one load and one
    store per node; canonical when the width is not among :data:`..kernel_build.SLOT_VARIANTS` or
    ``buffers=2``.
    """

    name = "tiled"
    options = ("tile_cells", "groups", "batch", "lanes", "buffers", "reroot", "listed")

    def __init__(self, part, dtype, device, options, budget):
        super().__init__(part, dtype, device, options, budget)
        item = np.dtype(dtype).itemsize
        self.limit = device_properties(device)["smem_per_block_optin"]
        batch, lanes = options.pop("batch", None), options.pop("lanes", None)
        tc = check.optional(check.positive_int, "tile_cells", options.pop("tile_cells", None))
        groups = check.optional(check.positive_int, "groups", options.pop("groups", None))
        reroot = check.optional(check.flag, "reroot", options.pop("reroot", None))
        listed = check.optional(check.flag, "listed", options.pop("listed", None))
        self._grid = None  # shared structure: blocks per launch, set at the first solve
        buffers = check.optional(check.one_of, "buffers", options.pop("buffers", None),
                                 choices=(1, 2))
        self._slots = None  # the plan in slot order (SharedTiles, or False), when first asked
        self._slot_dev = None  # its schedule and node -> slot map on the device, when first used
        self._slot_grid = None
        if part.mono:
            self._asked = (tc, groups, reroot)
            props = device_properties(device)
            if listed and buffers == 2:
                raise ValueError("listed=True reads the cells through a member list with one "
                                 "tile buffer; got buffers=2")
            self.tiles = SharedTiles.plan(part.cell, tiled_variants(batch, lanes, part.cell,
                                                                    reroot),
                                          buffers or 1, tc, item, props, part.n_cells,
                                          groups=groups, reroot=reroot, listed=listed)
        else:
            if listed:
                raise ValueError("listed is for shared structures (MonoBatch) only: cells that "
                                 "differ are solved one lane per cell")
            if reroot:
                raise ValueError("reroot is for shared structures (MonoBatch) only: cells that "
                                 "differ are solved one lane per cell")
            if buffers not in (None, 1):
                raise ValueError("buffers=2 is for shared structures (MonoBatch) only")
            if groups not in (None, 1):
                raise ValueError("groups is for shared structures (MonoBatch) only")
            per_node = 4 + item * (3 if part.symmetric else 4)  # d, rhs, u, (l), parent
            if part.n * per_node > self.limit:
                raise ValueError(f"strategy 'tiled' needs {part.n * per_node} bytes of shared "
                                 f"memory for cells of {part.n} nodes but a block may use "
                                 f"{self.limit}; use 'interleaved'")
            if tc is not None and tc > 32:
                raise ValueError(f"tile_cells must be at most 32 for per-cell structures, got {tc}")
            self.tile_cells = int(tc or 4)
            self.tile_first, nodes = self._tiles(part, self.tile_cells, self.limit // per_node)
            self.max_nodes = nodes
            self.smem = nodes * per_node

    @staticmethod
    def _tiles(part: Part, tc: int, max_nodes: int):
        """Greedy tiles of at most ``tc`` consecutive cells and a bounded node count."""
        sizes = part.sizes.astype(np.int64)
        budget = min(max_nodes, max(int(sizes.max(initial=1)),
                                    int(np.ceil(tc * sizes.mean())) if sizes.size else 1))
        first, count, nodes, largest = [0], 0, 0, 0
        for c, size in enumerate(sizes.tolist()):
            if count == tc or (count and nodes + size > budget):
                first.append(c)
                largest = max(largest, nodes)
                count, nodes = 0, 0
            count += 1
            nodes += size
        largest = max(largest, nodes)
        if part.n_cells:
            first.append(part.n_cells)
        return np.asarray(first, dtype=np.int32), largest

    def structure_bytes(self):
        p = self.part
        if p.mono:  # the schedule of slot order too, once asked for; the member list
            return (sum(t.structure_bytes(self.dtype.itemsize) for t in (self.tiles, self._slots)
                        if t) + (12 * p.n_cells if self.tiles.listed else 0))
        return p.n_nodes * (4 + 2 * self.dtype.itemsize) + 12 * p.n_cells

    def _host_arrays(self):
        p = self.part
        if p.mono:
            out = self.tiles.host_arrays(self.dtype)
            if self.tiles.listed:  # every cell, in order, and where its values start
                out["members"] = np.arange(p.n_cells, dtype=np.int32)
                out["starts"] = np.arange(p.n_cells, dtype=np.int64) * p.n
            return out
        u = p.u.astype(self.dtype)
        return {"parent": p.parent, "u": u, "l": u if p.symmetric else p.l.astype(self.dtype),
                "offsets": p.offsets, "tiles": self.tile_first}

    def solve_canonical(self, d, rhs, pivots, stream):
        p, dev = self.part, self._arrays()
        if p.n_cells == 0:
            return
        if p.mono:
            t = self.tiles
            fn = kernel(self.device, "hines_tiled.cu", t.template, self.dtype)
            if self._grid is None:  # once: the kernel's attributes are device queries
                self._grid = t.grid(fn, device_properties(self.device), p.n_cells)
            members, starts = ((dev["members"], dev["starts"]) if t.listed else (NULL, NULL))
            t.launch(fn, self._grid, d, rhs, dev, members, starts, p.n_cells, p.cell_start,
                     pivots, stream)
        else:
            fn = kernel(self.device, "hines_tiled.cu", "hines_tiled_multi<{T}>", self.dtype)
            allow_smem(fn, self.smem, carveout=True)
            call_kernel(fn, (self.tile_first.size - 1,), (32,),
                  (d, rhs, dev["parent"], dev["u"], dev["l"], dev["offsets"], dev["tiles"],
                   i32(self.max_nodes), i64(p.cell_start), *pivots), stream, self.smem)

    # -- the native layout: slot order ---------------------------------------------------------
    def slot_plan(self):
        """The plan for values in slot order (the same width and options as :attr:`tiles`,
        planned with the mbarriers' shared memory), or ``None`` where the native layout is
        the canonical one."""
        if self._slots is None:
            self._slots = False
            if self.part.mono:
                t = self.tiles
                try:
                    self._slots = SharedTiles.plan(
                        self.part.cell, [(t.batch, t.lanes)], t.buffers, self._asked[0],
                        self.dtype.itemsize, device_properties(self.device), self.part.n_cells,
                        groups=self._asked[1], slots=True, reroot=self._asked[2])
                except ValueError:  # a width or buffers without the slot-order kernel
                    pass
        return self._slots or None

    @property
    def native_is_canonical(self) -> bool:
        return self.slot_plan() is None

    def native_shape(self):
        t = self.slot_plan()
        if t is None:
            return self.part.values_shape
        return (self.part.n_cells, t.pitch(self.dtype.itemsize))

    def _slot_arrays(self) -> dict:
        """The slot plan's schedule as its kernel reads it, and each node's slot ("slot"), on
        the device (uploaded once)."""
        if self._slot_dev is None:
            t, cupy = self.slot_plan(), cupy_module()
            with cupy.cuda.Device(self.device):
                self._slot_dev = {key: cupy.asarray(value)
                                  for key, value in t.host_arrays(self.dtype).items()
                                  if key != "stage"}
                self._slot_dev["slot"] = cupy.asarray(t.schedule.slot[:self.part.n])
        return self._slot_dev

    def to_native(self, a, stream):
        if self.native_is_canonical:
            return a.copy()
        cupy = cupy_module()
        with cupy.cuda.Device(self.device), stream:
            out = cupy.zeros(self.native_shape(), dtype=a.dtype)  # padding: zeros
            out[:, self._slot_arrays()["slot"]] = a
        return out

    def from_native(self, a, stream):
        if self.native_is_canonical:
            return a.copy()
        cupy = cupy_module()
        with cupy.cuda.Device(self.device), stream:
            return cupy.ascontiguousarray(a[:, self._slot_arrays()["slot"]])

    def solve_native(self, d, rhs, pivots, stream):
        t = self.slot_plan()
        if t is None:
            self.solve_canonical(d, rhs, pivots, stream)
            return
        p = self.part
        if p.n_cells == 0:
            return
        for name, a in (("d", d), ("rhs", rhs)):  # bulk copies start on 16 bytes
            if a.data.ptr % 16:
                raise ValueError(f"{name} of the native layout must start on 16 bytes (bulk "
                                 f"copies); got an address {a.data.ptr % 16} bytes past that "
                                 f"(a view into a larger array?): pass a copy")
        fn = kernel(self.device, "hines_tiled.cu", t.template, self.dtype)
        if self._slot_grid is None:  # once: the kernel's attributes are device queries
            self._slot_grid = t.grid(fn, device_properties(self.device), p.n_cells)
        t.launch(fn, self._slot_grid, d, rhs, self._slot_arrays(), NULL, NULL, p.n_cells,
                 p.cell_start, pivots, stream)

    def describe(self):
        if self.part.mono:
            t = self.slot_plan()
            native = (f"; native layout: slot order, {t.describe()}" if t else "")
            return f"tiled ({self.tiles.describe()}{native})"
        return (f"tiled ({self.tile_first.size - 1} tiles of <= {self.tile_cells} cells, "
                f"{self.smem} B shared memory)")
