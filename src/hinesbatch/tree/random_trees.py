"""Random and named test structures, values for them, and a dense reference solver.

For tests and benchmarks of every backend (CPU and GPU): the same generators give the same
structures from the same seed. Values are made strictly diagonally dominant, the regime of
Hines systems (``d = sum |off-diagonals in the row| + a positive margin``), so elimination
without pivoting is stable and the dense solve is an accurate reference.

Off-diagonals are negative like those of a cable equation (``u = -g_axial``); the numbers
are dimensionless.
"""
from __future__ import annotations

import numpy as np

from .structure import HinesStructure, MonoBatch

__all__ = [
    "structure_from_parents", "chain", "star", "binary_tree", "random_parents", "random_tree",
    "random_batch", "diagonally_dominant", "dense_solve",
]


def _rng(rng) -> np.random.Generator:
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


def structure_from_parents(parent, *, rng=None, symmetric: bool = True) -> HinesStructure:
    """A one-cell structure for the Hines-order ``parent`` array with random couplings.

    ``u`` (and ``l`` unless ``symmetric``) are drawn uniformly from [-1, -0.1]; ``u[root]``
    is 0. ``rng``: a ``numpy.random.Generator`` or a seed.
    """
    rng = _rng(rng)
    parent = np.asarray(parent, dtype=np.int64)
    u = -rng.uniform(0.1, 1.0, parent.size)
    u[parent < 0] = 0.0
    lower = None
    if not symmetric:
        lower = -rng.uniform(0.1, 1.0, parent.size)
        lower[parent < 0] = 0.0
    return HinesStructure(parent, u, lower)


def chain(n: int, **kwargs) -> HinesStructure:
    """An unbranched cable of ``n`` nodes (a tridiagonal matrix)."""
    return structure_from_parents(np.arange(n) - 1, **kwargs)


def star(n: int, **kwargs) -> HinesStructure:
    """A root with ``n - 1`` children (an arrow matrix)."""
    parent = np.zeros(n, dtype=np.int64)
    parent[0] = -1
    return structure_from_parents(parent, **kwargs)


def binary_tree(depth: int, *, branch_length: int = 1, **kwargs) -> HinesStructure:
    """A full binary tree of ``2**depth - 1`` branches of ``branch_length`` nodes each.

    Branches are numbered breadth first and their nodes are contiguous.
    """
    n_branches = 2**depth - 1
    b = np.arange(n_branches)
    first = b * branch_length
    parent = np.arange(n_branches * branch_length) - 1
    parent[first] = np.where(b > 0, ((b - 1) // 2 + 1) * branch_length - 1, -1)
    return structure_from_parents(parent, **kwargs)


def random_parents(n: int, *, rng=None, branch_probability: float = 0.5) -> np.ndarray:
    """Hines-order parents of a random tree of ``n`` nodes (int64).

    Each node ``i > 0`` continues the run of node ``i - 1`` with probability
    ``1 - branch_probability``, and otherwise hangs on a uniformly chosen earlier node.
    """
    rng = _rng(rng)
    i = np.arange(n)
    jump = rng.random(n) < branch_probability
    parent = np.where(jump, np.floor(rng.random(n) * i).astype(np.int64), i - 1)
    if n:
        parent[0] = -1
    return parent


def random_tree(n: int, *, rng=None, branch_probability: float = 0.5,
                symmetric: bool = True) -> HinesStructure:
    """A random one-cell structure of ``n`` nodes (see :func:`random_parents`)."""
    rng = _rng(rng)
    parent = random_parents(n, rng=rng, branch_probability=branch_probability)
    return structure_from_parents(parent, rng=rng, symmetric=symmetric)


def random_batch(n_cells: int, *, rng=None, max_nodes: int = 64,
                 symmetric: bool = True) -> HinesStructure:
    """``n_cells`` cells of different shapes and sizes (1 to ``max_nodes`` nodes) concatenated.

    Shapes cycle through sparse random trees, chains, stars, single nodes and bushy random
    trees.
    """
    rng = _rng(rng)
    shapes = (
        lambda n: random_tree(n, rng=rng, branch_probability=0.1, symmetric=symmetric),
        lambda n: chain(n, rng=rng, symmetric=symmetric),
        lambda n: star(n, rng=rng, symmetric=symmetric),
        lambda n: chain(1, rng=rng, symmetric=symmetric),
        lambda n: random_tree(n, rng=rng, branch_probability=0.8, symmetric=symmetric),
    )
    cells = [shapes[c % len(shapes)](int(rng.integers(1, max_nodes + 1))) for c in range(n_cells)]
    return HinesStructure.concatenate(cells)


def _row_abs_sums(cell_like: HinesStructure) -> np.ndarray:
    """Sum of |off-diagonal| entries in every row of a structure."""
    parent = cell_like.parent
    child = np.flatnonzero(parent >= 0)
    sums = np.zeros(parent.size)
    sums[child] += np.abs(cell_like.lower[child])
    sums += np.bincount(parent[child], weights=np.abs(cell_like.u[child]), minlength=parent.size)
    return sums


def diagonally_dominant(structure, *, rng=None, dtype=np.float64,
                        margin: tuple[float, float] = (0.1, 1.0)):
    """Random ``(d, rhs)`` of ``structure.values_shape`` with a strictly dominant diagonal.

    ``d = sum |off-diagonals of the row| + uniform(*margin)``, ``rhs`` standard normal; both
    cast to ``dtype``.
    """
    rng = _rng(rng)
    if isinstance(structure, MonoBatch):
        sums = np.broadcast_to(_row_abs_sums(structure.cell), structure.values_shape)
    else:
        sums = _row_abs_sums(structure)
    shape = structure.values_shape
    d = (sums + rng.uniform(*margin, size=shape)).astype(dtype)
    rhs = rng.standard_normal(shape).astype(dtype)
    return d, rhs


def dense_solve(structure, d, rhs) -> np.ndarray:
    """Reference solution by ``numpy.linalg.solve`` on each cell's dense matrix, in float64.

    For tests and small batches (it builds an ``n x n`` matrix per cell).
    """
    d = np.asarray(d, dtype=np.float64)
    rhs = np.asarray(rhs, dtype=np.float64)
    if isinstance(structure, MonoBatch):
        cell = structure.cell
        if structure.n_cells == 0:
            return np.zeros(structure.values_shape)
        a = np.repeat(cell.to_dense(np.zeros(cell.n_nodes))[None], structure.n_cells, axis=0)
        i = np.arange(cell.n_nodes)
        a[:, i, i] = d
        return np.linalg.solve(a, rhs[..., None])[..., 0]
    x = np.empty(structure.n_nodes)
    offsets = structure.cell_offsets
    for c in range(structure.n_cells):
        a, b = int(offsets[c]), int(offsets[c + 1])
        x[a:b] = np.linalg.solve(structure.cell(c).to_dense(d[a:b]), rhs[a:b])
    return x
