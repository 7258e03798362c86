"""Elimination schedules for the ``tiled`` strategy on a shared structure (NumPy only), and
at the end of this module those of ``block-shared`` with ``keep="factors"``
(:class:`FactorSchedule`).

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

import heapq
from dataclasses import dataclass

import numpy as np

__all__ = ["Schedule", "bank_geometry", "stage_geometry", "tiled_schedule", "schedule_steps",
           "elimination_tree", "kernel_arrays", "lu_len", "FactorSchedule", "factor_schedule",
           "factor_flags", "factor_pflags"]

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


def _depths(parent: np.ndarray) -> np.ndarray:
    depth = np.zeros(parent.size, dtype=np.int64)
    for i in range(1, parent.size):  # Hines order: a parent precedes its children
        depth[i] = depth[parent[i]] + 1
    return depth


def _batches(parent: np.ndarray, batch: int) -> list[list[int]]:
    n = parent.size
    remaining = np.bincount(parent[parent >= 0], minlength=n)
    depth = _depths(parent)
    ready = [(-int(depth[j]), j) for j in np.flatnonzero(remaining == 0).tolist()]
    heapq.heapify(ready)
    batches = []
    while ready:
        picked, deferred, parents = [], [], set()
        while ready and len(picked) < batch:
            item = heapq.heappop(ready)
            p = int(parent[item[1]])
            if p >= 0 and p in parents:  # a sibling already updates this parent in this batch
                deferred.append(item)
                continue
            picked.append(item[1])
            if p >= 0:
                parents.add(p)
        for item in deferred:
            heapq.heappush(ready, item)
        for j in picked:  # parents become ready for the *next* batch
            p = int(parent[j])
            if p >= 0:
                remaining[p] -= 1
                if remaining[p] == 0:
                    heapq.heappush(ready, (-int(depth[p]), p))
        batches.append(picked)
    return batches


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
    from ...tree.balance import reroot as rerooted
    from ...tree.structure import MonoBatch

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


# -- the schedule of block-shared with keep="factors" (kernels/hines_factors.cu) -----------------

#: Entry flags, as in kernels/hines_factors.cu.
CARRY_IN, ACC, CARRY_OUT, ACC_INIT, ROOT = 1, 2, 4, 8, 16
FLAG_BITS = 5


@dataclass(frozen=True)
class FactorSchedule:
    """Steps of ``slots`` independent nodes of one cell, with where each contribution goes.

    One thread eliminates its cell step by step, the ``slots`` nodes of a step together (their
    dependency chains overlap; their parents are distinct). A node's contribution to its
    parent stays in the slot's registers when the parent is the same slot's node one step
    later (``CARRY_OUT``; the parent has ``CARRY_IN``); otherwise it is summed in the parent's
    shared-memory slot (the parent has ``ACC``; its first such child ``ACC_INIT`` stores
    instead of adding). ``ROOT`` marks the root. The forward sweep runs the steps in reverse
    and takes x of the parent from the same registers (``CARRY_OUT``) or from the parent's
    slot (``ACC`` nodes store x there).

    Attributes
    ----------
    slots : int
        Nodes per step (``V`` in the kernel).
    n_nodes : int
    entries : int32[n_steps * slots, 4]
        ``(node, parent, flags, 0)``; dummies pad the last steps with node -1.
    lu : float64[n_steps * slots, 2]
        ``(l, u)`` of each entry's node (0 for dummies).
    """

    slots: int
    n_nodes: int
    entries: np.ndarray
    lu: np.ndarray

    @property
    def n_steps(self) -> int:
        return self.entries.shape[0] // self.slots

    @property
    def carried(self) -> float:
        """Fraction of the non-root nodes whose contribution stays in registers."""
        flags = self.entries[:, 2]
        real = (self.entries[:, 0] >= 0) & ((flags & ROOT) == 0)
        return float(((flags & CARRY_OUT) != 0)[real].mean()) if real.any() else 1.0

    def order(self) -> np.ndarray:
        """The real nodes in backward elimination order (for tests)."""
        node = self.entries[:, 0]
        return node[node >= 0]


def _factor_steps(parent: np.ndarray, slots: int) -> list[list[int]]:
    """Steps of ``slots`` nodes (-1: empty): list scheduling, deepest ready node first, except
    that a slot whose last node's parent has just become ready takes that parent (carry). The
    nodes of a step have distinct parents, so that the kernel may load all of a step's slots
    before it stores any."""
    n = parent.size
    if slots == 1:
        return [[j] for j in range(n - 1, -1, -1)]  # Hines order: unbranched runs carry
    remaining = np.bincount(parent[parent >= 0], minlength=n)
    depth = _depths(parent)
    ready = [(-int(depth[j]), -j, j) for j in np.flatnonzero(remaining == 0).tolist()]
    heapq.heapify(ready)
    taken = np.zeros(n, dtype=bool)
    steps: list[list[int]] = []
    previous = [-1] * slots
    done = 0
    while done < n:
        step = [-1] * slots
        parents: set[int] = set()
        for v, c in enumerate(previous):  # follow the chains first
            p = int(parent[c]) if c >= 0 else -1
            if p >= 0 and remaining[p] == 0 and not taken[p] and int(parent[p]) not in parents:
                step[v] = p
                taken[p] = True
                if parent[p] >= 0:
                    parents.add(int(parent[p]))
        deferred = []
        for v in range(slots):
            while step[v] < 0 and ready:
                item = heapq.heappop(ready)
                j = item[2]
                if taken[j]:
                    continue
                if parent[j] >= 0 and int(parent[j]) in parents:  # a sibling is in this step
                    deferred.append(item)
                    continue
                step[v] = j
                taken[j] = True
                if parent[j] >= 0:
                    parents.add(int(parent[j]))
        for item in deferred:
            heapq.heappush(ready, item)
        for j in step:
            if j >= 0:
                done += 1
                p = int(parent[j])
                if p >= 0:
                    remaining[p] -= 1
                    if remaining[p] == 0:
                        heapq.heappush(ready, (-int(depth[p]), -p, p))
        steps.append(step)
        previous = step
    return steps


def factor_flags(parent: np.ndarray, steps: list[list[int]]) -> np.ndarray:
    """The flags of every node of one cell for the given steps (see :class:`FactorSchedule`)."""
    n = parent.size
    step_of = np.empty(n, dtype=np.int64)
    slot_of = np.empty(n, dtype=np.int64)
    for s, nodes in enumerate(steps):
        for v, j in enumerate(nodes):
            if j >= 0:
                step_of[j], slot_of[j] = s, v
    flags = np.zeros(n, dtype=np.int32)
    started = np.zeros(n, dtype=bool)  # the parent's slot already holds a contribution
    for nodes in steps:  # program order: steps, then slots
        for j in nodes:
            if j < 0:
                continue
            p = int(parent[j])
            if p < 0:
                flags[j] |= ROOT
            elif step_of[p] == step_of[j] + 1 and slot_of[p] == slot_of[j]:
                flags[j] |= CARRY_OUT
                flags[p] |= CARRY_IN
            else:
                flags[p] |= ACC
                if not started[p]:
                    flags[j] |= ACC_INIT
                    started[p] = True
    return flags


def factor_schedule(cell, slots: int) -> FactorSchedule:
    """The :class:`FactorSchedule` of a one-cell :class:`~hinesbatch.tree.HinesStructure`."""
    parent = np.asarray(cell.parent, dtype=np.int64)
    steps = _factor_steps(parent, slots)
    flags = factor_flags(parent, steps)
    lower, upper = np.asarray(cell.lower, dtype=np.float64), np.asarray(cell.u, dtype=np.float64)
    entries = np.zeros((len(steps) * slots, 4), dtype=np.int32)
    lu = np.zeros((len(steps) * slots, 2))
    node = np.asarray(steps, dtype=np.int64).reshape(-1)
    real = node >= 0
    j = node[real]
    entries[:, 0] = node
    entries[real, 1] = parent[j]
    entries[real, 2] = flags[j]
    root = parent[j] < 0
    lu[real, 0] = np.where(root, 0.0, lower[j])
    lu[real, 1] = np.where(root, 0.0, upper[j])
    return FactorSchedule(slots, parent.size, entries, lu)


def factor_pflags(parent: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per-cell structures, one slot per step in descending node order (what
    :func:`factor_flags` gives each cell, vectorised over the batch): ``parent << 5 | flags``
    of every node of the concatenated cells, parents local to their cell (-1 at the roots)."""
    parent = np.asarray(parent, dtype=np.int64)
    n = parent.size
    sizes = np.diff(np.asarray(offsets, dtype=np.int64))
    start = np.repeat(np.asarray(offsets[:-1], dtype=np.int64), sizes)
    local = np.arange(n, dtype=np.int64) - start
    flags = np.zeros(n, dtype=np.int64)
    root = parent < 0
    flags[root] |= ROOT
    carry = ~root & (parent == local - 1)  # the parent is the very next node eliminated
    flags[carry] |= CARRY_OUT
    flags[np.flatnonzero(carry) - 1] |= CARRY_IN
    other = np.flatnonzero(~root & ~carry)  # summed in the parent's slot
    gp = start[other] + parent[other]
    flags[gp] |= ACC
    first = np.full(n, -1, dtype=np.int64)  # descending order: the largest child comes first
    np.maximum.at(first, gp, other)
    flags[first[first >= 0]] |= ACC_INIT
    return ((parent << FLAG_BITS) | flags).astype(np.int32)
