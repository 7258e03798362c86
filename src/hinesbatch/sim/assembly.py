"""The passive membrane equation of a cell as a symmetric Hines system, and its per-step assembly.

NEURON's fixed step (``docs/simulation.md``) solves, per step, with ``M`` the axial
couplings and ``C = 1e-3·cm/dt`` and ``G = g_pas`` per unit area (both 0 on the area-less
x = 0 and x = 1 nodes)::

    (C + G + M)·Δv = -G·(v - e_pas) + s - M·v,      v += Δv

in S/cm² and mA/cm². Multiplying row ``i`` by ``A_i/100`` (``A_i`` the membrane area in µm²,
or NEURON's 100 µm² on the area-less nodes) makes the matrix symmetric, in µS, with the
right-hand side in nA:

* off-diagonal between node ``i`` and its parent: ``-g_i`` with ``g_i = 1/ri_i`` [µS];
* diagonal: ``A_i·1e-2·(1e-3·cm/dt + g_pas) + g_i + Σ_children g_c`` [µS]
  (``A·1e-5·cm/dt`` is the capacitance over dt, ``A·1e-2·g_pas`` the leak, both 0 off-membrane);
* right-hand side: ``-A_i·1e-2·g_pas·(v_i - e_pas) + I_i + g_i·(v_p - v_i) + Σ_c g_c·(v_c - v_i)``
  [nA], ``I_i`` the clamp current [nA] at its node.

The system's nodes are the geometry's, renumbered by depth (:func:`hinesbatch.tree.depth_order`):
a Hines order in which the CPU sweeps overlap the eliminations of different branches (about
twice as fast on one core). ``node_order`` maps back to the geometry's numbering.

The diagonal is constant and precomputed; each step only the right-hand side is assembled
from ``v``. Two assemblers do that in place, with no allocation: a Numba kernel for NumPy
state (CPU backends) and a NumPy/CuPy-generic one built from in-place array operations (used
for device state, and tested against the kernel on NumPy).
"""
from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from .._numba import light_cache_loads_in
from ..tree.branches import depth_order
from ..tree.structure import HinesStructure

__all__ = ["PassiveSystem", "passive_system", "make_assembler"]


@dataclass(frozen=True, eq=False)
class PassiveSystem:
    """Constant coefficients of one passive cell in the symmetric (µS, nA) form.

    Attributes (per node, float64 ``(n_nodes,)`` unless said otherwise)
    -----------------------------------------------------------------------
    structure : HinesStructure
        One cell; ``u = -g_axial_uS`` (the matrix is symmetric).
    parent : int64
        Parent node, ``-1`` at the root.
    g_axial_uS : float64
        Axial conductance to the parent [µS] (``1/ri``; 0 at the root).
    g_leak_uS : float64
        Leak conductance ``A·1e-2·g_pas`` [µS] (0 on nodes without membrane).
    c_dt_uS : float64
        Capacitance over the time step ``A·1e-5·cm/dt`` [µS] (0 on nodes without membrane).
    diagonal_uS : float64
        The constant diagonal ``c_dt + g_leak + g_i + Σ_children g_c`` [µS].
    e_pas : float
        Leak reversal potential [mV].
    node_order : int64
        The geometry's node behind each system node (system node ``j`` is geometry node
        ``node_order[j]``).
    """

    structure: HinesStructure
    parent: np.ndarray
    g_axial_uS: np.ndarray
    g_leak_uS: np.ndarray
    c_dt_uS: np.ndarray
    diagonal_uS: np.ndarray
    e_pas: float
    node_order: np.ndarray

    @property
    def n_nodes(self) -> int:
        return int(self.parent.size)

    def position(self, node: int) -> int:
        """The system node of the geometry's node ``node``."""
        return int(np.flatnonzero(self.node_order == node)[0])


def passive_system(geometry, *, dt: float, cm: float, g_pas: float, e_pas: float) -> PassiveSystem:
    """Build the symmetric passive system of ``geometry`` (a :class:`CellGeometry`).

    Parameters
    ----------
    geometry : CellGeometry
        Nodes in Hines order with ``area_um2`` [µm²], ``ri_megohm`` [MΩ], ``has_membrane``.
    dt : float
        Time step [ms].
    cm : float
        Specific membrane capacitance [µF/cm²].
    g_pas : float
        Leak conductance density [S/cm²].
    e_pas : float
        Leak reversal potential [mV].
    """
    g = np.asarray(geometry.g_axial_uS, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(g))
    if bad.size:
        raise ValueError(
            f"the axial conductance 1/ri is not finite at {bad.size} of {g.size} nodes of "
            f"{geometry.source} (ra = {geometry.ra:g} ohm*cm): ra is too small for float64")
    structure = HinesStructure(geometry.parent, -g)
    order = depth_order(structure)
    structure = structure.renumber(order)
    parent = structure.parent.astype(np.int64)
    area = np.where(geometry.has_membrane, np.asarray(geometry.area_um2, dtype=np.float64), 0.0)[order]
    g = g[order]
    g[parent < 0] = 0.0
    with np.errstate(over="ignore", invalid="ignore"):  # the caller checks for overflow
        c_dt = area * 1e-5 * cm / dt
        g_leak = area * 1e-2 * g_pas
        axial = g.copy()
        np.add.at(axial, parent[parent >= 0], g[parent >= 0])
        diagonal = c_dt + g_leak + axial
    return PassiveSystem(
        structure=structure,
        parent=parent,
        g_axial_uS=g,
        g_leak_uS=g_leak,
        c_dt_uS=c_dt,
        diagonal_uS=diagonal,
        e_pas=float(e_pas),
        node_order=order,
    )


@numba.njit(cache=True)
def _assemble_kernel(v, diag, g_leak, e_pas, g, parent, stim_node, amp, d, rhs):  # pragma: no cover
    n_cells, n = v.shape
    for c in range(n_cells):
        _assemble_cell(v[c], diag, g_leak, e_pas, g, parent, stim_node, amp, d[c], rhs[c])


@numba.njit(cache=True, parallel=True)
def _assemble_kernel_parallel(v, diag, g_leak, e_pas, g, parent, stim_node, amp, d, rhs):  # pragma: no cover
    for c in numba.prange(v.shape[0]):
        _assemble_cell(v[c], diag, g_leak, e_pas, g, parent, stim_node, amp, d[c], rhs[c])


@numba.njit(cache=True, inline="always")
def _assemble_cell(v, diag, g_leak, e_pas, g, parent, stim_node, amp, d, rhs):  # pragma: no cover
    n = v.size
    for i in range(n):
        d[i] = diag[i]
        rhs[i] = -g_leak[i] * (v[i] - e_pas)
    for i in range(1, n):
        p = parent[i]
        f = g[i] * (v[p] - v[i])  # axial current from the parent into node i [nA]
        rhs[i] += f
        rhs[p] -= f
    rhs[stim_node] += amp


@numba.njit(cache=True)
def _advance_kernel(v, dv, trace, k, node):  # pragma: no cover
    n_cells, n = v.shape
    for c in range(n_cells):
        for i in range(n):
            v[c, i] += dv[c, i]
        trace[c, k] = v[c, node]


@numba.njit(cache=True, parallel=True)
def _advance_kernel_parallel(v, dv, trace, k, node):  # pragma: no cover
    n_cells, n = v.shape
    for c in numba.prange(n_cells):
        for i in range(n):
            v[c, i] += dv[c, i]
        trace[c, k] = v[c, node]


class NumbaAssembler:
    """Assembly and update of every cell, on NumPy state, by Numba kernels.

    ``parallel=True`` spreads the cells over Numba's threads (for multi-threaded backends).
    """

    def __init__(self, system: PassiveSystem, xp, *, parallel: bool = False):
        self._sys = system
        self._diag = np.ascontiguousarray(system.diagonal_uS)
        self._assemble = _assemble_kernel_parallel if parallel else _assemble_kernel
        self._advance = _advance_kernel_parallel if parallel else _advance_kernel

    def assemble(self, v, d, rhs, stim_node: int, amp: float) -> None:
        """Fill ``d`` [µS] and ``rhs`` [nA] (both ``(n_cells, n_nodes)``) for state ``v`` [mV]."""
        s = self._sys
        self._assemble(v, self._diag, s.g_leak_uS, s.e_pas, s.g_axial_uS, s.parent,
                       stim_node, amp, d, rhs)

    def advance(self, v, dv, trace, k: int, node: int) -> None:
        """``v += dv`` [mV], then record ``v[:, node]`` into column ``k`` of ``trace``."""
        self._advance(v, dv, trace, k, node)


class ArrayAssembler:
    """The same assembly and update from in-place array operations of ``xp`` (NumPy or CuPy).

    Keeps one scratch array of shape ``(n_cells, n_nodes - 1)``; the state never leaves the
    array module's memory.
    """

    def __init__(self, system: PassiveSystem, xp, *, parallel: bool = False):
        del parallel  # the array library decides
        n = system.n_nodes
        self._xp = xp
        self._e = float(system.e_pas)
        self._neg_g_leak = xp.asarray(-system.g_leak_uS)
        self._diag = xp.asarray(system.diagonal_uS)
        self._parent = xp.asarray(system.parent[1:])
        self._g = xp.asarray(system.g_axial_uS[1:])
        self._n = n
        self._scratch = None

    def assemble(self, v, d, rhs, stim_node: int, amp: float) -> None:
        """Fill ``d`` [µS] and ``rhs`` [nA] (both ``(n_cells, n_nodes)``) for state ``v`` [mV]."""
        xp = self._xp
        xp.copyto(d, self._diag)
        xp.subtract(v, self._e, out=rhs)
        rhs *= self._neg_g_leak
        if self._n > 1:
            f = self._scratch
            if f is None or f.shape[0] != v.shape[0]:
                f = self._scratch = xp.empty((v.shape[0], self._n - 1), dtype=v.dtype)
            xp.take(v, self._parent, axis=1, out=f)
            xp.subtract(v[:, 1:], f, out=f)
            f *= self._g  # axial current from each node into its parent [nA]
            rhs[:, 1:] -= f
            xp.add.at(rhs, (slice(None), self._parent), f)  # (CuPy: a scatter-add)
        rhs[:, stim_node] += amp

    def advance(self, v, dv, trace, k: int, node: int) -> None:
        """``v += dv`` [mV], then record ``v[:, node]`` into column ``k`` of ``trace``."""
        v += dv
        trace[:, k] = v[:, node]


_ASSEMBLERS = {"numpy": NumbaAssembler}


def make_assembler(system: PassiveSystem, xp, *, parallel: bool = False):
    """The assembler for state held by array module ``xp`` (Numba for NumPy, else array ops)."""
    cls = _ASSEMBLERS.get(xp.__name__, ArrayAssembler)
    return cls(system, xp, parallel=parallel)


light_cache_loads_in(globals())  # cached machine code loads without compiler set-up
