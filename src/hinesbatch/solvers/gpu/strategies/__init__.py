"""The GPU strategies: how one device solves its part of a batch.

Every strategy works on a :class:`~hinesbatch.solvers.gpu.device_parts.Part`. It has a
*native layout* (where it wants the values) and two entry points:

* ``solve_canonical(d, rhs, pivots, stream)``: values in the canonical order (a view of the
  caller's arrays); layouts other than the canonical one go through a device scratch buffer
  in chunks of cells (transpose in, solve, transpose out), sized by the memory budget;
* ``solve_native(d, rhs, pivots, stream)``: values already in the native layout (no transposes).

``pivots`` is ``(flag, values)``: the part's failure flag (uint64[1]) and one pivot slot per
cell (see kernels/hines_common.cuh).

=====================  ================================  ==================================
strategy               native layout                     kernel
=====================  ================================  ==================================
``flat``               canonical                         ``hines_strided`` (paper's Flat)
``interleaved``        ``(1, n, n_cells)`` [#]_          ``hines_strided`` (Full-Interleaved)
``block-interleaved``  ``(ceil(n_cells/bs), n, bs)``     ``hines_strided`` (Block-Interleaved)
``block-shared``       ``(ceil(n_cells/bs), n, bs)``     ``hines_block_shared`` (paper §3.1),
                                                         ``hines_factors`` (keep="factors")
``tiled``              slot order [#]_                   ``hines_tiled_*`` (staged in smem)
=====================  ================================  ==================================

.. [#] With chunks (``max_bytes``), Full-Interleaved within each chunk: ``bs`` = chunk cells.
.. [#] Shared structures: ``(n_cells, pitch)``, each cell's values in its schedule's slots,
   ``pitch`` = n rounded up to 16 bytes (:meth:`SharedTiles.pitch`), copied in and out of
   shared memory by bulk copies (``hines_tiled_slots``); canonical for per-cell structures
   and for widths that kernel is not built for (:data:`..kernel_build.SLOT_VARIANTS`).

The multi-morphology strategies ``grouped`` (:mod:`.grouped`, classes of identical cells
solved as shared structures) and ``levels``, ``fine`` and ``dhs`` (:mod:`.multi_morphology`,
schedules of :mod:`hinesbatch.tree.schedules`) keep canonical or slot-ordered values.

Modules: :mod:`.base` (the base class and launch helpers), :mod:`.strided` (``flat``,
``interleaved``, ``block-interleaved``), :mod:`.block_shared`, :mod:`.shared_tiles` (the
planner of the tiled kernels), :mod:`.tiled`, :mod:`.grouped` and :mod:`.classes_launch` (its
one launch), :mod:`.multi_morphology`.

The strategies are looked up by name in :data:`STRATEGIES`, declared here; nothing switches on
names.
"""
from __future__ import annotations

from .base import Strategy
from .block_shared import BlockShared
from .grouped import Grouped
from .multi_morphology import DHS, Fine, Levels
from .shared_tiles import SharedTiles
from .strided import BlockInterleaved, Flat, Interleaved
from .tiled import Tiled

__all__ = ["STRATEGIES", "Strategy", "SharedTiles", "Flat", "Interleaved", "BlockInterleaved",
           "BlockShared", "Tiled", "Grouped", "Levels", "Fine", "DHS"]

#: Strategy name -> class (the GPU backend's ``strategy=`` option), every strategy listed once.
STRATEGIES: dict[str, type[Strategy]] = {
    cls.name: cls for cls in (Flat, Interleaved, BlockInterleaved, BlockShared, Tiled, Grouped,
                              Levels, Fine, DHS)
}
