"""The canonical batched structure (``STORAGE.md`` beside this file), its branches, and the
papers' memory layouts.

``hinesbatch.tree.random_trees`` holds test structures (chains, stars, binary and random
trees, mixed batches) and a dense reference solver, for tests and benchmarks;
``hinesbatch.tree.schedules`` the host-side plans of the multi-morphology strategies
(``levels``, ``fine``, ``dhs``; format in ``schedules/FORMAT.md``), balanced with
:func:`reroot` and :func:`split_branches`.
"""
from .balance import reroot, split_branches, tree_centres
from .branches import (Branches, branches, contiguous_order, depth_order,
                       make_branches_contiguous)
from .layouts import (LAYOUTS, PAD_VALUES, Layout, block_interleaved, flat, interleaved,
                      local_parents)
from .structure import HinesStructure, MonoBatch, as_batch

__all__ = [
    "HinesStructure", "MonoBatch", "as_batch",
    "Branches", "branches", "contiguous_order", "depth_order", "make_branches_contiguous",
    "Layout", "LAYOUTS", "PAD_VALUES", "flat", "interleaved", "block_interleaved",
    "local_parents", "reroot", "split_branches", "tree_centres",
]
