"""``strategy="auto"``: which GPU Hines strategy a batch gets, from its shape and the SM count.

The rule follows timings of ``hinesbatch bench multi`` and ``hinesbatch bench hines`` (fp64,
canonical values, H100 and H200; the measurements behind each choice are recorded in
``docs/decisions/``):

* a :class:`~hinesbatch.tree.structure.MonoBatch` (one structure shared by every cell) gets
  ``tiled`` (lanes of a warp per cell, the cell staged in shared memory): the fastest, or
  within 10 % of the fastest, on 100 to 256,000 cells of 200 to 1,405 nodes. Deep trees
  included (Fig. 14's 2-level binary trees, 510 nodes, two thirds on one root-to-leaf path):
  the cell is eliminated from its centre where that takes fewer steps, and 256,000 of them
  take 2.62 ms with ``tiled`` against 5.62 with ``interleaved`` on an H100. An unbranched
  cable leaves most of ``tiled``'s lanes idle (two nodes per step), yet copies of a
  1,000-node one take 0.233 ms with ``tiled`` against 0.802 for balanced ``fine`` (2,560
  cells) and 1.89 against 2.05 for ``interleaved`` (25,600; H100);
* per-cell structures whose cells fall into few classes of cells with the same matrix (at
  most one class per SM of the device, :data:`GROUPED_MAX_CLASSES` when the SM count is not
  known: a batch built from a few morphologies, or a few cells) get ``grouped``: every class
  solved as a shared structure by ``tiled``'s kernel, 24 bytes per node moved instead of 44,
  all classes in one launch (so a class of a few cells costs no launch of its own). Fastest
  on an H100 from 100 real cells (0.037 ms against 0.066 for balanced ``fine``) to 256,000,
  on 10 random cells (0.015-0.018 against 0.029-0.034) and on 1,280 random cells of 128
  trees (0.020 against 0.037). The one launch keeps one persistent block per SM; with more
  classes than blocks, the blocks that finish together all move to the same class and wait
  on one another (``hines_tiled_classes``): random cells of 200 nodes on an H100 (132 SMs)
  take 0.016-0.020 ms with ``grouped`` up to 128 classes against 0.035-0.039 with ``tiled``,
  then 0.17-0.19 ms at 192 classes and 1.9 ms at 512, whatever the copies per class (1 to 16);
* other per-cell structures (:class:`~hinesbatch.tree.structure.HinesStructure`) of nearly equal
  sizes (largest cell at most :data:`UNIFORM_SPREAD` times the mean) get ``tiled``: one
  thread per cell, each cell staged through shared memory, and the threads of a warp finish
  together (25,600 random trees of 200 nodes: 0.20 ms against 0.54 ms for balanced fine);
* other per-cell structures of mixed sizes (real morphologies: 30 to 1,681 nodes, every
  matrix different) get ``fine`` with ``reroot=True, split="cost"``: one thread per branch,
  whole cells per block, so a large cell does not keep a warp of small ones waiting (25,600
  real cells whose matrices all differ: 1.258 ms against 1.249 for ``dhs``, the fastest).

When the chosen ``tiled`` cannot hold a cell in shared memory the backend falls back to
``interleaved`` (``GpuBackend._make``). The rule is a pure function of the batch shape and
the SM count so that it is tested without a GPU (``tests/unit/test_multi_auto.py``).
"""
from __future__ import annotations

import numpy as np

__all__ = ["auto_strategy", "choose", "depth_fraction", "AUTO_REASON", "UNIFORM_SPREAD",
           "GROUPED_MAX_CLASSES"]

#: Why ``auto`` prefers ``tiled`` for a shared structure (shown by ``Plan.describe()``).
AUTO_REASON = ("the fastest, or within 10 % of the fastest, from canonical-order values on 100 "
               "to 256000 cells of 200 to 1405 nodes (e.g. 1.08 ms against 2.69 ms for "
               "interleaved with its transposes, 256000 cells of 313 nodes, fp64, H200)")
#: Per-cell batches whose largest cell is at most this times the mean size count as uniform.
UNIFORM_SPREAD = 1.5
#: ``grouped`` for per-cell batches of at most this many classes of cells with one matrix when
#: the device's SM count is not known (else one class per SM; module docstring).
GROUPED_MAX_CLASSES = 64
#: The balanced ``fine`` of mixed per-cell batches.
BALANCED_FINE = {"reroot": True, "split": "cost"}


def depth_fraction(parent) -> float:
    """Nodes on the longest root-to-leaf path of one cell over its nodes (parents in Hines
    order: ``parent[i] < i``, -1 at the root)."""
    from ...tree.branches import node_depths

    parent = np.asarray(parent, dtype=np.int64)
    if not parent.size:
        return 0.0
    return float(node_depths(parent).max() + 1) / parent.size


def auto_strategy(structure, sms: int | None = None) -> tuple[str, dict, str]:
    """The strategy ``auto`` picks for ``structure``, its options and why.

    Parameters
    ----------
    structure : HinesStructure or MonoBatch
        The batch (its type, number of cells and cell sizes are read; for a per-cell
        structure also the number of classes of cells with the same matrix,
        :func:`~hinesbatch.tree.schedules.cell_shapes` with ``couplings=True``).
    sms : int, optional
        The device's streaming multiprocessors (``grouped`` takes at most one class per SM;
        :data:`GROUPED_MAX_CLASSES` when not given).

    Returns
    -------
    (name, options, reason) : (str, dict, str)
        A key of the GPU strategy registry, options for it, and a sentence for ``describe()``.
    """
    from ...tree.schedules import cell_shapes
    from ...tree.structure import MonoBatch

    if isinstance(structure, MonoBatch):
        n = structure.cell.n_nodes
        return choose(mono=True, n_cells=int(structure.n_cells), mean_nodes=n, max_nodes=n)
    sizes = structure.cell_sizes
    return choose(mono=False, n_cells=int(structure.n_cells),
                  mean_nodes=float(sizes.mean()) if sizes.size else 0.0,
                  max_nodes=int(sizes.max()) if sizes.size else 0,
                  classes=cell_shapes(structure, couplings=True).n_shapes, sms=sms)


def choose(*, mono: bool, n_cells: int, mean_nodes: float, max_nodes: int,
           classes: int | None = None, sms: int | None = None) -> tuple[str, dict, str]:
    """The rule itself on the batch shape (see the module docstring).

    ``classes``: classes of cells with the same matrix (per-cell structures; ``None``:
    unknown, as in benchmark rows that do not record it). ``sms``: the device's SM count
    (``None``: unknown). Returns ``(name, options, reason)``.
    """
    if mono:
        return "tiled", {}, "shared structure (MonoBatch): tiled was " + AUTO_REASON
    most = GROUPED_MAX_CLASSES if sms is None else int(sms)
    if classes is not None and 0 < classes <= most:
        per = "one per SM" if sms is not None else "the SM count not known"
        return "grouped", {}, (
            f"{n_cells} per-cell structures in {classes} classes of cells with the same matrix "
            f"(<= {most} classes, {per}): each class solved as a shared structure, all in one "
            f"launch, was fastest on real mixes of 100 to 256000 cells, on 10 random cells and "
            f"on 1280 of 128 trees (H100, fp64)")
    if max_nodes <= UNIFORM_SPREAD * mean_nodes:
        return "tiled", {}, (
            f"per-cell structures of nearly equal sizes (largest {max_nodes} <= "
            f"{UNIFORM_SPREAD} x mean {mean_nodes:.0f} nodes): one thread per cell staged in "
            f"shared memory was fastest (25600 random trees of 200 nodes, fp64, H200)")
    return "fine", dict(BALANCED_FINE), (
        f"per-cell structures of mixed sizes (largest {max_nodes} > {UNIFORM_SPREAD} x mean "
        f"{mean_nodes:.0f} nodes) of too many classes for grouped: balanced fine (reroot, "
        f"split cost) was within 1 % of the fastest on 25600 real cells whose matrices all "
        f"differ (fp64, H100)")
