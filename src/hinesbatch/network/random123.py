"""NEURON's ``Random.Random123`` streams, for models whose structure NEURON draws at random.

Models such as NEURON's ringtest choose cell shapes and orders with ``h.Random()`` objects
set to ``Random123(id1, id2, id3)``; rebuilding them outside NEURON needs the same numbers.
A stream is Philox4x32-10 (Salmon et al., SC'11: "Parallel random numbers: as easy as
1, 2, 3") with NEURON's use of its words::

    counter = (seq, id3, id1, id2)      seq = 0, 1, 2, ... counts blocks of 4 numbers
    key     = (global index, 0)         Random123_globalindex, 0 by default
    block   = philox4x32_10(counter, key)  -> 4 uint32, handed out in order

A uint32 ``u`` becomes the double ``(u + 1) / (2**32 + 1)`` in the open interval (0, 1)
(``nrnran123_dblpick``), and ``Random.discunif(low, high)`` returns
``floor(low + (high - low + 1) * u)``; ``Random.repick()`` draws again from the last
distribution.

Worked example (checked against NEURON 9.0.2 by the validation tests)::

    r = Random123Stream(6, 2)
    r.discunif(10, 20)          # NEURON: r = h.Random(); r.Random123(6, 2); r.discunif(10, 20)
"""
from __future__ import annotations

import math

__all__ = ["Random123Stream", "philox4x32_10"]

_M0, _M1 = 0xD2511F53, 0xCD9E8D57      # Philox multipliers
_W0, _W1 = 0x9E3779B9, 0xBB67AE85      # Weyl key increments
_MASK = 0xFFFFFFFF
#: ``nrnran123_uint2dbl``'s scale: 1/(2**32 + 1).
_SHIFT32 = 1.0 / 4294967297.0


def philox4x32_10(counter: tuple[int, int, int, int], key: tuple[int, int]
                  ) -> tuple[int, int, int, int]:
    """Philox4x32 with 10 rounds: four uint32 from a 4-word counter and a 2-word key."""
    c0, c1, c2, c3 = (int(c) & _MASK for c in counter)
    k0, k1 = (int(k) & _MASK for k in key)
    for r in range(10):
        if r:
            k0 = (k0 + _W0) & _MASK
            k1 = (k1 + _W1) & _MASK
        p0 = _M0 * c0
        p1 = _M1 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0, p1 & _MASK, (p0 >> 32) ^ c3 ^ k1, p0 & _MASK)
    return c0, c1, c2, c3


class Random123Stream:
    """One of NEURON's ``Random123`` streams, with ``uniform`` and ``discunif``.

    Parameters
    ----------
    id1, id2, id3 : int
        The stream's identifiers (``Random.Random123(id1, id2, id3)``), each in
        ``0 .. 2**32 - 1``.
    global_index : int
        ``Random123_globalindex`` (0 by default, as in NEURON).
    """

    def __init__(self, id1: int, id2: int = 0, id3: int = 0, *, global_index: int = 0):
        for name, value in (("id1", id1), ("id2", id2), ("id3", id3),
                            ("global_index", global_index)):
            if isinstance(value, bool) or not isinstance(value, int) or \
                    not 0 <= value <= _MASK:
                raise ValueError(f"{name} must be an integer in 0 .. 2**32 - 1, got {value!r}")
        self._ids = (id3, id1, id2)
        self._key = (global_index, 0)
        self._seq = 0
        self._block = philox4x32_10((0, *self._ids), self._key)
        self._which = 0
        self._last = None

    def __repr__(self) -> str:
        id3, id1, id2 = self._ids
        return f"Random123Stream({id1}, {id2}, {id3}, at {4 * self._seq + self._which})"

    def uint32(self) -> int:
        """The next uint32 of the stream (``nrnran123_ipick``)."""
        value = self._block[self._which]
        self._which += 1
        if self._which == 4:
            self._which = 0
            self._seq += 1
            self._block = philox4x32_10((self._seq, *self._ids), self._key)
        return value

    def uniform01(self) -> float:
        """The next double in (0, 1): ``(u + 1) / (2**32 + 1)``."""
        return (float(self.uint32()) + 1.0) * _SHIFT32

    def discunif(self, low: int, high: int) -> int:
        """An integer uniform on ``low .. high`` (``Random.discunif``)."""
        if high < low:
            raise ValueError(f"discunif needs low <= high, got {low} and {high}")
        self._last = (int(low), int(high))
        return self._pick()

    def repick(self) -> int:
        """Another number from the last distribution (``Random.repick``)."""
        if self._last is None:
            raise RuntimeError("repick before any distribution was chosen")
        return self._pick()

    def _pick(self) -> int:
        low, high = self._last
        return math.floor(low + float(high - low + 1) * self.uniform01())
