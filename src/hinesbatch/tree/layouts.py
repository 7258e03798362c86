"""Pack and unpack batch values between the canonical order and the papers' GPU layouts.

Valero-Lara et al. (2017) store the vectors of many Hines systems in three ways:

* **Flat**: each system's elements contiguous, systems one after another. This *is* the
  canonical storage (``(n_cells, n)`` for a :class:`MonoBatch`, the concatenation for a
  :class:`HinesStructure`): packing and unpacking return the array itself, no copy.
* **Full-Interleaved**: the first element of every system, then every second element, ...:
  shape ``(n, n_cells)`` (node-major), element ``j`` of cell ``c`` at ``[j, c]``.
* **Block-Interleaved** with block size ``BS``: cells grouped ``BS`` at a time, each group
  Full-Interleaved: shape ``(ceil(n_cells / BS), n, BS)``, element ``j`` of cell ``c`` at
  ``[c // BS, j, c % BS]``.

Padding. Interleaved layouts are rectangular: when cells differ in size every cell is padded
to the largest (``n`` is then the largest cell's size), and Block-Interleaved pads the last
block with whole padding cells. A padding node is an identity row that couples to nothing,
so that a kernel may run every lane over all ``n`` rows without a test:

==========  =============  ================================================================
array       padding value  why
==========  =============  ================================================================
d           1              identity row: the padding unknown solves to ``rhs / 1``
rhs         0              so its solution is 0
u, l        0              no coupling: real nodes are not changed by padding nodes, and
                           ``d[p] -= (0/1)*0`` leaves the parent's pivot bit-identical
parent      ``j - 1``      padding node ``j`` hangs on node ``j - 1`` (``-1`` for ``j = 0`` of
                           a padding cell): a valid index in Hines order, never out of range
==========  =============  ================================================================

:data:`PAD_VALUES` holds these; :meth:`Layout.pack_parents` applies the parent rule. Parents
in a packed layout are *local* indices (node ``j`` of cell ``c`` hangs on node
``parent[j]`` of the same cell), whereas the canonical :class:`HinesStructure` stores
global ones.

Everything is generic over the array module: NumPy in, NumPy out; CuPy in, CuPy out (the
index maps are copied to the device once and cached).
"""
from __future__ import annotations

import numpy as np

from ..array_modules import array_module
from .structure import HinesStructure, MonoBatch, as_batch

__all__ = ["Layout", "flat", "interleaved", "block_interleaved", "LAYOUTS", "PAD_VALUES",
           "local_parents"]

#: Values given to padding entries by array name (see the module docstring).
PAD_VALUES = {"d": 1.0, "rhs": 0.0, "u": 0.0, "l": 0.0}


def local_parents(structure) -> np.ndarray:
    """Each node's parent as an index within its own cell (int32, ``-1`` at roots).

    Shape ``structure.values_shape``: the shared cell's parents repeated for a
    :class:`MonoBatch`.
    """
    s = as_batch(structure)
    if isinstance(s, MonoBatch):
        return np.broadcast_to(s.cell.parent, s.values_shape).copy()
    first = np.repeat(s.cell_offsets[:-1], s.cell_sizes)
    return np.where(s.parent >= 0, s.parent - first, -1).astype(np.int32)


class Layout:
    """Where every value of a batch lives in a packed array.

    Build with :func:`flat`, :func:`interleaved` or :func:`block_interleaved`. ``kind`` is
    ``"flat"``, ``"interleaved"`` or ``"block_interleaved"``; ``shape`` the packed shape;
    ``values_shape`` the canonical one; ``n`` the padded system size; ``block_size`` the
    systems per block (``n_cells`` for Full-Interleaved, ``None`` for Flat).
    """

    def __init__(self, structure, kind: str, block_size: int | None):
        s = as_batch(structure)
        self.kind = kind
        self.values_shape = s.values_shape
        self.n_cells = s.n_cells
        if isinstance(s, MonoBatch):
            sizes = np.full(s.n_cells, s.nodes_per_cell, dtype=np.int64)
            self.n = s.nodes_per_cell
        else:
            sizes = s.cell_sizes
            self.n = int(sizes.max(initial=0))
        self.cell_sizes = sizes
        self.uniform = bool(np.all(sizes == self.n))
        self.block_size = block_size
        if kind == "flat":
            self.shape = self.values_shape
        elif kind == "interleaved":
            self.shape = (self.n, self.n_cells)
        else:
            self.shape = (-(-self.n_cells // block_size), self.n, block_size)
        self._dest_np = None if self.uniform or kind == "flat" else self._destinations()
        self._dest = {}

    def __repr__(self) -> str:
        bs = f", block_size={self.block_size}" if self.kind == "block_interleaved" else ""
        return f"<Layout {self.kind}{bs}: values {self.values_shape} -> packed {self.shape}>"

    # -- index maps for cells of different sizes ---------------------------------------------
    def _destinations(self) -> np.ndarray:
        """Flat index in the packed array of every canonical entry (int64[n_nodes])."""
        cell = np.repeat(np.arange(self.n_cells), self.cell_sizes)
        first = np.repeat(np.cumsum(self.cell_sizes) - self.cell_sizes, self.cell_sizes)
        node = np.arange(cell.size) - first
        bs = self.n_cells if self.kind == "interleaved" else self.block_size
        return ((cell // bs) * self.n + node) * bs + cell % bs

    def _dest_for(self, xp):
        dest = self._dest.get(xp.__name__)
        if dest is None:
            dest = self._dest[xp.__name__] = xp.asarray(self._dest_np)
        return dest

    # -- packing -------------------------------------------------------------------------------
    def pack(self, values, *, fill=0.0):
        """``values`` (canonical, ``values_shape``) in this layout, a new array of its dtype.

        ``fill``: value of the padding entries, a scalar or an array of ``n`` (one per row);
        use :data:`PAD_VALUES` (``d`` 1, ``rhs``/``u``/``l`` 0). Flat returns ``values``.
        """
        xp = array_module(values)
        values = xp.asarray(values)
        _check_shape(values, self.values_shape, "values")
        if self.kind == "flat":
            return values
        out = xp.empty(self.shape, dtype=values.dtype)
        if getattr(fill, "ndim", np.ndim(fill)):  # one value per row, the same in every lane
            fill = xp.reshape(xp.asarray(fill, dtype=values.dtype), (-1, 1))
        out[...] = fill
        if not self.uniform:
            out.reshape(-1)[self._dest_for(xp)] = values.reshape(-1)
            return out
        rows = values.reshape(self.n_cells, self.n)
        if self.kind == "interleaved":
            out[...] = rows.T
            return out
        bs = self.block_size
        full = self.n_cells // bs
        out[:full] = rows[: full * bs].reshape(full, bs, self.n).transpose(0, 2, 1)
        rest = self.n_cells - full * bs
        if rest:
            out[full, :, :rest] = rows[full * bs:].T
        return out

    def unpack(self, packed):
        """The canonical array (``values_shape``) of a packed one; padding is dropped.

        A new array, except for Flat, which returns ``packed`` itself.
        """
        xp = array_module(packed)
        packed = xp.asarray(packed)
        _check_shape(packed, self.shape, "packed")
        if self.kind == "flat":
            return packed
        if self.n_cells == 0:
            return xp.empty(self.values_shape, dtype=packed.dtype)
        if not self.uniform:
            return packed.reshape(-1)[self._dest_for(xp)]
        if self.kind == "interleaved":
            rows = packed.T
        else:
            rows = packed.transpose(0, 2, 1).reshape(-1, self.n)[: self.n_cells]
        return xp.ascontiguousarray(rows).reshape(self.values_shape)

    def pack_parents(self, structure) -> np.ndarray:
        """Local parent indices of ``structure`` in this layout (int32, NumPy), padded with
        ``j - 1`` at padding node ``j``. ``structure`` must be the one the layout was made for."""
        parents = local_parents(structure)
        return self.pack(parents, fill=np.arange(self.n, dtype=np.int32) - 1)


def _check_shape(a, shape, name: str) -> None:
    if tuple(a.shape) != tuple(shape):
        raise ValueError(f"{name} has shape {tuple(a.shape)} but the layout needs {tuple(shape)}")


def flat(structure) -> Layout:
    """The Flat layout: the canonical storage itself (no padding, no copies)."""
    return Layout(structure, "flat", None)


def interleaved(structure) -> Layout:
    """The Full-Interleaved layout: ``(n, n_cells)``, node-major, cells padded to the largest."""
    return Layout(structure, "interleaved", as_batch(structure).n_cells)


def block_interleaved(structure, block_size: int) -> Layout:
    """The Block-Interleaved layout: ``(ceil(n_cells / block_size), n, block_size)``.

    ``block_size`` >= 1; the last block is completed with padding cells.
    """
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)):
        raise TypeError(f"block_size must be an int, got {type(block_size).__name__}")
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    return Layout(structure, "block_interleaved", int(block_size))


#: The layouts by name, for code that takes a layout name from the user.
LAYOUTS = {"flat": flat, "interleaved": interleaved, "block_interleaved": block_interleaved}
