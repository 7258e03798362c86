"""The canonical batched Hines structure: one format that every backend reads.

See ``STORAGE.md`` beside this file for the format with a worked three-cell example.

A Hines matrix of one cell with ``n`` nodes in Hines order (every node's parent has a smaller
index, the root is node 0) is stored as

* ``parent[i]``: index of node ``i``'s parent, ``-1`` for the root;
* ``u[i]``: the entry in row ``parent[i]``, column ``i`` (upper triangle);
* ``l[i]``: the entry in row ``i``, column ``parent[i]`` (lower triangle); ``None`` means the
  matrix is symmetric (``l = u``);
* ``d[i]``, ``rhs[i]``: diagonal and right-hand side, which change every time step and are
  therefore *values* passed to ``Plan.solve``, not part of the structure.

Row ``i`` of the system reads::

    d[i]*x[i] + l[i]*x[parent[i]] + sum(u[c]*x[c] for c with parent[c] == i) = rhs[i]

Two kinds of batch are first-class because the papers show they need different kernels:

* :class:`HinesStructure` concatenates cells: global indices, ``cell_offsets[c]:cell_offsets[c+1]``
  are cell ``c``'s nodes, parents are global indices into the concatenation. Values have shape
  ``(n_nodes,)``. Cells may all differ (multi-morphology) or be copies (the paper's layout
  with per-cell structure, :meth:`HinesStructure.tile`).
* :class:`MonoBatch` shares one cell's structure among ``n_cells`` value sets (mono-morphology):
  the structure is stored once and values have shape ``(n_cells, n_nodes)``.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np

__all__ = ["HinesStructure", "MonoBatch", "as_batch"]


#: The read-only arrays this module made, by id: structures share them without copying.
_OWNED: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def _owned(a, dtype) -> np.ndarray:
    """``a`` as read-only, C-contiguous memory of ``dtype`` that nobody else can write.

    An array that a structure already owns is kept as it is (structures share their arrays
    that way); anything else is copied, read-only arrays and views included: a read-only
    view of a writeable buffer changes whenever its owner writes to the buffer, and the
    owner of a read-only array may make it writeable again.
    """
    if _OWNED.get(id(a)) is a and a.dtype == dtype:
        return a
    out = np.array(a, dtype=dtype, order="C", copy=True)
    out.flags.writeable = False
    _OWNED[id(out)] = out
    return out


def _check_indices(name: str, a: np.ndarray, low: int, high: int, what: str) -> None:
    """Raise ``ValueError`` naming the position and value of the first entry of ``a`` outside
    ``low..high``; compared in ``a``'s own dtype, before any cast could wrap it around."""
    bad = np.flatnonzero((a < low) | (a > high))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"{name}[{i}] = {int(a[i])} is outside {low}..{high} ({what})")


@dataclass(frozen=True, eq=False)
class HinesStructure:
    """Tree structure and constant off-diagonals of a batch of concatenated cells.

    Parameters
    ----------
    parent : (n,) int array
        Global parent index of every node, ``-1`` for each cell's root. Within a cell,
        ``parent[i] < i`` and the root is the cell's first node.
    u : (n,) float array
        Off-diagonal entry in row ``parent[i]``, column ``i``. ``u[root]`` is ignored.
    l : (n,) float array or None
        Off-diagonal entry in row ``i``, column ``parent[i]``; ``None`` for symmetric systems.
    cell_offsets : (n_cells + 1,) int array or None
        Node ranges of the cells; by default one range per root (a new cell starts at every
        ``-1`` in ``parent``).

    Notes
    -----
    The structure keeps read-only arrays of its own (``parent`` as int32, ``cell_offsets``
    as int64, ``u`` and ``l`` as float64): arguments are copied unless they already are
    another structure's arrays, so a structure never changes after construction, not even
    when the caller's buffers do. Copies and pickles are built again through the
    constructor, validated and read-only. Construction validates the format (indices in
    range before any cast, Hines order, cell ranges, finite ``u`` and ``l`` off the roots)
    and raises ``ValueError`` naming the argument and the position, or the cell and node.
    """

    parent: np.ndarray
    u: np.ndarray
    l: np.ndarray | None = None
    cell_offsets: np.ndarray | None = None
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        parent = np.asarray(self.parent)
        if parent.ndim != 1:
            raise ValueError(f"parent must be one-dimensional, got shape {parent.shape}")
        if parent.size and not np.issubdtype(parent.dtype, np.integer):
            raise TypeError(f"parent must hold integers, got dtype {parent.dtype}")
        n = parent.size
        if n >= 2**31:
            raise ValueError(f"a structure holds at most 2**31 - 1 nodes, got {n}")
        _check_indices("parent", parent, -1, n - 1, "a node index, or -1 for a root")
        parent = _owned(parent, np.int32)
        u = _owned(self.u, np.float64)
        if u.shape != (n,):
            raise ValueError(f"u has shape {u.shape} but parent has {n} entries")
        lower = None
        if self.l is not None:
            lower = _owned(self.l, np.float64)
            if lower.shape != (n,):
                raise ValueError(f"l has shape {lower.shape} but parent has {n} entries")
        if self.cell_offsets is None:
            offsets = _owned(np.concatenate([np.flatnonzero(parent < 0), [n]]), np.int64)
            if n and offsets[0] != 0:
                raise ValueError("node 0 must be a root (parent -1): it starts the first cell")
        else:
            offsets = np.asarray(self.cell_offsets)
            if offsets.size and not np.issubdtype(offsets.dtype, np.integer):
                raise TypeError(f"cell_offsets must hold integers, got dtype {offsets.dtype}")
            if offsets.ndim == 1:
                _check_indices("cell_offsets", offsets, 0, n, "a node count")
            offsets = _owned(offsets, np.int64)
            if offsets.ndim != 1 or offsets.size < 1 or offsets[0] != 0 or offsets[-1] != n:
                raise ValueError(
                    f"cell_offsets must run from 0 to the number of nodes ({n}), got "
                    f"{offsets[:3].tolist()}...{offsets[-3:].tolist()}"
                )
            sizes = np.diff(offsets)
            if np.any(sizes < 1):
                c = int(np.flatnonzero(sizes < 1)[0])
                raise ValueError(f"cell {c} is empty: cell_offsets must be strictly increasing")
        _check_hines_order(parent, offsets)
        for name, values in (("u", u), ("l", lower)):
            if values is not None:
                _check_finite_couplings(name, values, parent, offsets)
        object.__setattr__(self, "parent", parent)
        object.__setattr__(self, "u", u)
        object.__setattr__(self, "l", lower)
        object.__setattr__(self, "cell_offsets", offsets)

    def __reduce__(self):
        # copy, deepcopy and pickle go through the constructor: validated, read-only arrays
        return (HinesStructure, (self.parent, self.u, self.l, self.cell_offsets))

    def __setstate__(self, state: dict) -> None:
        # a pickle of the plain dataclass form (object state, no constructor call) is
        # validated and made read-only all the same
        for name in ("parent", "u", "l", "cell_offsets"):
            object.__setattr__(self, name, state[name])
        object.__setattr__(self, "_cache", {})
        self.__post_init__()

    # -- sizes -----------------------------------------------------------------------------
    @property
    def n_nodes(self) -> int:
        """Total number of nodes (unknowns) over all cells."""
        return int(self.parent.size)

    @property
    def n_cells(self) -> int:
        return int(self.cell_offsets.size - 1)

    @property
    def cell_sizes(self) -> np.ndarray:
        """Nodes per cell, int64[n_cells]."""
        return np.diff(self.cell_offsets)

    @property
    def symmetric(self) -> bool:
        return self.l is None

    @property
    def lower(self) -> np.ndarray:
        """``l`` if given, else ``u`` (the symmetric case)."""
        return self.u if self.l is None else self.l

    @property
    def values_shape(self) -> tuple[int, ...]:
        """Shape of the ``d`` and ``rhs`` arrays this structure solves."""
        return (self.n_nodes,)

    # -- constructors ----------------------------------------------------------------------
    def cell(self, c: int) -> "HinesStructure":
        """Cell ``c`` alone, re-indexed from 0."""
        if not -self.n_cells <= c < self.n_cells:
            raise IndexError(f"cell {c} out of range for a batch of {self.n_cells} cells")
        c %= self.n_cells
        return self.cells(c, c + 1)

    @staticmethod
    def concatenate(structures) -> "HinesStructure":
        """Concatenate structures (of one or more cells each) into one multi-cell batch."""
        structures = list(structures)
        if not structures:
            return HinesStructure(np.zeros(0, np.int32), np.zeros(0))
        symmetric = all(s.l is None for s in structures)
        parents, us, ls, offsets, base = [], [], [], [np.zeros(1, np.int64)], 0
        for s in structures:
            p = s.parent.astype(np.int64)
            parents.append(np.where(p >= 0, p + base, -1))
            us.append(s.u)
            ls.append(s.lower)
            offsets.append(s.cell_offsets[1:] + base)
            base += s.n_nodes
        return HinesStructure(
            np.concatenate(parents),
            np.concatenate(us),
            None if symmetric else np.concatenate(ls),
            np.concatenate(offsets),
        )

    def tile(self, n_copies: int) -> "HinesStructure":
        """``n_copies`` copies of this batch, each with its own structure arrays.

        This is the papers' per-cell-structure layout; :class:`MonoBatch` is the shared one.
        """
        return HinesStructure.concatenate([self] * int(n_copies))

    def renumber(self, order) -> "HinesStructure":
        """The same batch with its nodes renumbered: new node ``j`` is old node ``order[j]``.

        ``order`` must be a permutation that maps every cell's node range onto itself and
        keeps the Hines order (``ValueError`` naming cell and node otherwise). Values follow
        with ``values[..., order]``; the inverse is ``np.argsort(order)``.
        """
        order = np.asarray(order)
        n = self.n_nodes
        if order.shape != (n,) or (n and not np.issubdtype(order.dtype, np.integer)):
            raise ValueError(
                f"order must be {n} integers, got shape {order.shape}, dtype {order.dtype}")
        order = order.astype(np.int64)
        if n and (order.min() < 0 or order.max() >= n or np.bincount(order, minlength=n).max() > 1):
            raise ValueError(f"order is not a permutation of 0..{n - 1}")
        cell_of = np.repeat(np.arange(self.n_cells), self.cell_sizes)
        moved = np.flatnonzero(cell_of[order] != cell_of)
        if moved.size:
            j = int(moved[0])
            raise ValueError(
                f"order moves node {int(order[j])} of cell {int(cell_of[order[j]])} to position "
                f"{j} in cell {int(cell_of[j])}: cells must keep their nodes")
        inverse = np.empty(n, dtype=np.int64)
        inverse[order] = np.arange(n)
        p = self.parent[order].astype(np.int64)
        return HinesStructure(
            np.where(p >= 0, inverse[np.maximum(p, 0)], -1),
            self.u[order],
            None if self.l is None else self.l[order],
            self.cell_offsets,
        )

    def to_dense(self, d) -> np.ndarray:
        """Dense matrix of the whole batch for diagonal ``d`` (for tests and small examples)."""
        d = np.asarray(d, dtype=np.float64)
        a = np.diag(d)
        child = np.flatnonzero(self.parent >= 0)
        a[self.parent[child], child] = self.u[child]
        a[child, self.parent[child]] = self.lower[child]
        return a

    def cells(self, start: int, stop: int) -> "HinesStructure":
        """Cells ``start .. stop - 1`` as a batch of their own, re-indexed from 0.

        Parameters
        ----------
        start, stop : int
            The range of cells, ``0 <= start <= stop <= n_cells``; ``start == stop`` gives an
            empty batch.

        Returns
        -------
        HinesStructure
            Nodes ``cell_offsets[start]:cell_offsets[stop]`` of this batch, parents shifted by
            ``-cell_offsets[start]``, the same ``u`` and ``l`` (``None`` stays ``None``). Its
            values are the same node range of this batch's values.

        Raises
        ------
        IndexError
            The range is not within ``0 .. n_cells`` or ``stop < start``.
        """
        start, stop = _cell_range(start, stop, self.n_cells)
        lo, hi = int(self.cell_offsets[start]), int(self.cell_offsets[stop])
        parent = self.parent[lo:hi].astype(np.int64)
        parent[parent >= 0] -= lo
        return HinesStructure(parent, self.u[lo:hi], None if self.l is None else self.l[lo:hi],
                              self.cell_offsets[start:stop + 1] - lo)


@dataclass(frozen=True, eq=False)
class MonoBatch:
    """``n_cells`` cells that share one structure (mono-morphology batch).

    Parameters
    ----------
    cell : HinesStructure
        Structure of exactly one cell.
    n_cells : int
        Number of value sets; ``d`` and ``rhs`` have shape ``(n_cells, cell.n_nodes)``.
        An integer ``>= 0`` (``TypeError`` for other types, ``bool`` included).
    """

    cell: HinesStructure
    n_cells: int
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        if not isinstance(self.cell, HinesStructure):
            raise TypeError(f"cell must be a HinesStructure, got {type(self.cell).__name__}")
        if self.cell.n_cells != 1:
            raise ValueError(f"a MonoBatch shares one cell, got a structure of {self.cell.n_cells}")
        n = self.n_cells
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise TypeError(f"n_cells must be an int, got {type(n).__name__} {n!r}")
        if n < 0:
            raise ValueError(f"n_cells must be >= 0, got {n}")
        object.__setattr__(self, "n_cells", int(n))

    def __reduce__(self):
        return (MonoBatch, (self.cell, self.n_cells))

    def __setstate__(self, state: dict) -> None:
        object.__setattr__(self, "cell", state["cell"])
        object.__setattr__(self, "n_cells", state["n_cells"])
        object.__setattr__(self, "_cache", {})
        self.__post_init__()

    @property
    def n_nodes(self) -> int:
        """Total number of nodes over the batch (``n_cells * nodes per cell``)."""
        return self.n_cells * self.cell.n_nodes

    @property
    def nodes_per_cell(self) -> int:
        return self.cell.n_nodes

    @property
    def values_shape(self) -> tuple[int, ...]:
        return (self.n_cells, self.cell.n_nodes)

    def expand(self) -> HinesStructure:
        """The same batch as concatenated cells with per-cell structure."""
        return self.cell.tile(self.n_cells)

    def cells(self, start: int, stop: int) -> "MonoBatch":
        """Cells ``start .. stop - 1`` as a batch of their own: the same shared cell,
        ``stop - start`` value sets (rows ``start:stop`` of this batch's values).

        Raises ``IndexError`` when the range is not within ``0 .. n_cells`` or
        ``stop < start``.
        """
        start, stop = _cell_range(start, stop, self.n_cells)
        return MonoBatch(self.cell, stop - start)


def as_batch(structure) -> HinesStructure | MonoBatch:
    """Return ``structure`` if it is a batch; raise ``TypeError`` otherwise."""
    if isinstance(structure, (HinesStructure, MonoBatch)):
        return structure
    raise TypeError(
        "expected a HinesStructure or MonoBatch (see hinesbatch.tree), got "
        f"{type(structure).__name__}"
    )


def _cell_range(start, stop, n_cells: int) -> tuple[int, int]:
    """``start`` and ``stop`` as ints with ``0 <= start <= stop <= n_cells``; ``IndexError``
    naming the range otherwise (``TypeError`` for non-integers)."""
    for name, value in (("start", start), ("stop", stop)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    start, stop = int(start), int(stop)
    if not 0 <= start <= stop <= n_cells:
        raise IndexError(f"cells {start}:{stop} are not a range within the batch of {n_cells} "
                         f"cells (need 0 <= start <= stop <= {n_cells})")
    return start, stop


def _check_hines_order(parent: np.ndarray, offsets: np.ndarray) -> None:
    """Raise ``ValueError`` naming cell and node unless every cell is in Hines order."""
    n = parent.size
    if n == 0:
        return
    cell_of = np.repeat(np.arange(offsets.size - 1), np.diff(offsets))
    start = offsets[cell_of]
    idx = np.arange(n)
    is_root = idx == start
    bad_root = np.flatnonzero(is_root & (parent != -1))
    if bad_root.size:
        i = int(bad_root[0])
        c = int(cell_of[i])
        raise ValueError(
            f"cell {c}: its first node (global {i}) must be the root with parent -1, "
            f"got parent {int(parent[i])}"
        )
    bad = np.flatnonzero(~is_root & ((parent < start) | (parent >= idx)))
    if bad.size:
        i = int(bad[0])
        c = int(cell_of[i])
        raise ValueError(
            f"cell {c}, node {i - int(start[i])} (global {i}): parent {int(parent[i])} is not "
            f"an earlier node of the same cell (Hines order needs "
            f"{int(start[i])} <= parent < {i})"
        )


def _check_finite_couplings(name: str, values: np.ndarray, parent: np.ndarray,
                            offsets: np.ndarray) -> None:
    """Raise ``ValueError`` naming cell and node at the first non-finite non-root entry."""
    bad = np.flatnonzero(~np.isfinite(values) & (parent >= 0))
    if bad.size:
        i = int(bad[0])
        c = int(np.searchsorted(offsets, i, side="right") - 1)
        raise ValueError(f"{name} must be finite, but holds {values[i]} at cell {c}, "
                         f"node {i - int(offsets[c])} (global {i})")
