"""NEURON's node set of a cell, in Hines order.

Every section has ``nseg`` segment nodes at ``x = (i + 0.5)/nseg`` and one node at
``x = 1`` without membrane; the root section also owns the cell's root node at ``x = 0``.
Nodes are numbered: the root node first, then section by section (in Import3d's section
order, where a parent section always comes before its children) the segment nodes from
x = 0 to x = 1 and then the section's x = 1 node. So every node's parent has a smaller
index (Hines order), and the nodes of one section are contiguous.

Parents (NEURON's ``nrn_parent_info`` / ``node_index``): segment ``i > 0`` hangs on segment
``i − 1``, the x = 1 node on the last segment, and segment 0 on the node its section is
connected to: the parent's x = 1 node for ``parentx = 1``, the parent's segment
``floor(nseg_p · parentx)`` (clamped to ``nseg_p − 1``) for ``0 < parentx < 1``, and for
``parentx = 0`` the node the parent's own x = 0 end hangs on (the root node for the root).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["NodeLayout", "node_layout"]


@dataclass(frozen=True, eq=False)
class NodeLayout:
    """Index arrays of the node set (see the module docstring).

    Attributes
    ----------
    first_segment : int64[S]
        Node of each section's segment 0; its x = 1 node is ``first_segment + nseg``.
    parent : int64[n_nodes]
        Parent node, ``-1`` for the root node 0.
    section : int64[n_nodes]
        Section owning each node (the root node belongs to section 0).
    x : float64[n_nodes]
        Position along that section.
    is_segment : bool[n_nodes]
        True on segment nodes.
    """

    first_segment: np.ndarray
    parent: np.ndarray
    section: np.ndarray
    x: np.ndarray
    is_segment: np.ndarray

    @property
    def n_nodes(self) -> int:
        return int(self.parent.size)


def node_layout(nseg: np.ndarray, sec_parent: np.ndarray, parent_x: np.ndarray) -> NodeLayout:
    """Build the node set of sections with ``nseg`` segments each.

    Parameters
    ----------
    nseg : int64[S]
        Segments per section.
    sec_parent : int64[S]
        Parent section (``-1`` for section 0, the root); ``sec_parent[k] < k``.
    parent_x : float64[S]
        Where on the parent each section is connected.

    Returns
    -------
    NodeLayout
    """
    nseg = np.asarray(nseg, dtype=np.int64)
    n_sec = nseg.size
    first_segment = 1 + np.concatenate([[0], np.cumsum(nseg + 1)[:-1]]).astype(np.int64)
    n_nodes = 1 + int(np.sum(nseg + 1))
    section = np.zeros(n_nodes, dtype=np.int64)
    section[1:] = np.repeat(np.arange(n_sec), nseg + 1)
    local = np.zeros(n_nodes, dtype=np.int64)  # 0..nseg within a section (nseg: x = 1 node)
    local[1:] = np.arange(n_nodes - 1) - np.repeat(first_segment - 1, nseg + 1)
    is_segment = np.zeros(n_nodes, dtype=bool)
    is_segment[1:] = local[1:] < nseg[section[1:]]
    x = np.zeros(n_nodes)
    x[1:] = np.where(is_segment[1:], (local[1:] + 0.5) / nseg[section[1:]], 1.0)
    parent = np.arange(n_nodes, dtype=np.int64) - 1
    parent[0] = -1
    parent[first_segment] = _attachment_nodes(nseg, sec_parent, parent_x, first_segment)
    return NodeLayout(first_segment, parent, section, x, is_segment)


def _attachment_nodes(nseg, sec_parent, parent_x, first_segment) -> np.ndarray:
    """The node each section's segment 0 hangs on (NEURON's location mapping)."""
    attach = np.zeros(nseg.size, dtype=np.int64)  # the root hangs on node 0
    for k in range(1, nseg.size):
        p, px = int(sec_parent[k]), float(parent_x[k])
        if px == 1.0:
            attach[k] = first_segment[p] + nseg[p]
        elif px == 0.0:
            attach[k] = attach[p]
        else:
            attach[k] = first_segment[p] + min(int(nseg[p] * px), int(nseg[p]) - 1)
    return attach
