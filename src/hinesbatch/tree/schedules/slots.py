"""What every schedule shares: the map between canonical values and packed slots."""
from __future__ import annotations

import numpy as np

__all__ = ["SlotMap"]


class SlotMap:
    """Mixin of the schedule dataclasses, which hold ``node_slot`` (the slot of each canonical
    value), ``slot_node`` (the value in each slot, -1 for padding), ``u``, ``l`` (in slot
    order; ``l`` None when symmetric) and ``values_shape``."""

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
