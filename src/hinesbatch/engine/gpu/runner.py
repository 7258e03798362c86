"""The GPU engine's host side: the batch laid out per device, and the epoch loop.

:meth:`hinesbatch.Simulation.run` initializes on the CPU (NEURON's ``finitialize``, with the
same code as the CPU backends) and hands the state to :class:`GpuRunner`, which

1. spreads the cells over the devices in contiguous ranges of about equal node counts;
2. keeps one copy of each distinct cell structure (parents, children, matrix
   coefficients, the solve's chain records) per device, so copies of a morphology share it;
3. compiles the epoch kernel (:mod:`.source`) for the model's mechanisms and precision;
4. steps in epochs. An epoch is as long as no spike of the epoch can act within it (the
   smallest NetCon delay from a cell's threshold source; a batch without such NetCons runs
   :data:`MAX_EPOCH` steps at once). Before an epoch, the host's event queue (NEURON's rules,
   :mod:`hinesbatch.network`) gives the events that act in it, each with its step; the
   kernel applies them at that step. After it, the spikes detected on the devices are
   queued through their NetCons in time order, exactly as the CPU engine does;
5. copies the recordings and the final state back.

A NetCon delay below dt/2 lets a spike act in the step that detected it: the engine then
runs that step in two launches (detection, then the step with the new events).
"""
from __future__ import annotations

import hashlib
import math
import time

import numpy as np

from ...errors import DeviceMemoryError
from ...network import SPIKE_OFFSET, deliver
from ..artificial import ArtificialCell
from .source import META, field_roles, kernel_args, kernel_source

__all__ = ["MAX_EPOCH", "META", "GpuRunner", "structures"]

#: Longest epoch of one launch [steps].
MAX_EPOCH = 8192
#: Blocks of a size that a multiprocessor must be able to hold at once, by block size
#: (``__launch_bounds__``): a one-warp block of a small cell is latency-bound, so the
#: multiprocessor's most blocks (32) are worth a cap of 64 registers a thread. NEURON's
#: ringtest (16 384 cells of 67-131 nodes, 400 steps) on an H100: 72 registers and 28
#: blocks 0.126 s, the cap 0.107 s (docs/decisions/023-gpu-small-cells.md).
MIN_BLOCKS = {32: 32}
_INT = np.int32
#: Threads a cell for small cells, by the largest cell's nodes: (at most nodes, threads).
#: A step of a small cell is mostly its solve's chain levels, one to a few chains each, so
#: a warp whose groups of lanes step several cells issues the levels' instructions once for
#: all of them. NEURON's ringtest (10 ms, 16 384 cells) on an H200, against the cells' own
#: blocks: branch 16-32 (35-67 nodes) 8 lanes 0.043 s, 16 lanes 0.046-0.050, 32 lanes
#: 0.057-0.071; branch 32-64 (67-131 nodes) 16 lanes 0.071 s against 0.083; branch 64-96
#: (131-195 nodes) 16 lanes 0.148 s against 0.179-0.192 with 64 threads
#: (docs/decisions/028-gpu-cells-per-warp.md).
SMALL_CELL_THREADS = ((72, 8), (200, 16))
#: Threads of a block whose cells take fewer than 32 threads each (groups of a warp's lanes):
#: 64 and 128 measured alike, 32 slower (a block's shared memory reserve).
GROUP_BLOCK_THREADS = 64


#: A cell whose trunk (the longest path from its root to a leaf) has at least this many
#: nodes has the trunk solved by one warp in a few dozen dependent steps (see
#: :func:`_structure`) instead of one record after another, when the device runs it so
#: (``device.trunk_scan``) and the block has at least ``TRUNK_MIN_THREADS`` threads.
TRUNK_MIN = 16
#: A one-warp block's barriers are cheap and 32 such blocks keep a multiprocessor busy, so
#: there the scan's work on all 32 lanes costs more than the chain latency it saves: NEURON's
#: ringtest (cells of 67-131 nodes, 32 threads a block) took 0.097 s with the scan and
#: 0.079 s without on an H200 (docs/decisions/026-gpu-trunk-scan.md, 027-gpu-divisions-and-
#: chain-registers.md).
TRUNK_MIN_THREADS = 64
#: Reals of a block's scratch for the trunk's scan: 32 lanes' 2 x 2 products and their
#: affine maps (after v, d and rhs, in shared or device memory).
SCAN_REALS = 6 * 32


def _trunk(parent: np.ndarray, kids: np.ndarray, start: np.ndarray,
           counts: np.ndarray) -> list:
    """The nodes of the longest path from the root (node 0) to a leaf, root first: from each
    node on, the child with the most nodes below it (the first of equals)."""
    n = parent.size
    height = np.ones(n, dtype=np.int64)
    for i in range(n - 1, 0, -1):
        height[parent[i]] = max(height[parent[i]], height[i] + 1)
    path = [0]
    while counts[path[-1]]:
        below = kids[start[path[-1]]:start[path[-1]] + counts[path[-1]]]
        path.append(int(below[np.argmax(height[below])]))
    return path


def _structure(lay, cl, trunk_min: int = 0) -> dict:
    """The arrays of one cell's structure (local node indices).

    Per node: ``info`` (parent, first child entry, child count, 0) and a, b, cm/dt; per
    child entry (children ascending): the child and its a. The solve works on *chains*:
    maximal runs of nodes each of which (but the last) has one child. Elimination takes
    the chains by height (a chain after every chain below it), back substitution by depth
    from the root; one thread runs a whole chain, so a step needs a barrier per chain
    level, not per node. A chain's work is a contiguous run of *records*: elimination
    records (parent, child, a of the child, b of the child), from the chain's bottom up and,
    per node, children in NEURON's (decreasing) order; back-substitution records (node,
    parent, b), top down. ``*_range`` holds (first, end) record of each chain, in level
    order, and ``*_lev`` where each level starts in it.

    With ``trunk_min`` > 0 and a trunk of at least that many nodes, the trunk is taken out
    of the chains: the chains cover the subtrees hanging from it; a last elimination level
    has, per trunk node with such subtrees, the records that take their tops' terms; then
    the kernel eliminates the trunk by a scan (``tr_node``: its nodes from the leaf up,
    ``tr_ab``: each node's a and b), and substitutes back along it before the chains.
    Otherwise ``tr_node`` is empty and every node is on a chain, in NEURON's order.
    """
    sl, n = slice(cl.start, cl.stop), cl.stop - cl.start
    parent = np.where(lay.parent[sl] < 0, -1, lay.parent[sl] - cl.start).astype(np.int64)
    a, b = lay.a[sl], lay.b[sl]
    kids = np.argsort(parent[1:], kind="stable") + 1          # children by parent, ascending
    counts = np.bincount(parent[1:], minlength=n)
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    trunk = _trunk(parent, kids, start, counts) if trunk_min > 0 else []
    if len(trunk) < max(trunk_min, 1):
        trunk = []
    on = np.zeros(n, dtype=bool)
    on[trunk] = True
    if trunk:
        tops = [i for i in range(1, n) if not on[i] and (on[parent[i]] or counts[parent[i]] != 1)]
    else:
        tops = [0] + [i for i in range(1, n) if counts[parent[i]] != 1]
    chain_of = np.empty(n, dtype=np.int64)
    chains = []
    for c, top in enumerate(tops):
        i, nodes = top, []
        while True:
            nodes.append(i)
            chain_of[i] = c
            if counts[i] != 1:
                break
            i = int(kids[start[i]])
        chains.append(nodes)
    n_chains = len(chains)
    chain_parent = np.array([-1 if t == 0 or on[parent[t]] else int(chain_of[parent[t]])
                             for t in tops], dtype=np.int64)
    depth = np.zeros(n_chains, dtype=np.int64)
    for c in range(n_chains):               # parents' chains come first: tops ascend
        if chain_parent[c] >= 0:
            depth[c] = depth[chain_parent[c]] + 1
    height = np.zeros(n_chains, dtype=np.int64)
    for c in range(n_chains - 1, -1, -1):
        p = chain_parent[c]
        if p >= 0:
            height[p] = max(height[p], height[c] + 1)
    el, el_range = [], []
    for c in np.argsort(height, kind="stable"):
        first = len(el)
        for i in reversed(chains[c]):
            for k in reversed(kids[start[i]:start[i] + counts[i]]):
                el.append((i, k, a[k], b[k]))
        el_range.append((first, len(el)))
    levels = lambda key: (np.searchsorted(np.sort(key), np.arange(key.max() + 2))
                          if key.size else np.zeros(1, dtype=np.int64))
    el_lev = levels(height)
    if trunk:          # the trunk's nodes take their subtrees' terms, in NEURON's order
        for q in trunk:
            first = len(el)
            for k in reversed(kids[start[q]:start[q] + counts[q]]):
                if not on[k]:
                    el.append((q, k, a[k], b[k]))
            if len(el) > first:
                el_range.append((first, len(el)))
        if len(el_range) > el_lev[-1]:
            el_lev = np.append(el_lev, len(el_range))
    bs, bs_range = [], []
    for c in np.argsort(depth, kind="stable"):
        first = len(bs)
        for i in chains[c]:
            bs.append((i, parent[i], b[i]))
        bs_range.append((first, len(bs)))
    bs_range += [(len(bs), len(bs))] * (len(el_range) - len(bs_range))   # one base for both
    el = np.array(el, dtype=np.float64).reshape(-1, 4)
    bs = np.array(bs, dtype=np.float64).reshape(-1, 3)
    info = np.zeros((n, 4), dtype=_INT)
    info[:, 0], info[:, 1], info[:, 2] = parent, start, counts
    up = np.array(trunk[::-1], dtype=np.int64)          # the trunk from its leaf up
    return {"n": n, "info": info, "a": a, "b": b, "capd": lay.capd[sl],
            "child_idx": kids.astype(_INT), "child_a": a[kids],
            "el_pc": el[:, :2].astype(_INT), "el_ab": el[:, 2:],
            "el_range": np.array(el_range, dtype=_INT).reshape(-1, 2),
            "el_lev": el_lev.astype(_INT),
            "bs_ip": bs[:, :2].astype(_INT), "bs_b": bs[:, 2],
            "bs_range": np.array(bs_range, dtype=_INT).reshape(-1, 2),
            "bs_lev": levels(depth).astype(_INT),
            "tr_node": up.astype(_INT), "tr_ab": np.stack([a[up], b[up]], axis=1).reshape(-1, 2)}


def structures(lay, trunk_min: int = 0) -> tuple[list, np.ndarray]:
    """The distinct structures of a layout and each cell's structure id (``trunk_min`` as
    in :func:`_structure`)."""
    keys, out, ids = {}, [], np.empty(len(lay.cells), dtype=_INT)
    for c, cl in enumerate(lay.cells):
        a = slice(cl.start, cl.stop)
        h = hashlib.sha1()
        local = np.where(lay.parent[a] < 0, -1, lay.parent[a] - cl.start)
        for arr in (local, lay.a[a], lay.b[a], lay.capd[a]):   # what _structure reads
            h.update(np.ascontiguousarray(arr).tobytes())
        key = h.hexdigest()
        if key not in keys:
            keys[key] = len(out)
            out.append(_structure(lay, cl, trunk_min))
        ids[c] = keys[key]
    return out, ids


class _Part:
    """The cells ``[c0, c1)`` on one device: their arrays there and the maps to them."""

    def __init__(self, runner, device, c0: int, c1: int):
        self.device, self.c0, self.c1 = device, c0, c1
        sim, lay, run = runner.sim, runner.lay, runner.run_arrays
        real = runner.real
        cells = lay.cells[c0:c1]
        self.n_cells = c1 - c0
        self.node0 = cells[0].start
        n_nodes = cells[-1].stop - self.node0
        sid = runner.struct_ids[c0:c1]
        used = sorted({int(x) for x in sid})
        local = {s: k for k, s in enumerate(used)}
        structs = [runner.structs[s] for s in used]

        def base(key):
            sizes = [len(st[key]) for st in structs]
            return np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(_INT)

        meta = np.stack([base("a"), [st["n"] for st in structs], base("el_range"),
                         base("el_lev"), [st["el_lev"].size - 1 for st in structs],
                         base("bs_lev"), [st["bs_lev"].size - 1 for st in structs],
                         base("tr_node"), [st["tr_node"].size for st in structs]], axis=1)
        self.n_max = int(max(st["n"] for st in structs))
        self.n_levels = int(meta[:, 4].max() + meta[:, 6].max())
        self.max_trunk = int(meta[:, 8].max())
        cat = lambda key, dtype: np.ascontiguousarray(
            np.concatenate([st[key] for st in structs]), dtype=dtype)
        info = cat("info", _INT)
        info[:, 1] += np.repeat(base("child_idx"), [st["n"] for st in structs])
        shifted = lambda key, rec: cat(key, _INT) + np.repeat(
            base(rec), [len(st[key]) for st in structs])[:, None]
        put = device.put
        # blocks start in order of decreasing work (chain levels, then nodes), so that the
        # last blocks to start, which set when the launch ends, are the shortest
        work = [(int(st["el_lev"].size + st["bs_lev"].size), int(st["n"])) for st in structs]
        keys = np.array([work[local[int(s)]] for s in sid], dtype=np.int64).reshape(-1, 2)
        order = np.lexsort((np.arange(len(sid)), -keys[:, 1], -keys[:, 0]))
        self.arrays = {
            "cell_order": put(order.astype(_INT)),
            "cell_struct": put(np.array([local[int(s)] for s in sid], dtype=_INT)),
            "cell_node0": put(np.array([cl.start - self.node0 for cl in cells], dtype=_INT)),
            "s_meta": put(np.ascontiguousarray(meta, dtype=_INT)),
            "info": put(info), "cb": put(cat("b", real)), "capd": put(cat("capd", real)),
            "child_idx": put(cat("child_idx", _INT)), "child_a": put(cat("child_a", real)),
            "el_pc": put(cat("el_pc", _INT)), "el_ab": put(cat("el_ab", real)),
            "el_range": put(shifted("el_range", "el_pc")), "el_lev": put(cat("el_lev", _INT)),
            "bs_ip": put(cat("bs_ip", _INT)), "bs_b": put(cat("bs_b", real)),
            "bs_range": put(shifted("bs_range", "bs_ip")), "bs_lev": put(cat("bs_lev", _INT)),
            "tr_node": put(_at_least_one(cat("tr_node", _INT))),
            "tr_ab": put(_at_least_one(cat("tr_ab", real).reshape(-1, 2))),
            "v_glob": put(sim._v[self.node0:self.node0 + n_nodes].astype(real)),
        }
        # mechanisms: the instances of cells c0..c1 are contiguous
        self.inst0 = {}
        for mech in lay.mechs:
            m = mech.name
            off = lay.offsets[m]
            i0, i1 = int(off[c0]), int(off[c1])
            self.inst0[m] = i0
            data = sim._data[m][:, i0:i1]
            self.arrays[f"D_{m}"] = put(np.ascontiguousarray(data, dtype=real))
            self.arrays[f"n_{m}"] = i1 - i0
            nodes = lay.nodes[m][i0:i1]
            if mech.kind == "density":
                inst = np.full(n_nodes, -1, dtype=_INT)
                inst[nodes - self.node0] = np.arange(i1 - i0, dtype=_INT)
                self.arrays[f"I_{m}"] = put(inst)
            else:
                counts = np.diff(off[c0:c1 + 1])
                cell_start = np.repeat([cl.start for cl in cells], counts)
                self.arrays[f"O_{m}"] = put((off[c0:c1 + 1] - i0).astype(_INT))
                self.arrays[f"N_{m}"] = put((nodes - cell_start).astype(_INT))
                self.arrays[f"S_{m}"] = put(lay.scale[m][i0:i1].astype(real))
            if f"T_{m}" in runner.arg_names:
                self.arrays[f"T_{m}"] = put(np.ascontiguousarray(
                    np.concatenate([np.ravel(t) for t in runner.tables[m]]), dtype=real))
        # ions kept per node: their rows over the part's nodes
        for ion, arr in sim._ions.items():
            self.arrays[f"Ion_{ion}"] = put(np.ascontiguousarray(
                arr[:, self.node0:self.node0 + n_nodes], dtype=real))
        if sim._ions:
            self.arrays["n_ion"] = n_nodes
        # spike sources (grouped by cell)
        off = run.src_off
        self.q0, q1 = int(off[c0]), int(off[c1])
        self.n_src = q1 - self.q0
        starts = np.array([cl.start for cl in lay.cells], dtype=np.int64)
        src_cell = np.repeat(np.arange(c0, c1), np.diff(off[c0:c1 + 1]))
        self.arrays.update(
            src_off=put((off[c0:c1 + 1] - self.q0).astype(_INT)),
            src_node=put((run.src_node[self.q0:q1] - starts[src_cell]).astype(_INT)),
            src_thr=put(run.src_thr[self.q0:q1].astype(real)),
            src_flag=put(run.src_flag[self.q0:q1].astype(_INT)))
        # recordings (grouped by cell): rows r0..r1 of the run's rows
        off = run.rec_off
        self.r0, r1 = int(off[c0]), int(off[c1])
        rows = run.rows[self.r0:r1]
        n_steps = run.tgrid.size - 1
        lengths = np.array([n_steps // row[4] + 1 for row in rows], dtype=np.int64)
        self.rec_pos = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        self.rec_len = lengths
        rec_idx = []
        for r, row in enumerate(rows):
            m, idx = int(run.rec_m[self.r0 + r]), int(run.rec_i[self.r0 + r])
            if m < 0:
                rec_idx.append(idx - int(starts[row[6]]))
            else:
                rec_idx.append(idx - self.inst0[lay.mechs[m].name])
        self.arrays.update(
            rec_off=put((off[c0:c1 + 1] - self.r0).astype(_INT)),
            rec_mech=put(run.rec_m[self.r0:r1].astype(_INT)),
            rec_field=put(run.rec_f[self.r0:r1].astype(_INT)),
            rec_idx=put(np.array(rec_idx, dtype=_INT)),
            rec_every=put(run.rec_every[self.r0:r1].astype(_INT)),
            rec_pos=put(self.rec_pos),
            rec_buf=device.put(np.full(int(lengths.sum()), np.nan)),   # poisoned
            bad_step=device.zeros(self.n_cells, np.int64))
        self.spike_cap = 0
        self._weight_vectors(runner)
        self._no_events = None
        self.no_events()
        # the first gather of spike rows makes CuPy compile or load its kernel (0.2 s
        # compiled, 15 ms from its cache): here, with the set-up, not in the first epoch
        # that has spikes
        device.get_rows(device.zeros((1, 1), np.float64), np.zeros(1, dtype=np.int64))

    def _weight_vectors(self, runner) -> None:
        """The weight-vector entries after the first of the NetCons into this part's
        cells (targets whose NET_RECEIVE takes more than a weight), one run ``nc_w`` on
        the device; ``nc_off`` maps a NetCon to its entries' offset there."""
        sim = runner.sim
        table, targets = sim._receiving()
        self.nc_off, chunks, at = {}, [], 0
        for i, t in enumerate(table.targets.tolist()):
            target = targets[t]
            if isinstance(target, ArtificialCell):
                continue        # its NET_RECEIVE runs on the host, with the host's vectors
            mech = runner.lay.mechs[runner.mech_index[sim._layout.pp_index[id(target)][0]]]
            if mech.weight_size > 1 and self.c0 <= sim._gid(target.cell) < self.c1:
                self.nc_off[i] = at
                chunks.append(table.weight_vector(i)[1:])
                at += mech.weight_size - 1
        self.nc_table = table
        nc_w = np.concatenate(chunks) if chunks else np.zeros(1)
        self.arrays["nc_w"] = self.device.put(np.ascontiguousarray(nc_w, dtype=np.float64))

    def weights_back(self) -> None:
        """The device's weight-vector entries into the NetCons' weight vectors."""
        if not self.nc_off:
            return
        nc_w = self.device.get(self.arrays["nc_w"])
        for i, at in self.nc_off.items():
            w = self.nc_table.weight_vector(i)
            w[1:] = nc_w[at:at + w.size - 1]

    def no_events(self) -> None:
        """No events for the next launch: arrays made once and kept (the kernel only
        reads them), so that an epoch without events copies nothing."""
        if self._no_events is None:
            put = self.device.put
            self._no_events = dict(ev_off=put(np.zeros(self.n_cells + 1, dtype=_INT)),
                                   ev_step=put(np.zeros(1, dtype=np.int64)),
                                   ev_mech=put(np.zeros(1, dtype=_INT)),
                                   ev_inst=put(np.zeros(1, dtype=_INT)),
                                   ev_w=put(np.zeros(1)), ev_te=put(np.zeros(1)),
                                   ev_wo=put(np.full(1, -1, dtype=_INT)))
        self.arrays.update(self._no_events)

    def set_events(self, events: list) -> None:
        """``events``: (local cell, step, mechanism index, local instance, weight, te,
        NetCon), in delivery order."""
        if not events:
            self.no_events()
            return
        ev = sorted(events, key=lambda e: e[0])       # stable: delivery order per cell
        cells = np.array([e[0] for e in ev], dtype=np.int64)
        put = self.device.put
        self.arrays.update(
            ev_off=put(np.searchsorted(cells, np.arange(self.n_cells + 1)).astype(_INT)),
            ev_step=put(np.array([e[1] for e in ev], dtype=np.int64)),
            ev_mech=put(np.array([e[2] for e in ev], dtype=_INT)),
            ev_inst=put(np.array([e[3] for e in ev], dtype=_INT)),
            ev_w=put(np.array([e[4] for e in ev], dtype=np.float64)),
            ev_te=put(np.array([e[5] for e in ev], dtype=np.float64)),
            ev_wo=put(np.array([self.nc_off.get(e[6], -1) for e in ev], dtype=_INT)))

    def ensure_spike_space(self, cap: int) -> None:
        if cap > self.spike_cap:
            self.spike_cap = cap
            self.arrays["spike_t"] = self.device.zeros(max(1, self.n_src) * cap, np.float64)
        self.arrays["spike_n"] = self.device.zeros(max(1, self.n_src), _INT)


class GpuRunner:
    """Runs one :class:`hinesbatch.Simulation` on CUDA devices (see the module docstring)."""

    def __init__(self, sim, lay, run_arrays, options: dict):
        self.sim, self.lay, self.run_arrays = sim, lay, run_arrays
        self.precision = options["precision"]
        self.real = np.float64 if self.precision == "float64" else np.float32
        self.devices = options["devices"]
        self.tables = {}
        k = 0
        for code in sim._km.codes:
            n = len(code.tabled) if sim.tables else 0
            self.tables[code.mech.name] = run_arrays.tables[k:k + n]
            k += n
        self.mech_index = {m.name: k for k, m in enumerate(lay.mechs)}
        # threshold -> synapse delays bound how long the cells may run on their own
        delays = [nc.delay for s in run_arrays.sources for nc in s.netcons]
        self.min_delay = min(delays) if delays else math.inf
        held = min(d.multiprocessors for d in self.devices) * MIN_BLOCKS[32]
        self.cell_threads = _cell_threads(max(cl.stop - cl.start for cl in lay.cells),
                                          options.get("block_threads"),
                                          len(lay.cells) / len(self.devices) >= held)
        self.block = (self.cell_threads if self.cell_threads >= 32 else
                      GROUP_BLOCK_THREADS)
        self.cells_per_block = self.block // self.cell_threads
        scan = (all(d.trunk_scan for d in self.devices)
                and self.cell_threads >= TRUNK_MIN_THREADS)
        self.trunk_min = TRUNK_MIN if scan else 0
        self.structs, self.struct_ids = structures(lay, self.trunk_min)
        roles = {m.name: field_roles(m, sim._data[m.name], sim.tables, sim._km.kept)
                 for m in lay.mechs}
        args = kernel_args(lay.mechs, sim.tables)
        self.arg_names = [a.name for a in args]
        self.arg_kinds = [a.kind for a in args]
        self._check_memory()
        self.parts = [_Part(self, d, c0, c1) for d, (c0, c1)
                      in zip(self.devices, _split(lay, len(self.devices))) if c1 > c0]
        self.scan_reals = SCAN_REALS if any(st["tr_node"].size for st in self.structs) else 0
        self.source = kernel_source(lay.mechs, roles, precision=self.precision,
                                    tables=sim.tables, dt=sim.dt, celsius=sim.celsius,
                                    block_threads=self.block,
                                    min_blocks=self._min_blocks(),
                                    scan_reals=self.scan_reals,
                                    cell_threads=self.cell_threads)
        self.kernels = {id(p.device): p.device.compile(self.source, self.precision)
                        for p in self.parts}
        for p in self.parts:
            p.shared = (self.cells_per_block * (3 * p.n_max + self.scan_reals)
                        * np.dtype(self.real).itemsize)
            p.use_shared = p.device.state_in_shared(self.kernels[id(p.device)], self.block,
                                                    p.shared)
            p.state_memory = ("shared memory" if p.use_shared else
                              "device memory (too large for shared memory)"
                              if p.shared > p.device.max_shared else
                              "device memory (shared memory would hold fewer blocks at once)")
            if not p.use_shared:
                p.arrays["scratch"] = p.device.zeros(
                    p.n_cells * (3 * p.n_max + self.scan_reals), self.real)
                p.shared = 0
            else:
                p.arrays["scratch"] = p.device.zeros(1, self.real)
        self.step_seconds = None
        self.pending = {id(p): [] for p in self.parts}   # events due before a coming step

    def _min_blocks(self) -> int:
        """The kernel's launch bound: :data:`MIN_BLOCKS` for one cell a block; blocks of
        several small cells are held as many warps at once as one-warp blocks."""
        if self.cells_per_block == 1:
            return MIN_BLOCKS.get(self.block, 0)
        return MIN_BLOCKS[32] * 32 // self.block

    # ---- layout -----------------------------------------------------------------------
    def _check_memory(self) -> None:
        """Refuse a batch whose arrays do not fit a device, before copying anything."""
        lay, run = self.lay, self.run_arrays
        size = np.dtype(self.real).itemsize
        need = lay.n_nodes * (size + 4 * len(lay.mechs))
        need += sum(arr.size for arr in self.sim._ions.values()) * size
        for m in lay.mechs:
            need += self.sim._data[m.name].size * size
        need += sum(self.structs[s]["n"] * (3 * size + 16) for s in set(self.struct_ids))
        # v, d and rhs in device memory, where shared memory does not take them
        need += len(lay.cells) * 3 * max(s["n"] for s in self.structs) * size
        n_steps = run.tgrid.size - 1
        need += sum(8 * (n_steps // row[4] + 1) for row in run.rows)
        per_device = need / len(self.devices) * 1.2
        for d in self.devices:
            free = d.free_bytes()
            if per_device > free:
                raise DeviceMemoryError(
                    f"the batch needs about {_size(per_device)} on each of "
                    f"{len(self.devices)} device(s), and {d!r} has {_size(free)} "
                    "free: use more devices, fewer cells, or record less (every=k)")

    def describe(self) -> str:
        per = ("one thread block per cell" if self.cells_per_block == 1 else
               f"{self.cells_per_block} cells per block of {self.block} threads")
        lines = [(f"gpu, {self.precision}: {len(self.structs)} distinct cell structure(s), "
                  f"{per}")]
        for p in self.parts:
            lines.append(f"  {p.device!r}: cells {p.c0}..{p.c1 - 1}, {self.cell_threads} "
                         f"threads per cell, up to {p.n_max} nodes and {p.n_levels} chain levels"
                         + (f" (trunks of up to {p.max_trunk} nodes by a warp's scan)"
                            if p.max_trunk else "")
                         + f"; v, d, rhs in {p.state_memory}")
        return "\n".join(lines)

    # ---- the epoch loop ---------------------------------------------------------------
    def run(self, *, progress=None) -> None:
        """The whole run: every step, then the results copied back. ``progress``: called
        with (t, tstop) [ms] before each epoch."""
        self.advance(0, self.run_arrays.tgrid.size - 1, progress=progress)
        self.finish()

    def advance(self, step: int, stop: int, *, progress=None) -> None:
        """Steps ``[step, stop)`` in epochs (module docstring); ``progress`` as in
        :meth:`run`."""
        sim, run = self.sim, self.run_arrays
        tgrid = run.tgrid
        n_steps = tgrid.size - 1
        half, min_delay = 0.5 * sim.dt, self.min_delay
        chunk = max(1, n_steps // 50) if progress is not None else MAX_EPOCH
        begin = time.perf_counter()
        while step < stop:
            if progress is not None:
                progress(tgrid[step], tgrid[n_steps])
            end = min(stop, step + chunk)
            bound = (tgrid[step] + SPIKE_OFFSET) + min_delay
            n = int(np.searchsorted(tgrid[step:end] + half, bound, side="left"))
            if n == 0:      # a delay below dt/2: detect, deliver, then step
                self._launch(step, 0, detect=2)
                self._collect_spikes()
                self._events(step, 1)
                self._launch(step, 1, detect=0)
                self._collect_spikes()
                step += 1
                continue
            self._events(step, n)
            self._launch(step, n, detect=1)
            self._collect_spikes()
            step += n
        for p in self.parts:
            p.device.sync()
        self.step_seconds = (self.step_seconds or 0.0) + time.perf_counter() - begin

    def deliver_until(self, limit: float, step: int) -> None:
        """Deliver the host queue's events with ``te <= limit`` [ms] now (NEURON's delivery
        at the end of a step); those for synapses act before step ``step``."""
        sim = self.sim
        deliver(sim._queue, limit, netcons=sim._netcon_table,
                on_net=lambda e: self._collect_event(e, step, self.pending),
                generators=sim._generators, on_spike=sim._generator_spike)

    def finish(self) -> None:
        """Copy the recordings and the final state back."""
        for p in self.parts:
            p.device.sync()
        self._copy_back()

    def _events(self, step: int, n: int) -> None:
        """Deliver, on the host queue, every event acting in steps [step, step + n), each
        collected with its step for the kernel."""
        sim, tgrid = self.sim, self.run_arrays.tgrid
        half = 0.5 * sim.dt
        found = self.pending
        self.pending = {id(p): [] for p in self.parts}
        queue = sim._queue
        last = tgrid[step + n - 1] + half
        while queue.next_time() <= last:
            m = step + int(np.searchsorted(tgrid[step:step + n] + half, queue.next_time(),
                                           side="left"))
            deliver(queue, tgrid[m] + half, netcons=sim._netcon_table,
                    on_net=lambda e, m=m: self._collect_event(e, m, found),
                    generators=sim._generators, on_spike=sim._generator_spike)
        for p in self.parts:
            p.set_events(found[id(p)])

    def _collect_event(self, event, step: int, found: dict) -> None:
        sim, lay = self.sim, self.lay
        if sim._host_event(event):        # an artificial cell's: run on the host now
            return
        target = sim._event_target(event)
        m, j = lay.pp_index[id(target)]
        gid = sim._gid(target.cell)
        k = self.mech_index[m]
        for p in self.parts:
            if p.c0 <= gid < p.c1:
                found[id(p)].append((gid - p.c0, step, k, j - p.inst0[m], event.weight,
                                     event.te, event.netcon))
                return

    def _launch(self, step: int, n: int, detect: int) -> None:
        tgrid = self.run_arrays.tgrid
        for p in self.parts:
            p.ensure_spike_space(max(n, 1) // 2 + 2)
            scalars = {"n_steps": n if detect != 2 else 1, "n_cells": p.n_cells,
                       "step0": step, "t0": tgrid[step],
                       "dt_d": self.sim.dt,
                       "detect_first": detect, "use_shared": int(p.use_shared),
                       "n_max": p.n_max, "spike_cap": p.spike_cap}
            args = [scalars[a] if a in scalars else p.arrays[a] for a in self.arg_names]
            grid = -(-p.n_cells // self.cells_per_block)
            p.device.launch(self.kernels[id(p.device)], grid, self.block, p.shared, args,
                            self.arg_kinds)

    def _collect_spikes(self) -> None:
        """Check for non-finite cells; queue the spikes of the launch in time order."""
        sim, lay = self.sim, self.lay
        spikes = []
        for p in self.parts:
            bad = p.device.get(p.arrays["bad_step"])
            if bad.any():
                c = int(np.argmin(np.where(bad > 0, bad, np.iinfo(np.int64).max)))
                v = p.device.get(p.arrays["v_glob"]).astype(np.float64)
                cl = lay.cells[p.c0 + c]
                sim._v[cl.start:cl.stop] = v[cl.start - p.node0:cl.stop - p.node0]
                sim._non_finite(lay, p.c0 + c, self.run_arrays.tgrid[int(bad[c])])
            if p.n_src == 0:
                continue
            counts = p.device.get(p.arrays["spike_n"])[:p.n_src]
            if not counts.any():
                continue
            fired = np.flatnonzero(counts)     # only their rows come back
            times = p.device.get_rows(p.arrays["spike_t"].reshape(-1, p.spike_cap), fired)
            for k, q in enumerate(fired.tolist()):
                for i in range(int(counts[q])):
                    spikes.append((times[k, i], p.q0 + q))
        for ts, k in sorted(spikes):
            sim._fire(self.run_arrays.sources[k], ts)

    def _copy_back(self) -> None:
        """Recordings into the run's buffer; v and the mechanism data into the simulation."""
        sim, lay, run = self.sim, self.lay, self.run_arrays
        for p in self.parts:
            buf = p.device.get(p.arrays["rec_buf"])
            for r in range(p.rec_len.size):
                k = int(p.rec_len[r])
                run.rec_buf[p.r0 + r, 1:k] = buf[p.rec_pos[r] + 1:p.rec_pos[r] + k]
            v = p.device.get(p.arrays["v_glob"])
            sim._v[p.node0:p.node0 + v.size] = v
            for ion, arr in sim._ions.items():
                arr[:, p.node0:p.node0 + v.size] = p.device.get(p.arrays[f"Ion_{ion}"])
            p.weights_back()
            for mech in lay.mechs:
                m = mech.name
                data = p.device.get(p.arrays[f"D_{m}"])
                i0 = p.inst0[m]
                sim._data[m][:, i0:i0 + data.shape[1]] = data


def _at_least_one(arr: np.ndarray) -> np.ndarray:
    """``arr``, or one zero row where it is empty (a device array is never empty)."""
    return arr if len(arr) else np.zeros((1,) + arr.shape[1:], dtype=arr.dtype)


def _size(n: float) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.2f} MiB"


def _split(lay, parts: int) -> list:
    """Contiguous cell ranges of about equal node counts."""
    ends = np.array([cl.stop for cl in lay.cells], dtype=np.int64)
    cuts = [0]
    for k in range(1, parts):
        cuts.append(max(cuts[-1], int(np.searchsorted(ends, lay.n_nodes * k / parts))))
    cuts.append(len(lay.cells))
    return [(cuts[k], cuts[k + 1]) for k in range(parts)]


def _cell_threads(n_max: int, requested, many: bool = False) -> int:
    """The threads that step one cell: ``requested``; for ``many`` small cells (the largest
    of at most 200 nodes; more cells a device than its multiprocessors hold in one-warp
    blocks, so that they wait for one another) a group of 8 or 16 of a warp's lanes
    (:data:`SMALL_CELL_THREADS`); else about 6 nodes per thread up to 128 threads
    (docs/decisions/018-gpu-engine.md, 026-gpu-trunk-scan.md). Fewer cells all step at once
    in their own blocks, which groups would only make slower."""
    if requested is not None:
        t = int(requested)
        if not (t in (1, 2, 4, 8, 16) or (32 <= t <= 1024 and t % 32 == 0)):
            raise ValueError("block_threads must be 1, 2, 4, 8, 16 or a multiple of 32 in "
                             f"[32, 1024], got {t}")
        return t
    for nodes, threads in SMALL_CELL_THREADS if many else ():
        if n_max <= nodes:
            return threads
    return int(min(128, max(32, 32 * math.ceil(n_max / 6 / 32))))


