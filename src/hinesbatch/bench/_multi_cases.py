"""The batches and measurements of ``hinesbatch bench multi`` (see :mod:`.multi`)."""
from __future__ import annotations

import statistics
import warnings
from pathlib import Path

import numpy as np

__all__ = ["CONTENDERS", "SHARING", "Case", "cases", "random_batch", "real_cells", "real_mix",
           "values", "gpu_ms"]

#: (label, strategy, options) timed on every case; auto's pick is always one of them.
CONTENDERS = (
    ("interleaved", "interleaved", {}),  # one thread per cell, the papers' "old" solver
    ("tiled", "tiled", {}),
    ("levels", "levels", {}),
    ("fine", "fine", {}),
    ("dhs", "dhs", {}),
    ("fine-balanced", "fine", {"reroot": True, "split": "cost"}),
    # cells with the same matrix solved together: one launch per class, and every class in
    # one launch (refused where a class's width is not one that launch is compiled for)
    ("grouped", "grouped", {"one_launch": False}),
    ("grouped-one", "grouped", {"one_launch": True}),
)
#: The contenders that solve each class of cells with one matrix once (the mixed/mono
#: target is also reported without them).
SHARING = ("grouped", "grouped-one")
FINE_GRAINED = ("levels", "fine", "dhs", "fine-balanced")
REAL_DIR = Path("tests/data/morphologies/real")
FOCUS = "morph_ca1_n120.swc"


class Case:
    """One batch to time: figure, label, a builder of the structure, and what else to run."""

    def __init__(self, figure: str, label: str, build, *, n_cells: int, cpu: bool = False,
                 mono_equivalent: bool = False):
        self.figure, self.label, self.build = figure, label, build
        self.n_cells, self.cpu, self.mono_equivalent = n_cells, cpu, mono_equivalent


def _root() -> Path:
    here = Path(__file__).resolve()
    for root in (Path.cwd(), here.parents[3]):
        if (root / REAL_DIR).is_dir():
            return root
    raise FileNotFoundError(f"{REAL_DIR} is not in this directory or the source tree; run from "
                            "the repository")


def real_cells(nseg: int = 1) -> dict:
    """Every repository morphology as a one-cell HinesStructure (NEURON's rules, ``nseg``,
    ``min_radius=0.01`` µm: one file has a zero radius), by file name."""
    from ..discretize import discretize

    out = {}
    with warnings.catch_warnings():  # SWC convention warnings of real files: not our topic
        warnings.simplefilter("ignore")
        for p in sorted((_root() / REAL_DIR).glob("*.swc")):
            out[p.name] = discretize(p, nseg=nseg, min_radius=0.01).hines_structure()
    return out


def large_cell():
    """The large-cell target's cell: morph_ca1_n120 at nseg=8 (1405 nodes), one-cell structure."""
    from ..discretize import discretize

    with warnings.catch_warnings():  # SWC convention warnings of real files: not our topic
        warnings.simplefilter("ignore")
        return discretize(_root() / REAL_DIR / FOCUS, nseg=8, min_radius=0.01).hines_structure()


def _from_cells(parents_local, u, sizes):
    """A HinesStructure from per-node local parents (-1 at roots), ``u`` and cell sizes."""
    from ..tree.structure import HinesStructure

    offsets = np.zeros(sizes.size + 1, np.int64)
    np.cumsum(sizes, out=offsets[1:])
    first = np.repeat(offsets[:-1], sizes)
    parent = np.where(parents_local >= 0, parents_local + first, -1)
    return HinesStructure(parent, u, None, offsets)


def real_mix(cells: dict, n_cells: int, *, seed: int = 0, distinct: bool = False):
    """``n_cells`` cells drawn at random from ``cells`` (built without a per-cell loop);
    ``distinct``: every cell's couplings scaled by its own factor in [0.9, 1.1] (as if each
    cell had its own axial resistivity), so that no two cells share a matrix."""
    shapes = list(cells.values())
    pick = np.random.default_rng(seed).integers(0, len(shapes), n_cells)
    sizes = np.array([c.n_nodes for c in shapes], np.int64)
    starts = np.zeros(len(shapes) + 1, np.int64)
    np.cumsum(sizes, out=starts[1:])
    local_parent = np.concatenate([c.parent.astype(np.int64) for c in shapes])
    u = np.concatenate([np.asarray(c.u, np.float64) for c in shapes])
    cell_sizes = sizes[pick]
    src = np.repeat(starts[pick], cell_sizes) + (
        np.arange(int(cell_sizes.sum())) - np.repeat(np.cumsum(cell_sizes) - cell_sizes, cell_sizes))
    u = u[src]
    if distinct:
        u *= np.repeat(np.random.default_rng(seed + 1).uniform(0.9, 1.1, n_cells), cell_sizes)
    return _from_cells(local_parent[src], u, cell_sizes)


def random_batch(n_cells: int, n: int, p: float, *, seed: int = 0, mono: bool = False):
    """Random trees of ``n`` nodes (``tree.random_trees.random_parents``' rule: each node hangs
    on a random earlier node with probability ``p``, else continues the chain), every cell a
    different tree, or one tree shared by all (``mono``: a MonoBatch)."""
    from ..tree.random_trees import random_tree
    from ..tree.structure import MonoBatch

    rng = np.random.default_rng(seed)
    if mono:
        return MonoBatch(random_tree(n, rng=rng, branch_probability=p), n_cells)
    parent, u = _random_cells(rng, n_cells, n, p)
    return _from_cells(parent.reshape(-1), u.reshape(-1), np.full(n_cells, n, np.int64))


def _random_cells(rng, n_cells: int, n: int, p: float):
    """Local parents and couplings ``(n_cells, n)`` of :func:`random_batch`'s trees."""
    i = np.arange(n)
    jump = rng.random((n_cells, n)) < p
    parent = np.where(jump, np.floor(rng.random((n_cells, n)) * i).astype(np.int64), i - 1)
    parent[:, 0] = -1
    return parent, -rng.uniform(0.5, 1.5, (n_cells, n))


def repeated_shapes(n_shapes: int, copies: int, n: int, p: float, *, seed: int = 0):
    """``n_shapes`` of :func:`random_batch`'s trees, each ``copies`` times with the same
    matrix, in a random order: many classes of cells with one matrix, a few cells each (``auto``
    gives ``grouped`` at most one class per SM; :mod:`hinesbatch.solvers.gpu.auto`)."""
    rng = np.random.default_rng(seed)
    parent, u = _random_cells(rng, n_shapes, n, p)
    pick = rng.permutation(np.repeat(np.arange(n_shapes), copies))
    return _from_cells(parent[pick].reshape(-1), u[pick].reshape(-1),
                       np.full(pick.size, n, np.int64))


def chain_cells(n_cells: int, n: int):
    """``n_cells`` copies of one unbranched cable of ``n`` nodes (a MonoBatch): the case that
    leaves ``tiled``'s lanes idle (two nodes per step from its centre)."""
    from ..tree.random_trees import chain
    from ..tree.structure import MonoBatch

    return MonoBatch(chain(n, rng=n), n_cells)


def binary_cells(depth: int, n_cells: int, *, nodes: int = 512):
    """Valero-Lara's Fig. 14 cells: a full binary tree of ``depth`` branch levels (2**depth - 1
    equal branches) of about ``nodes`` nodes, shared by ``n_cells`` cells (a MonoBatch)."""
    from ..tree.random_trees import binary_tree
    from ..tree.structure import MonoBatch

    return MonoBatch(binary_tree(depth, branch_length=nodes // (2**depth - 1), rng=depth), n_cells)


def values(structure, *, seed: int = 1):
    """``(d, rhs)`` float64 in ``structure.values_shape``: diagonally dominant like a Hines step
    (``d = sum|offdiag| (1 + U(0.1, 1)) + U(0.1, 1)``)."""
    from ..tree.structure import MonoBatch

    rng = np.random.default_rng(seed)
    cell = structure.cell if isinstance(structure, MonoBatch) else structure
    parent = np.asarray(cell.parent)
    child = np.flatnonzero(parent >= 0)
    sums = np.zeros(parent.size)
    sums[child] += np.abs(np.asarray(cell.lower)[child])
    sums += np.bincount(parent[child], weights=np.abs(np.asarray(cell.u)[child]),
                        minlength=parent.size)
    shape = structure.values_shape
    d = sums * (1 + rng.uniform(0.1, 1.0, shape)) + rng.uniform(0.1, 1.0, shape)
    rhs = rng.standard_normal(shape) * (1 + sums)
    return d, rhs


def gpu_ms(cupy, structure, d0, r0, strategy: str, options: dict, *, repeats: int, l2: int):
    """``(ms, describe, x)``: median CUDA-event time [ms] of the plan's backend solving the
    float64 CuPy values ``d0``, ``r0`` (canonical order, pivots not checked), its
    ``describe()``, and the solution of the last timed solve (CuPy)."""
    import hinesbatch
    from hinesbatch.solvers.gpu import layout_solver

    from ._gpu_timing import event_times, rotation_sets

    plan = hinesbatch.plan(structure, backend="gpu", strategy=strategy, check_pivots=False,
                           **options)
    impl = layout_solver(plan, np.float64)
    sets = rotation_sets(2 * d0.nbytes, l2, cap=8)
    work = [(cupy.empty_like(d0), cupy.empty_like(r0)) for _ in range(sets)]

    def restore(i):
        cupy.copyto(work[i][0], d0)
        cupy.copyto(work[i][1], r0)

    def solve(i):
        plan.solve(*work[i], overwrite=True, check_finite=False)

    ms = statistics.median(event_times(cupy, solve, restore, sets=sets, repeats=repeats))
    return ms, impl.describe(), work[-1][1]


def cases(quick: bool) -> list[Case]:
    """The batches, most important first (the speed targets), each built on demand."""
    cache: dict = {}

    def real(nseg=1):
        if nseg not in cache:
            cache[nseg] = real_cells(nseg)
        return cache[nseg]

    from ..tree.structure import MonoBatch

    def mono_real(nseg, n):
        return lambda: MonoBatch(real(nseg)[FOCUS], n)

    out = []
    if not quick:
        out.append(Case("large-cell", "3000 x ca1 (nseg=8)", lambda: MonoBatch(large_cell(), 3000),
                        n_cells=3000))
    out.append(Case("small-batch", "100 x ca1 (nseg=1)", mono_real(1, 100), n_cells=100))
    mixes = (100, 2560) if quick else (100, 2560, 25600, 256000)
    for n in mixes:
        out.append(Case("real-mix", f"{n} real cells", lambda n=n: real_mix(real(), n, seed=n),
                        n_cells=n, mono_equivalent=True))
    n = 2560 if quick else 25600  # the same mix, but no two cells with the same matrix
    out.append(Case("real-mix", f"{n} real cells, all matrices distinct",
                    lambda n=n: real_mix(real(), n, seed=n, distinct=True), n_cells=n,
                    mono_equivalent=True))
    for p in (0.1, 0.5):
        n6 = 2560 if quick else 25600
        out.append(Case("fig6", f"{n6} random p={p} mono",
                        lambda p=p, n6=n6: random_batch(n6, 200, p, seed=6, mono=True), n_cells=n6))
        out.append(Case("fig6", f"{n6} random p={p} multi",
                        lambda p=p, n6=n6: random_batch(n6, 200, p, seed=6), n_cells=n6))
    sizes14 = (256, 2560) if quick else (256, 2560, 25600, 256000)
    for depth in (2, 3, 4):
        for n in sizes14:
            out.append(Case("fig14", f"{n} binary depth {depth}",
                            lambda depth=depth, n=n: binary_cells(depth, n), n_cells=n, cpu=True))
    arbor = ((10, 1000) if quick else (10, 1000, 10000))
    for level, p in (("high", 0.9), ("medium", 0.5), ("low", 0.1)):
        for n in arbor:
            out.append(Case("arbor", f"{n} random {level} (p={p})",
                            lambda n=n, p=p: random_batch(n, 200, p, seed=n), n_cells=n))
    if not quick:
        out.append(Case("arbor", "100000 random medium (p=0.5)",
                        lambda: random_batch(100000, 200, 0.5, seed=7), n_cells=100000))
    # where auto's rule rested on neighbouring cases only: many classes of a few cells each
    # (near grouped's one class per SM), and shared cells that are long unbranched cables
    shapes, copies = (96, 5) if quick else (128, 10)
    out.append(Case("limits", f"{shapes * copies} cells of {shapes} shapes ({copies} each)",
                    lambda: repeated_shapes(shapes, copies, 200, 0.5, seed=shapes),
                    n_cells=shapes * copies))
    for n in ((2560,) if quick else (2560, 25600)):
        out.append(Case("limits", f"{n} x chain of 1000 nodes", lambda n=n: chain_cells(n, 1000),
                        n_cells=n))
    # the largest Fig. 14 batches last: the budget skips them first
    return sorted(out, key=lambda c: c.figure == "fig14" and c.n_cells > 100000)
