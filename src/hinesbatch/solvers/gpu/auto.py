"""``strategy="auto"``: which GPU Hines strategy a batch gets, from its shape alone.

The rule (first version, from ``hinesbatch bench multi`` and ``bench hines`` on the H200,
``benchmarks/results/h200/multi.md`` and ``hines.md``):

* a :class:`~hinesbatch.tree.structure.MonoBatch` (one structure shared by every cell) gets
  ``tiled``: a group of lanes per cell, every cell staged in shared memory; it was the
  fastest from canonical values at every batch size of ``bench hines`` (256 to 256,000 cells);
* a per-cell :class:`~hinesbatch.tree.structure.HinesStructure` (cells may differ) gets
  ``dhs`` while it has fewer cells than half the device's resident threads: DHS then spends
  the idle threads on several threads per cell (it chooses ``k`` per shape for this size);
* a per-cell batch with more cells than that gets ``tiled`` (one thread per cell, each cell
  staged through shared memory, so the cells' differing shapes do not break coalescing).

When the chosen ``tiled`` cannot hold a cell in shared memory the backend falls back to
``interleaved`` (see ``GpuBackend._make``). The rule is a pure function of the batch shape so
that it is tested without a GPU (``tests/unit/test_multi_auto.py``).
"""
from __future__ import annotations

__all__ = ["auto_strategy", "choose", "AUTO_REASON", "SMALL_FRACTION"]

#: Why ``auto`` prefers ``tiled`` for a shared structure (benchmarks/results/h200/hines.md).
AUTO_REASON = ("fastest from canonical-order values for every cell and batch size of the H200 "
               "benchmark (e.g. 1.08 ms against 2.69 ms for interleaved with its transposes, "
               "256000 cells of 313 nodes, fp64; benchmarks/results/h200)")

#: A per-cell batch is "small" below this fraction of the device's resident threads.
SMALL_FRACTION = 0.5


def auto_strategy(structure, *, resident_threads: int) -> tuple[str, str]:
    """The strategy ``auto`` picks for ``structure`` and why.

    Parameters
    ----------
    structure : HinesStructure or MonoBatch
        The batch (only its type and number of cells are read).
    resident_threads : int
        Threads the device keeps in flight (SMs x 2048 on sm_80 / sm_90).

    Returns
    -------
    (name, reason) : (str, str)
        A key of the GPU strategy registry and a sentence for ``describe()``.
    """
    from ...tree.structure import MonoBatch

    return choose(mono=isinstance(structure, MonoBatch), n_cells=int(structure.n_cells),
                  resident_threads=resident_threads)


def choose(*, mono: bool, n_cells: int, resident_threads: int) -> tuple[str, str]:
    """The rule itself, on the batch shape: shared structure or not, number of cells, and the
    device's resident threads (see the module docstring). Returns ``(name, reason)``."""
    if isinstance(resident_threads, bool) or int(resident_threads) < 1:
        raise ValueError(f"resident_threads must be a positive int, got {resident_threads!r}")
    if mono:
        return "tiled", "shared structure (MonoBatch): tiled was " + AUTO_REASON
    limit = int(SMALL_FRACTION * int(resident_threads))
    if n_cells < limit:
        return "dhs", (f"per-cell structures, {n_cells} cells < {limit} (half the device's "
                       f"{int(resident_threads)} resident threads): dhs gives the idle threads "
                       f"to the cells (benchmarks/results/h200/multi.md)")
    return "tiled", (f"per-cell structures, {n_cells} cells >= {limit} (half the device's "
                     f"{int(resident_threads)} resident threads): one thread per cell fills the "
                     f"device; tiled stages each cell in shared memory "
                     f"(benchmarks/results/h200/multi.md)")
