"""What every schedule shares: the map between canonical values and packed slots."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

__all__ = ["SlotMap", "fill_slot"]


@dataclass(frozen=True, eq=False)
class SlotMap:
    """Base of the schedule dataclasses (built by keyword): ``node_slot`` (the slot of each
    canonical value), ``slot_node`` (the value in each slot, -1 for padding), ``u``, ``l`` (in
    slot order; ``l`` None when symmetric), ``values_shape`` and the planning ``options``."""

    node_slot: np.ndarray
    slot_node: np.ndarray
    u: np.ndarray
    l: np.ndarray | None
    values_shape: tuple
    options: dict

    @property
    def n_slots(self) -> int:
        return int(self.slot_node.size)

    @property
    def lower(self) -> np.ndarray:
        return self.u if self.l is None else self.l

    def pack(self, values, *, fill: float = 0.0, dtype=None) -> np.ndarray:
        """``values`` (canonical ``values_shape``) in slot order, padding set to ``fill``."""
        values = np.asarray(values)
        out = np.full(self.n_slots, fill, dtype=dtype or values.dtype)
        out[self.node_slot] = values.reshape(-1)
        return out

    def unpack(self, packed) -> np.ndarray:
        """Slot-ordered values back in the canonical shape."""
        return np.asarray(packed)[self.node_slot].reshape(self.values_shape)


@njit(inline="always", cache=True, nogil=True)
def fill_slot(v, slot, g, source_shift, source, swapped, u, lower, node_slot, slot_node,
              u_slot, l_slot):
    """Record that value ``v`` lives in ``slot`` and copy node ``g``'s couplings there (the
    coupling of the working tree's node ``g`` comes from the original's ``source[g]``, with
    ``u`` and ``l`` exchanged where re-rooting reversed the edge). Shared by every planner."""
    node_slot[v] = slot
    slot_node[slot] = v
    if source[g] >= 0:
        src = source_shift + source[g]
        if swapped[g]:
            u_slot[slot] = lower[src]
            l_slot[slot] = u[src]
        else:
            u_slot[slot] = u[src]
            l_slot[slot] = lower[src]
