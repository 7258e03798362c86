"""Per-node geometry of one discretized cell (the output of :func:`hinesbatch.discretize`)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..tree.structure import HinesStructure

__all__ = ["CellGeometry"]


@dataclass(frozen=True, eq=False)
class CellGeometry:
    """Compartments of one cell in Hines order, with NEURON's geometry.

    The nodes are NEURON's: each section has ``nseg`` segment nodes at
    ``x = (i + 0.5)/nseg`` and one node at ``x = 1`` (no membrane); the root section also
    owns the cell's root node at ``x = 0`` (no membrane). Children hang on their parent's
    node as NEURON's ``connect`` rules say (docs/geometry.md).

    Attributes (per node, length ``n_nodes``, Hines order: ``parent[i] < i``)
    --------------------------------------------------------------------------
    parent : int64
        Parent node, ``-1`` for the root.
    area_um2 : float64
        Membrane area [µm²] (NEURON's ``seg.area()``); 0 on nodes without membrane.
    ri_megohm : float64
        Axial resistance to the parent node [MΩ] (NEURON's ``seg.ri()``; ``inf`` at the root).
    section : int64
        Index into :attr:`section_names` of the section that owns the node.
    x : float64
        Position of the node along its section (0..1).
    has_membrane : bool
        True on segment nodes, False on the x = 0 and x = 1 nodes.
    diam_um : float64 or None
        Mean diameter of the segment [µm] (NEURON's ``seg.diam``); NaN on nodes without
        membrane.

    Attributes (per section)
    ------------------------
    section_names : tuple of str
        NEURON's names (``soma[0]``, ``dend[3]``, ...).
    nseg : int64
        Segments per section.
    length_um : float64
        Section length [µm] (NEURON's ``L``).
    section_parent : int64
        Parent section (``-1`` for the root section).
    section_parent_x : float64
        Where on the parent the section's x = 0 end attaches.
    section_type : int32 or None
        SWC type of each section (1 soma, 2 axon, 3 dend, 4 apic, ...).

    cm : float
        Specific membrane capacitance [µF/cm²] used.
    ra : float
        Axial resistivity [Ω·cm] used for ``ri_megohm``.
    source : str
        Where the morphology came from.
    soma : str
        How the soma was read: ``"one-point"``, ``"three-point"``, ``"multi-point"`` or
        ``"none"`` (``docs/geometry.md``).
    """

    parent: np.ndarray
    area_um2: np.ndarray
    ri_megohm: np.ndarray
    section: np.ndarray
    x: np.ndarray
    has_membrane: np.ndarray
    section_names: tuple
    nseg: np.ndarray
    length_um: np.ndarray
    section_parent: np.ndarray
    section_parent_x: np.ndarray
    cm: float = 1.0
    ra: float = 35.4
    source: str = "<unknown>"
    diam_um: np.ndarray | None = None
    section_type: np.ndarray | None = None
    soma: str = "<unknown>"

    @property
    def n_nodes(self) -> int:
        return int(self.parent.size)

    @property
    def n_sections(self) -> int:
        return len(self.section_names)

    @property
    def g_axial_uS(self) -> np.ndarray:
        """Axial conductance to the parent [µS] (``1/ri``; 0 at the root)."""
        with np.errstate(divide="ignore"):
            return np.where(np.isfinite(self.ri_megohm), 1.0 / self.ri_megohm, 0.0)

    def hines_structure(self) -> HinesStructure:
        """The cell's symmetric Hines structure in µS: ``u[i] = -g_axial_uS[i]``.

        NEURON's matrix row ``i`` (S/cm², as ``treeset.cpp`` builds it) multiplied by
        ``A_i/100`` (``A_i`` the node's membrane area in µm², NEURON's 100 on the nodes
        without membrane) has off-diagonals ``-1/ri`` in µS, the same in both triangles.
        The simulator adds the diagonal (``A·1e-2·(1e-3·cm/dt + G) + Σ g`` in µS) and the
        right-hand side (nA). ``u`` at the root is 0.
        """
        u = -self.g_axial_uS
        u[self.parent < 0] = 0.0
        return HinesStructure(self.parent, u)

    def node(self, section: str | int, x: float = 0.5) -> int:
        """The node NEURON uses for location ``section(x)`` (IClamp, ``_ref_v``).

        ``0 < x < 1`` maps to segment ``floor(nseg*x)`` (clamped to ``nseg - 1``), so
        ``soma(0.5)`` is segment ``nseg // 2``; ``x = 1`` is the section's end node and
        ``x = 0`` its parent's node at the attachment point.
        """
        if isinstance(section, str):
            try:
                k = self.section_names.index(section)
            except ValueError:
                raise KeyError(
                    f"no section named {section!r} in {self.source}; sections are "
                    f"{', '.join(self.section_names[:8])}{', ...' if self.n_sections > 8 else ''}"
                ) from None
        else:
            k = int(section)
            if not 0 <= k < self.n_sections:
                raise IndexError(
                    f"section {k} out of range: {self.source} has {self.n_sections} sections")
        if not 0.0 <= x <= 1.0:
            raise ValueError(f"x must lie in [0, 1], got {x}")
        nodes = np.flatnonzero(self.section == k)
        seg_nodes = nodes[self.has_membrane[nodes]]
        if x == 1.0:
            return int(nodes[~self.has_membrane[nodes] & (self.x[nodes] == 1.0)][0])
        if x == 0.0:
            return int(self.parent[seg_nodes[0]])
        i = min(int(np.floor(self.nseg[k] * x)), int(self.nseg[k]) - 1)
        return int(seg_nodes[i])
