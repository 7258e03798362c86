"""Which rank owns which cell, and the checks a network passes before it is split.

Distribution rule: greedy longest processing time (LPT)
    Cells are taken by compartment count, largest first, equal counts by ascending gid;
    each goes to the rank with the smallest load so far (load = compartments owned), equal
    loads to the lowest rank. The result depends only on the counts and the number of
    ranks, so every rank computes the same split without communicating. The most loaded
    rank carries at most ``mean load + largest cell`` compartments: when the cell that
    completes it was placed, its load was the smallest, hence at most the mean.

    Worked example, counts ``[5, 3, 3, 8, 1]`` over 2 ranks: order gid 3 (8), 0 (5),
    1 (3), 2 (3), 4 (1); loads go (8, 0) -> (8, 5) -> (8, 8) -> (11, 8) -> (11, 9), so
    ``rank_of_cell = [1, 1, 0, 0, 1]``, loads ``[11, 9]``.

    Cells without compartments (artificial cells, spike generators) weigh 0 and all go to
    the least loaded rank; give them a weight of 1 to spread them.

Checks before a run (:func:`check_network`)
    Every connection names a known source gid (and target gid, when given), and every delay
    is at least ``dt``: a split network exchanges spikes once per epoch of at least one
    step, so a shorter delay would deliver late.
"""
from __future__ import annotations

import heapq
from collections.abc import Mapping

import numpy as np

from .events import finite_number
from .netcon import NetConTable

__all__ = ["Distribution", "NetworkCheckError", "check_network", "distribute"]


class NetworkCheckError(ValueError):
    """A network that cannot run: an unknown gid, or a delay below ``dt``."""


class Distribution:
    """Cells assigned to ranks.

    Attributes
    ----------
    rank_of_cell : (n_cells,) int64
        Owning rank of each cell (index = gid).
    n_ranks : int
    loads : (n_ranks,) int64
        Compartments owned by each rank.
    """

    def __init__(self, rank_of_cell: np.ndarray, loads: np.ndarray):
        self.rank_of_cell = rank_of_cell
        self.loads = loads
        self.n_ranks = int(loads.size)

    def __repr__(self) -> str:
        return (f"Distribution({self.rank_of_cell.size} cells over {self.n_ranks} ranks, "
                f"loads {self.loads.min(initial=0)}..{self.loads.max(initial=0)})")

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.rank_of_cell, dtype=dtype)

    def local_cells(self, rank: int) -> np.ndarray:
        """(k,) int64: gids of the cells of ``rank``, ascending."""
        if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) \
                or not 0 <= rank < self.n_ranks:
            raise ValueError(f"rank must be in 0 .. {self.n_ranks - 1}, got {rank!r}")
        return np.flatnonzero(self.rank_of_cell == rank).astype(np.int64)


def distribute(compartments_per_cell, n_ranks: int) -> Distribution:
    """Assign cells to ranks, balancing compartments (greedy LPT, see the module).

    Parameters
    ----------
    compartments_per_cell : (n_cells,) int
        Compartments (nodes) of each cell, index = gid; ``>= 0``.
    n_ranks : int
        Number of ranks, ``>= 1``.

    Returns
    -------
    Distribution
        ``.rank_of_cell``, ``.loads``, ``.local_cells(rank)``.

    Examples
    --------
    >>> distribute([5, 3, 3, 8, 1], 2).rank_of_cell
    array([1, 1, 0, 0, 1])
    """
    counts = np.asarray(compartments_per_cell)
    if counts.ndim != 1:
        raise ValueError(f"compartments_per_cell must be 1-D (one count per cell), "
                         f"got shape {counts.shape}")
    if counts.size and not np.issubdtype(counts.dtype, np.integer):
        raise TypeError(f"compartments_per_cell must be integers, got dtype {counts.dtype}")
    counts = counts.astype(np.int64)
    if counts.size and counts.min() < 0:
        gid = int(np.argmin(counts))
        raise ValueError(f"cell {gid} has {counts[gid]} compartments; counts are >= 0")
    if isinstance(n_ranks, bool) or not isinstance(n_ranks, (int, np.integer)) or n_ranks < 1:
        raise ValueError(f"n_ranks must be an integer >= 1, got {n_ranks!r}")
    n_ranks = int(n_ranks)
    order = np.lexsort((np.arange(counts.size), -counts))  # largest first, then by gid
    rank_of_cell = np.empty(counts.size, dtype=np.int64)
    heap = [(0, rank) for rank in range(n_ranks)]  # (load, rank): smallest load, lowest rank
    for gid in order.tolist():
        load, rank = heapq.heappop(heap)
        rank_of_cell[gid] = rank
        heapq.heappush(heap, (load + int(counts[gid]), rank))
    loads = np.bincount(rank_of_cell, weights=counts, minlength=n_ranks).astype(np.int64)
    return Distribution(rank_of_cell, loads)


def _connection_arrays(connections) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    if isinstance(connections, NetConTable):
        return connections.sources, None, connections.delays
    if not isinstance(connections, Mapping):
        raise TypeError("connections must be a NetConTable or a mapping with 'source', "
                        f"'delay' and optionally 'target' arrays, got "
                        f"{type(connections).__name__}")
    missing = [key for key in ("source", "delay") if key not in connections]
    if missing:
        raise ValueError(f"connections lack {', '.join(repr(k) for k in missing)}; "
                         "expected 'source', 'delay' and optionally 'target'")
    sources = np.asarray(connections["source"])
    delays = np.asarray(connections["delay"], dtype=np.float64)
    targets = connections.get("target")
    targets = None if targets is None else np.asarray(targets)
    for name, arr in (("source", sources), ("target", targets)):
        if arr is not None and arr.size and not np.issubdtype(arr.dtype, np.integer):
            raise TypeError(f"connections['{name}'] must be integer gids, got dtype {arr.dtype}")
    shapes = {k: a.shape for k, a in (("source", sources), ("target", targets),
                                      ("delay", delays)) if a is not None}
    if any(len(s) != 1 for s in shapes.values()) or len(set(shapes.values())) != 1:
        raise ValueError(f"connections' arrays must be 1-D of one length, got shapes {shapes}")
    return sources, targets, delays


def check_network(gids, connections, dt: float) -> None:
    """Refuse a network that names an unknown gid or has a delay below ``dt``.

    Parameters
    ----------
    gids : (n,) int
        Every gid of the network (cells and spike generators), unique, ``>= 0``.
    connections : NetConTable or mapping
        A :class:`~.netcon.NetConTable` whose source ids are gids, or a mapping of 1-D
        arrays ``"source"`` (gids), ``"delay"`` [ms] and optionally ``"target"`` (gids).
    dt : float
        Time step [ms], > 0.

    Raises
    ------
    NetworkCheckError
        A duplicate or negative gid, a connection from or to an unknown gid, or a delay
        below ``dt`` (or not finite); the message names the connection by index.
    """
    dt = finite_number(dt, "dt [ms]")
    if dt <= 0:
        raise ValueError(f"dt must be > 0 ms, got {dt}")
    gids = np.asarray(gids)
    if gids.ndim != 1 or (gids.size and not np.issubdtype(gids.dtype, np.integer)):
        raise TypeError(f"gids must be a 1-D array of integers, got shape {gids.shape}, "
                        f"dtype {gids.dtype}")
    gids = gids.astype(np.int64)
    if gids.size and gids.min() < 0:
        raise NetworkCheckError(f"gid {int(gids.min())} is negative; gids are >= 0")
    unique, counts = np.unique(gids, return_counts=True)
    if np.any(counts > 1):
        raise NetworkCheckError(f"gid {int(unique[np.argmax(counts > 1)])} appears "
                                f"{int(counts.max())} times; gids are unique")
    sources, targets, delays = _connection_arrays(connections)
    for name, arr in (("source", sources), ("target", targets)):
        if arr is None:
            continue
        unknown = np.flatnonzero(~np.isin(arr, unique))
        if unknown.size:
            i = int(unknown[0])
            raise NetworkCheckError(
                f"connection {i}: {name} gid {int(arr[i])} is not a gid of the network "
                f"({unique.size} gids; {unknown.size} connection(s) name unknown {name}s)")
    bad = np.flatnonzero(~(delays >= dt))  # NaN included
    if bad.size:
        i = int(bad[0])
        raise NetworkCheckError(
            f"connection {i}: delay {float(delays[i])!r} ms is below dt = {dt} ms ({bad.size} "
            "connection(s)); spikes are exchanged once per epoch of at least one step, so "
            "every delay must be >= dt")
