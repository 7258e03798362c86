"""The engine's arrays for a batch of cells: NEURON's node order, matrix coefficients,
and per-mechanism instance data (see :mod:`.kernels` for the layout).

Instances of a mechanism are in the engine's node order within each cell, except for a
mechanism that draws random numbers (:func:`~hinesbatch.mechanisms.codegen.stream_blocks`):
its instances are in NEURON's node order (:func:`neuron_node_order`), the order in which
NEURON's loops over a mechanism's instances draw."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import mechanisms as _mechanisms
from ..mechanisms.codegen import stream_blocks
from .diffusion import diffusion_arrays

__all__ = ["CellLayout", "Layout", "level_order", "neuron_node_order"]

_ORDERS: dict = {}


def neuron_node_order(geo) -> np.ndarray:
    """NEURON's node order of a cell (multicore.cpp ``reorder_secorder``) as a permutation
    ``new -> old`` of the geometry's nodes.

    The root node first; then sections breadth first from the root section, each giving
    its segment nodes and its x = 1 node; children in NEURON's sibling-list order
    (increasing connection x; among equal x, the section connected last first).
    """
    key = id(geo)
    hit = _ORDERS.get(key)
    if hit is not None and hit[0] is geo:
        return hit[1]
    n_sec = geo.n_sections
    children = [[] for _ in range(n_sec)]
    for k in range(1, n_sec):
        children[int(geo.section_parent[k])].append(k)
    for lst in children:
        lst.sort(key=lambda k: (float(geo.section_parent_x[k]), -k))
    order, head = [0], 0
    while head < len(order):
        order.extend(children[order[head]])
        head += 1
    nodes_of = np.argsort(geo.section[1:], kind="stable") + 1
    starts = np.searchsorted(geo.section[1:][nodes_of - 1], np.arange(n_sec + 1))
    perm = np.concatenate([[0]] + [nodes_of[starts[k]:starts[k + 1]] for k in order])
    perm = perm.astype(np.int64)
    _ORDERS[key] = (geo, perm)
    return perm


def level_order(geo) -> np.ndarray:
    """The engine's node order (``new -> geometry node``): NEURON's order, then stably
    sorted by depth from the root.

    Elimination in this order does, at every node, the same operations in the same order
    as NEURON's (a parent's own terms first, then its children's in NEURON's order), so
    the results are bit for bit NEURON's; but neighbouring nodes are independent, so the
    processor overlaps them instead of waiting on one long chain of divisions.
    """
    key = ("level", id(geo))
    hit = _ORDERS.get(key)
    if hit is not None and hit[0] is geo:
        return hit[1]
    nrn = neuron_node_order(geo)
    inv = np.empty_like(nrn)
    inv[nrn] = np.arange(nrn.size)
    parent = geo.parent[nrn]
    parent = np.where(parent < 0, -1, inv[np.maximum(parent, 0)])
    depth = np.zeros(nrn.size, dtype=np.int64)
    for i in range(1, nrn.size):
        depth[i] = depth[parent[i]] + 1
    perm = nrn[np.argsort(depth, kind="stable")]
    _ORDERS[key] = (geo, perm)
    return perm


@dataclass
class CellLayout:
    """One cell in the batch: its nodes ``[start, stop)`` and the permutation."""

    gid: int
    start: int
    stop: int
    perm: np.ndarray      # new local -> geometry node
    inv: np.ndarray       # geometry node -> new local
    geometry: object

    def global_node(self, geo_node: int) -> int:
        return self.start + int(self.inv[geo_node])

    def location_of(self, global_node: int) -> str:
        g = self.geometry
        old = int(self.perm[global_node - self.start])
        return f"{g.section_names[int(g.section[old])]}({float(g.x[old]):g})"


def _joined(parts: list, dtype=np.float64) -> np.ndarray:
    """The cells' arrays end to end; empty for a batch without cells (a simulation of
    artificial cells only)."""
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)


class Layout:
    """Arrays of a batch (built once per set of cells)."""

    def __init__(self, cells, *, dt: float):
        self.cells = []
        parents, areas, gs, capds, diams, depths = [], [], [], [], [], []
        shared: dict = {}                 # cells of one geometry and cm share their arrays
        offset = 0
        for gid, cell in enumerate(cells):
            geo = cell.geometry
            cm = cell.section_cm()
            key = (id(geo), cm.tobytes())
            if key not in shared:
                shared[key] = _cell_arrays(geo, cm, dt)
            perm, inv, parent, area, g, capd, diam, depth = shared[key]
            parents.append(np.where(parent < 0, -1, parent + offset))
            depths.append(depth)
            areas.append(area)
            diams.append(diam)
            gs.append(g)
            capds.append(capd)
            self.cells.append(CellLayout(gid, offset, offset + perm.size, perm, inv, geo))
            offset += perm.size
        self.n_nodes = offset
        self.parent = _joined(parents, np.int64).astype(np.int64)
        self.area = _joined(areas)
        #: NEURON's seg.diam of each node [µm] (NaN where the node has no segment)
        self.diam = _joined(diams)
        #: each node's distance from its cell's root, in nodes
        self.depth = _joined(depths, np.int64)
        g = _joined(gs)
        self.capd = _joined(capds)
        self.node_off = np.array([c.start for c in self.cells] + [offset], dtype=np.int64)
        a = np.zeros(offset)
        b = np.zeros(offset)
        has_p = self.parent >= 0
        a[has_p] = ((-100.0 * 1.0) * g[has_p]) / self.area[self.parent[has_p]]
        b[has_p] = (-100.0 * g[has_p]) / self.area[has_p]
        self.a, self.b = a, b
        self._source_cells = list(cells)
        self._instances(cells)
        self._data_taken = False

    def run_data(self) -> dict:
        """Per mechanism the instance data (fields x instances) a run starts from, the
        run's own to change: the arrays built with the layout for its first run, built
        again from the cells for every later one (a batch's data are large; a copy kept
        for later runs would double the set-up's memory and time)."""
        if self._data_taken:
            self.data = self._instance_data(self._rows)
        self._data_taken = True
        return self.data

    def _instances(self, cells) -> None:
        """Per mechanism: data, nodes, per-cell offsets, 1e2/area; and index maps."""
        per_mech: dict = {}
        self.pp_index: dict = {}          # id(PointProcess) -> (mech, instance)
        densities: dict = {}              # cells of one geometry and decor are read once
        draws = {}                        # mechanism -> whether it draws random numbers

        def drawing(m):
            if m not in draws:
                draws[m] = bool(stream_blocks(_mechanisms.get(m)))
            return draws[m]

        for cl, cell in zip(self.cells, cells):
            geo = cl.geometry
            rank = None                   # engine-local node -> its place in NEURON's order
            key = (_decor_key(cell), id(geo))
            if key not in densities:
                densities[key] = []
                for m, (mask, values) in cell.density_values(geo).items():
                    fields = _mechanisms.get(m).fields
                    new_nodes = np.flatnonzero(mask[cl.perm])
                    if drawing(m):
                        rank = _neuron_rank(cl) if rank is None else rank
                        new_nodes = new_nodes[np.argsort(rank[new_nodes], kind="stable")]
                    old = cl.perm[new_nodes]
                    data = np.array([values[f.name][old] if f.name in values
                                     else np.full(old.size, f.default) for f in fields])
                    densities[key].append((m, data.reshape(len(fields), old.size), new_nodes))
            for m, data, new_nodes in densities[key]:
                per_mech.setdefault(m, []).append((cl.gid, data, new_nodes + cl.start, None))
            pps = sorted(cell.point_processes,
                         key=lambda p: (cl.global_node(geo.node(*_loc(p.location))),
                                        -p.index))
            by_kind: dict = {}
            for p in pps:
                by_kind.setdefault(p.kind, []).append(p)
            for m, plist in by_kind.items():
                mech = _mechanisms.get(m)
                if drawing(m):
                    rank = _neuron_rank(cl) if rank is None else rank
                    plist = sorted(plist, key=lambda p: (
                        int(rank[cl.global_node(geo.node(*_loc(p.location))) - cl.start]),
                        -p.index))
                nodes = np.array([cl.global_node(geo.node(*_loc(p.location))) for p in plist],
                                 dtype=np.int64)
                data = np.array([[p.params.get(f.name, f.default) for p in plist]
                                 for f in mech.fields]).reshape(len(mech.fields), len(plist))
                per_mech.setdefault(m, []).append((cl.gid, data, nodes, plist))
        self.mechs = sorted((_mechanisms.get(m) for m in per_mech), key=lambda m: m.order)
        self.nodes, self.offsets, self.scale = {}, {}, {}
        self.scratch: dict = {}
        n_cells = len(self.cells)
        for mech in self.mechs:
            rows = per_mech[mech.name]
            counts = np.zeros(n_cells, dtype=np.int64)
            for gid, data, nodes, plist in rows:
                counts[gid] = nodes.size
            base = np.concatenate([[0], np.cumsum(counts)])
            self.nodes[mech.name] = np.concatenate([r[2] for r in rows]).astype(np.int64)
            self.offsets[mech.name] = base.astype(np.int64)
            self.scale[mech.name] = 1e2 / self.area[self.nodes[mech.name]]
            shape = (max(1, len(mech.cnexp)), self.nodes[mech.name].size)
            self.scratch[mech.name] = (np.zeros(shape), np.zeros(shape),
                                      np.zeros((2, shape[1])))
            if mech.diffusion:     # its instances' tree (kernels' _LP_<m>, _LC_<m>)
                self.scratch[mech.name] += diffusion_arrays(self, mech.name)
            for gid, data, nodes, plist in rows:
                if plist:
                    for k, p in enumerate(plist):
                        self.pp_index[id(p)] = (mech.name, int(base[gid]) + k)
        self._rows = {m: [r[1] for r in rows] for m, rows in per_mech.items()}
        self.data = self._instance_data(self._rows)

    def _instance_data(self, rows: dict) -> dict:
        """The fields x instances array of every mechanism, from its cells' pieces."""
        data = {}
        for mech in self.mechs:
            pieces = rows[mech.name]
            out = np.empty((len(mech.fields), sum(p.shape[1] for p in pieces)))
            k = 0
            for p in pieces:
                out[:, k:k + p.shape[1]] = p
                k += p.shape[1]
            data[mech.name] = out
            self._geometry_fields(mech, out)
        return data

    def _geometry_fields(self, mech, data: np.ndarray) -> None:
        """Set the fields of ``mech.geometry`` in ``data`` from each instance's segment.

        Raises
        ------
        ValueError
            An instance's node has no segment diameter (a geometry built without one).
        """
        for name in mech.geometry:
            nodes = self.nodes[mech.name]
            values = self.diam[nodes]
            bad = np.flatnonzero(~np.isfinite(values))
            if bad.size:
                node = int(nodes[bad[0]])
                cell = next(c for c in self.cells if c.start <= node < c.stop)
                raise ValueError(f"mechanism {mech.name} reads {name}, but cell {cell.gid} "
                                 f"has no segment diameter at {cell.location_of(node)}")
            data[mech.field_names.index(name)] = values

    def instance_at(self, mech: str, node: int) -> int:
        """The instance of density mechanism ``mech`` on global ``node`` (or -1)."""
        nodes = self.nodes.get(mech)
        if nodes is None:
            return -1
        hit = np.flatnonzero(nodes == node)
        return int(hit[0]) if hit.size else -1


def _neuron_rank(cl: CellLayout) -> np.ndarray:
    """Each engine-local node's place in NEURON's node order of the cell."""
    nrn = neuron_node_order(cl.geometry)
    place = np.empty_like(nrn)
    place[nrn] = np.arange(nrn.size)
    return place[cl.perm]


def _cell_arrays(geo, cm: np.ndarray, dt: float) -> tuple:
    """One cell's arrays in the engine's node order: ``(perm, inv, parent, area, g, capd,
    diam, depth)``, the parent local (-1 at the root), ``cm`` per section [µF/cm²]."""
    perm = level_order(geo)
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.size)
    old_parent = geo.parent[perm]
    parent = np.where(old_parent < 0, -1, inv[np.maximum(old_parent, 0)])
    area = np.where(geo.has_membrane, geo.area_um2, 100.0)[perm]
    with np.errstate(divide="ignore"):
        g = np.where(np.isfinite(geo.ri_megohm), 1.0 / geo.ri_megohm, 0.0)[perm]
    cfac = 0.001 * (1.0 / dt)
    capd = np.where(geo.has_membrane[perm], cfac * cm[geo.section][perm], 0.0)
    diam = np.full(perm.size, np.nan) if geo.diam_um is None \
        else np.asarray(geo.diam_um, dtype=np.float64)[perm]
    depth = np.zeros(perm.size, dtype=np.int64)
    for i in range(1, perm.size):       # a parent comes before its children
        depth[i] = depth[parent[i]] + 1
    return perm, inv, parent, area, g, capd, diam, depth


def _decor_key(cell):
    """A key equal for cells whose decor gives the same values on the same geometry:
    the decor itself where every parameter is a plain number, else the cell."""
    key = []
    for op, m, region, params in cell.decor:
        if not isinstance(region, str) or not all(
                type(v) in (int, float) for v in params.values()):
            return ("cell", id(cell))
        key.append((op, m, region, tuple(sorted(params.items()))))
    return tuple(key)


def _loc(location: str):
    from ..model.cell import parse_location

    return parse_location(location)
