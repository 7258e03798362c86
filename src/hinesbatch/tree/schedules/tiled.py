"""Elimination schedules of the ``tiled`` strategy on a shared structure (``hines_tiled_*``),
host side, NumPy only; those of ``block-shared`` with ``keep="factors"`` are in
:mod:`.factors`.

One thread solves one cell in shared memory. Eliminating the nodes in descending index
order makes every step wait for the previous one (in an unbranched run the next pivot needs
the last division). Any order in which children come before their parent is valid, so the
schedule groups the nodes into *batches* of ``batch`` nodes that do not depend on each other:

* every child of a node sits in an earlier batch (so its pivot is final when loaded);
* the nodes of a batch have distinct parents (so the batch's parent updates never collide,
  and a thread may load all of a batch's values before storing any).

Nodes are picked by list scheduling, deepest first (the longest chain to the root is the
critical path). Batches are padded with dummy slots ``n .. n+batch-1`` (an identity row
that is its own parent, so it stays ``d = 1, rhs = 0``); the root's parent is slot
``n + batch``. Real nodes are stored in schedule order (:attr:`Schedule.slot`), each step's
nodes in the order that spreads the kernel's accesses to their parents over the
shared-memory banks, and the nodes are staged in an order that spreads their slots
(:func:`tiled_schedule` with ``lanes`` and ``item``; :func:`bank_geometry`). The forward
sweep runs the batches in reverse: a parent's batch comes later in the backward order,
hence earlier in the forward one.

Any node may be eliminated last: with ``reroot=True`` the schedule eliminates the cell's tree
hung from its centre (:func:`~hinesbatch.tree.balance.reroot`: the same matrix, its rows and
columns permuted), whose longest chain of steps is shorter on many real cells. The schedule
still names the cell's own nodes; :attr:`Schedule.rank` and :attr:`Schedule.parent` say which
tree it eliminates.

Example: the 5-node tree ``parent = [-1, 0, 1, 0, 3]`` (two branches of two nodes) with
``batch = 2`` gives the batches ``[2, 4]``, ``[1]``, ``[3]``, ``[0]`` (each padded with a
dummy): four steps instead of five; 1 and 3 share the parent 0, so they go to different
batches.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .list_scheduling import list_schedule

__all__ = ["Schedule", "bank_geometry", "stage_geometry", "tiled_schedule", "schedule_steps",
           "elimination_tree", "kernel_arrays", "lu_len"]

#: Slot indices are packed in 16 bits (node | parent << 16).
MAX_SLOTS = 1 << 15


def bank_geometry(lanes: int, item: int) -> tuple[int, int, int]:
    """How ``hines_tiled_mono``'s shared-memory accesses meet the banks, for ``lanes`` lanes
    per cell and values of ``item`` bytes: ``(words, phase, residue)``.

    A tile keeps each cell's values in two planes (d then m; rhs then y then x), ``stride``
    words per cell, so every access is one word per lane. One wavefront serves 128 bytes:
    ``words = 128 // item`` lanes of a warp's 8-byte access (all 32 of a 4-byte one). In the
    sweeps those lanes are ``phase = words * lanes // 32`` consecutive entries of a step for
    each of the warp's ``32 // lanes`` cells (or one entry of ``words`` cells); with the cells'
    planes ``stride = residue (mod words)`` words apart, the cells' words never share a bank
    when the ``phase`` slots do not share a residue mod ``phase``."""
    words = 128 // item
    phase = max(1, words * lanes // 32)
    return words, phase, phase % words


def stage_geometry(lanes: int, item: int, stage_cells: int) -> tuple[int, int]:
    """How a warp stages: ``stage_cells`` cells (1, or the ``32 // lanes`` cells of a sweep's
    warp) side by side, lanes varying fastest over the cells, each a run of ``32 //
    stage_cells`` consecutive nodes (a coalesced read). Returns ``(run, modulus)``: a
    wavefront serves ``modulus`` nodes of each of the cells, which meet no bank conflict when
    their slots have distinct residues mod ``modulus`` (the cells' planes are ``phase`` words
    apart, :func:`bank_geometry`)."""
    if stage_cells not in (1, max(1, 32 // lanes)):
        raise ValueError(f"stage_cells must be 1 or 32 // lanes = {32 // lanes}, "
                         f"got {stage_cells}")
    words = bank_geometry(lanes, item)[0]
    return 32 // stage_cells, max(1, words // stage_cells)


@dataclass(frozen=True)
class Schedule:
    """A batched elimination order of one cell (see the module docstring).

    Attributes
    ----------
    batch : int
        Nodes per batch (``KB`` in the kernel).
    n_nodes : int
        Nodes of the cell.
    slot_stride : int
        Shared-memory words per cell and plane: ``n_nodes + batch + 1`` slots, rounded up
        so that the cells of a warp fall on distinct banks (:func:`bank_geometry`).
    jp : int32[n_batches * batch]
        ``slot of the node | slot of its parent << 16`` per entry (dummies: their own slot
        ``n + k`` twice; the root's parent: slot ``n + batch``).
    l, u : float64[n_batches * batch]
        The node's ``l`` and ``u`` (0 for the root and the dummies).
    node : int32[n_batches * batch]
        The node of each entry (-1 for dummies), for error reports.
    slot : int32[n_nodes]
        Where each node lives in shared memory: nodes in schedule order, so that the nodes
        of a step are adjacent and a warp's accesses to them are free of bank conflicts.
    stage : int32[n_nodes]
        The nodes in the order the kernel stages (and writes back) a cell's values: a
        permutation within each run of ``32 // stage_cells`` nodes.
    stage_cells : int
        Cells a warp stages side by side (:func:`stage_geometry`).
    rank : int32[n_nodes]
        Each node's index in the tree the schedule eliminates (Hines order: a parent ranks
        below its children): the node itself, or its index in the cell re-rooted at its
        centre (``reroot=True``). Of a cell's failing pivots the kernel reports the node of
        highest rank (met first, as the serial solver meets the highest index first).
    parent : int32[n_nodes]
        The parent of each node in the tree the schedule eliminates (-1 at its root), in the
        cell's numbering: the cell's own parents, or those of the re-rooted tree.
    """

    batch: int
    n_nodes: int
    slot_stride: int
    jp: np.ndarray
    l: np.ndarray
    u: np.ndarray
    node: np.ndarray
    slot: np.ndarray
    stage: np.ndarray
    stage_cells: int
    rank: np.ndarray
    parent: np.ndarray

    @property
    def rerooted(self) -> bool:
        """Whether the schedule eliminates the cell from another root than node 0."""
        return bool(self.parent.size) and int(self.parent[0]) >= 0

    @property
    def n_batches(self) -> int:
        return self.jp.size // self.batch

    @property
    def fill(self) -> float:
        """Fraction of the batch slots that hold real nodes."""
        return self.n_nodes / max(1, self.jp.size)

    def order(self) -> np.ndarray:
        """The real nodes in backward elimination order (for tests)."""
        return self.node[self.node >= 0]


def _batches(parent: np.ndarray, batch: int) -> list[list[int]]:
    """Steps of up to ``batch`` nodes: list scheduling, deepest ready node first (ties to the
    lower index), a step's nodes with distinct parents."""
    return [[j for j in step if j >= 0] for step in list_schedule(parent, batch, ties="low")]


def _spread_parents(steps: list[list[int]], parent: np.ndarray, batch: int, phase: int,
                    stage: tuple[int, int], cell_node: np.ndarray) -> list[list[int]]:
    """The nodes of each step reordered so that each run of ``phase`` entries (the lanes that
    one shared-memory wavefront serves, aligned) has parents in distinct slot residues
    (mod ``phase``) where the parents allow it: their loads and stores then meet no bank
    conflicts. Steps are ordered from the last (the root's) to the first, so a step's
    parents have their slots; each node of a run takes the residue that the parents of its
    children's steps, and the nodes staged with it (its run of node indices and residues
    mod ``modulus``, ``stage = (run, modulus)``: :func:`_stage_order`; runs of the cell's
    numbering, ``cell_node[j]`` for node ``j`` of ``parent``'s tree), have least of, so that
    those can be spread in turn."""
    n = parent.size
    starts = np.concatenate([[0], np.cumsum([len(nodes) for nodes in steps])])
    step_of = np.empty(n, dtype=np.int64)
    for b, nodes in enumerate(steps):
        step_of[nodes] = b
    child_steps: list[list[int]] = [[] for _ in range(n)]
    for j in np.flatnonzero(parent >= 0).tolist():
        child_steps[int(parent[j])].append(int(step_of[j]))
    load = np.zeros((len(steps), phase), dtype=np.int64)  # residues of each step's parents
    run_length, modulus = stage
    staged = np.zeros((-(-n // run_length), modulus), dtype=np.int64)  # of each staging run
    slot = np.empty(n, dtype=np.int64)
    out: list[list[int]] = [[] for _ in steps]
    for b in range(len(steps) - 1, -1, -1):
        buckets: list[list[int]] = [[] for _ in range(phase)]
        for j in steps[b]:
            p = int(parent[j])
            buckets[int(slot[p]) % phase if p >= 0 else (n + batch) % phase].append(j)
        order = out[b]
        while len(order) < len(steps[b]):
            run = []  # one node from each of the fullest buckets, then duplicates
            while len(run) < phase and any(buckets):
                for r in sorted(range(phase), key=lambda r: -len(buckets[r])):
                    if buckets[r] and len(run) < phase:
                        run.append(buckets[r].pop())
            base = int(starts[b]) + len(order)
            free = list(range(len(run)))  # positions; residue (base + i) % phase
            for j in sorted(run, key=lambda j: -len(child_steps[j])):
                run_of = cell_node[j] // run_length
                i = min(free, key=lambda i: staged[run_of, (base + i) % modulus] + sum(
                    load[c, (base + i) % phase] for c in child_steps[j]))
                free.remove(i)
                slot[j] = base + i
                staged[run_of, (base + i) % modulus] += 1
                for c in child_steps[j]:
                    load[c, (base + i) % phase] += 1
            placed = sorted(run, key=lambda j: slot[j])
            order.extend(placed)
    return out


def _stage_order(slot: np.ndarray, run: int, modulus: int) -> np.ndarray:
    """Nodes in the order the kernel stages them: within each aligned run of ``run`` nodes
    (one warp's loads of a cell: the same memory sectors in any order), dealt out by slot
    residue mod ``modulus`` over the wavefronts that store them (``modulus`` nodes each), so
    that each gets its share of every residue."""
    n = slot.size
    order = np.arange(n)
    waves = max(1, run // modulus)
    if waves == 1:
        return order
    for g0 in range(0, n, run):
        part = order[g0:g0 + run]
        by_residue = part[np.argsort(slot[part] % modulus, kind="stable")]
        order[g0:g0 + part.size] = np.concatenate([by_residue[w::waves] for w in range(waves)])
    return order


def elimination_tree(cell, reroot: bool = False):
    """The tree a schedule of ``cell`` (a one-cell :class:`~hinesbatch.tree.HinesStructure`)
    eliminates: ``(parent, l, u, cell_node)`` in that tree's numbering (Hines order), with
    ``cell_node[j]`` the cell's node that is its node ``j``. The cell itself, or with
    ``reroot`` the cell hung from its centre (:func:`~hinesbatch.tree.balance.reroot`: where
    an edge changed direction its ``l`` and ``u`` trade places)."""
    if not reroot:
        return (np.asarray(cell.parent, dtype=np.int64), np.asarray(cell.lower),
                np.asarray(cell.u), np.arange(cell.n_nodes))
    from ..balance import reroot as rerooted
    from ..structure import MonoBatch

    r = rerooted(MonoBatch(cell, 1))
    tree = r.structure.cell
    return (np.asarray(tree.parent, dtype=np.int64), np.asarray(tree.lower),
            np.asarray(tree.u), np.asarray(r.order, dtype=np.int64))


def schedule_steps(cell, batch: int, reroot: bool = False) -> int:
    """Steps of :func:`tiled_schedule` for ``cell`` with ``batch`` nodes per step (they do not
    depend on its other arguments), without ordering the steps for the banks."""
    return len(_batches(elimination_tree(cell, reroot)[0], batch))


def tiled_schedule(cell, batch: int, *, lanes: int = 1, item: int = 8,
                   stage_cells: int = 1, reroot: bool = False) -> Schedule:
    """The batched schedule of a one-cell :class:`~hinesbatch.tree.HinesStructure`, for
    ``lanes`` lanes per cell, values of ``item`` bytes and ``stage_cells`` cells staged side
    by side (:func:`stage_geometry`): a step's nodes are ordered, and the nodes' staging
    order chosen, so that the kernel's shared-memory accesses to parents and to staged values
    spread over the banks (:func:`_spread_parents`, :func:`_stage_order`); the steps
    themselves do not depend on ``lanes``, ``item`` or ``stage_cells``. ``reroot``: eliminate
    the cell hung from its centre (:func:`elimination_tree`); the schedule's nodes, slots and
    staging order stay in the cell's numbering.

    Raises ``ValueError`` when the cell has too many nodes for 16-bit slot indices.
    """
    n = cell.n_nodes
    if n + batch + 1 >= MAX_SLOTS:
        raise ValueError(f"the tiled strategy handles cells of fewer than {MAX_SLOTS - batch - 1} "
                         f"nodes; this cell has {n}")
    parent, lower, upper, cell_node = elimination_tree(cell, reroot)
    words, phase, residue = bank_geometry(lanes, item)
    stage = stage_geometry(lanes, item, stage_cells)
    groups = _batches(parent, batch)
    if phase > 1:
        groups = _spread_parents(groups, parent, batch, phase, stage, cell_node)
    order = np.asarray([j for nodes in groups for j in nodes], dtype=np.int64)
    slot = np.empty(n, dtype=np.int64)  # per node of the eliminated tree
    slot[order] = np.arange(n)  # a step's nodes sit side by side in shared memory
    jp = np.empty((len(groups), batch), dtype=np.int64)
    node = np.full((len(groups), batch), -1, dtype=np.int64)
    lv = np.zeros((len(groups), batch))
    uv = np.zeros((len(groups), batch))
    for b, nodes in enumerate(groups):
        for k in range(batch):
            if k < len(nodes):
                j = nodes[k]
                p = int(parent[j])
                node[b, k] = cell_node[j]
                if p < 0:
                    jp[b, k] = slot[j] | ((n + batch) << 16)
                else:
                    jp[b, k] = slot[j] | (slot[p] << 16)
                    lv[b, k], uv[b, k] = lower[j], upper[j]
            else:
                jp[b, k] = (n + k) | ((n + k) << 16)
    rank = np.empty(n, dtype=np.int64)  # in the cell's numbering from here on
    rank[cell_node] = np.arange(n)
    cell_slot = np.empty(n, dtype=np.int64)
    cell_slot[cell_node] = slot
    cell_parent = np.full(n, -1, dtype=np.int64)
    cell_parent[cell_node[parent >= 0]] = cell_node[parent[parent >= 0]]
    stride = n + batch + 1 + (residue - (n + batch + 1)) % words
    return Schedule(batch, n, stride, jp.reshape(-1).astype(np.int32),
                    lv.reshape(-1), uv.reshape(-1), node.reshape(-1).astype(np.int32),
                    cell_slot.astype(np.int32), _stage_order(cell_slot, *stage).astype(np.int32),
                    stage_cells, rank.astype(np.int32), cell_parent.astype(np.int32))


def lu_len(n_nodes: int) -> int:
    """Rows of ``(l, u)`` in a schedule as ``hines_tiled_mono`` keeps them: one per slot ``0 ..
    n`` (row ``n`` holds zeros for every dummy), rounded up to even (``hb_lu_len``: what
    follows them in shared memory then starts on 16 bytes)."""
    return (n_nodes + 2) & ~1


def kernel_arrays(schedule: Schedule, dtype) -> dict:
    """``schedule`` as ``hines_tiled_mono`` reads it: per entry (slot, parent slot) ("jp",
    int32 pairs) and the node ("node", for error reports: ``rank << 16 | node``, so that the
    largest failing entry is the node of highest rank, :attr:`Schedule.rank`); ``(l, u)`` per
    slot ("lu", :func:`lu_len` rows; the root's and the dummies' are zeros: a dummy's slot
    ``n + k`` reads row ``n``); the staging table ("stage": ``node | slot << 16`` in staging
    order). Per slot rather than per entry, ``(l, u)`` takes less shared memory where steps
    have dummies, and the dummies of a step read one row."""
    s = schedule
    real = s.node >= 0
    lu = np.zeros((lu_len(s.n_nodes), 2), dtype=dtype)
    slot = s.jp[real] & 0xFFFF
    lu[slot, 0], lu[slot, 1] = s.l[real], s.u[real]
    node = np.where(real, (s.rank[np.maximum(s.node, 0)] << 16) | s.node, -1)
    return {"jp": np.ascontiguousarray(np.stack([s.jp & 0xFFFF, s.jp >> 16], axis=1),
                                       dtype=np.int32),
            "lu": lu, "node": node.astype(np.int32),
            "stage": (s.stage | (s.slot[s.stage] << 16)).astype(np.int32)}
