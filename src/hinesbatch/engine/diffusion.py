"""The tree of a mechanism's instances for its longitudinal diffusion (NEURON's
``LONGITUDINAL_DIFFUSION``, :class:`~hinesbatch.mechanisms.description.Diffusion`).

NEURON's ``ldifus.cpp`` couples each instance to the instance of its parent node; where
that node has none (the x = 1 node of the parent section, or the root node), to the
instance of the parent's parent; failing that, to the instance on the first segment of
the parent section. With ``dx`` a segment's length ``L/nseg`` [µm] of its own section, the
instance's ``af = 2/dx_p/(dx_i + dx_p)`` and ``bf = 2/dx_i/(dx_i + dx_p)`` [1/µm²]
(NEURON multiplies ``af`` by the section's ``rallbranch``, which is 1 here).

Worked example: a soma (one segment, L = 10 µm) and a dendrite of two segments
(L = 100 µm) at the soma's x = 1, the mechanism everywhere. In the engine's order the
instances are soma, dend(0.25), dend(0.75); their parents -1, 0, 1; dend(0.25) has
``dx_i = 50``, ``dx_p = 10``, so ``af = 2/10/60``, ``bf = 2/50/60``.
"""
from __future__ import annotations

import numpy as np

from ..mechanisms.codegen import DIFFUSION_ROWS

__all__ = ["diffusion_arrays"]


def diffusion_arrays(layout, mech: str) -> tuple:
    """``(_LP, _LC)`` of density mechanism ``mech`` in ``layout``: each instance's parent
    instance (int64, global index, -1 at a root) and the float64 rows
    :data:`~hinesbatch.mechanisms.codegen.DIFFUSION_ROWS` × instances, ``af`` and ``bf``
    filled in (the others are the kernels' scratch)."""
    nodes, offsets = layout.nodes[mech], layout.offsets[mech]
    parent = np.full(nodes.size, -1, dtype=np.int64)
    coef = np.zeros((len(DIFFUSION_ROWS), nodes.size))
    for cl in layout.cells:
        j0, j1 = int(offsets[cl.gid]), int(offsets[cl.gid + 1])
        if j0 == j1:
            continue
        geo = cl.geometry
        old = cl.perm[nodes[j0:j1] - cl.start]
        instance = {int(n): j0 + k for k, n in enumerate(old)}
        dx = geo.length_um / geo.nseg
        for k, n in enumerate(old):
            p = _parent_node(geo, int(n), instance)
            if p < 0:
                continue
            j = j0 + k
            parent[j] = instance[p]
            dxc, dxp = dx[geo.section[n]], dx[geo.section[p]]
            coef[0, j] = 2.0 * 1.0 / dxp / (dxc + dxp)
            coef[1, j] = 2.0 / dxc / (dxc + dxp)
    return parent, coef


def _parent_node(geo, node: int, instance: dict) -> int:
    """The node of ``node``'s parent instance (NEURON's ``longdifusalloc``), or -1."""
    p = int(geo.parent[node])
    if p in instance:
        return p
    first = _first_segment(geo, int(geo.section_parent[geo.section[node]]))
    grand = int(geo.parent[p]) if p >= 0 else -1
    if grand >= 0 and grand in instance:
        return grand
    return first if first in instance else -1


def _first_segment(geo, section: int) -> int:
    """The node of the first segment of ``section`` (-1 for none)."""
    if section < 0:
        return -1
    nodes = np.flatnonzero((geo.section == section) & geo.has_membrane)
    return int(nodes[np.argmin(geo.x[nodes])]) if nodes.size else -1
