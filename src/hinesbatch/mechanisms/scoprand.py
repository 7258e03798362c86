"""NEURON's scoplib random numbers: one 32-bit stream and the functions drawn from it.

An NMODL file may call ``scop_random()``, ``normrand(mean, sd)``, ``exprand(mean)``,
``poisrand(mean)`` and ``set_seed(x)``. NEURON compiles them to its scoplib functions, which
share one generator for the whole process; a :class:`~hinesbatch.Simulation` keeps one such
stream (a one-element int64 array, the kernels' argument ``_RS``) and draws from it in
NEURON's order. With the same seed and the same order of draws the numbers are NEURON's,
bit for bit.

The generator (NEURON's ``scop_random`` with ``use_mcell_ran4`` off, the default) is a
linear congruential generator on a 32-bit unsigned state ``s``, 1 in a fresh NEURON::

    s = (2147437301 * s + 453816981) mod 2**32
    scop_random() = s / (2**32 - 1)                                  # in [0, 1]

and the distributions are written over it:

- ``normrand(mean, sd)``: Marsaglia's polar method. ``v1 = 2 u1 - 1``, ``v2 = 2 u2 - 1``
  (two draws), repeated while ``w = v1² + v2² >= 1``; then
  ``v1·sqrt(-2 log(w)/w)·sd + mean`` (the second normal number of the pair is dropped);
- ``exprand(mean)``: ``-mean·log(u)``;
- ``poisrand(mean)``: the number of draws whose running product stays at or above
  ``exp(-mean)``, minus one (Knuth's method);
- ``set_seed(x)``: ``s = (uint32) x``: ``x`` truncated toward zero, modulo 2**32.

Worked example: from ``s = 1`` the first draw sets ``s = 2601254282`` and returns
``2601254282 / 4294967295 = 0.60565170...``.

:class:`ScopRandom` is the reference in Python; :func:`numba_source` gives the same
operations, in the same order, for the generated kernels.
"""
from __future__ import annotations

import math
from numbers import Real

__all__ = [
    "DRAWS",
    "INCREMENT",
    "MODULUS",
    "MULTIPLIER",
    "SEED_CALL",
    "ScopRandom",
    "numba_source",
    "seed_value",
]

MULTIPLIER = 2147437301
INCREMENT = 453816981
#: ``2**32 - 1``: the divisor of the uniform draw (NEURON's ``m = ~0``).
MODULUS = 4294967295
#: The functions that draw, with their number of arguments.
DRAWS = {"scop_random": 0, "normrand": 2, "exprand": 1, "poisrand": 1}
#: The statement that sets the stream's state.
SEED_CALL = "set_seed"


def seed_value(seed) -> int:
    """NEURON's ``(uint32_t) seed``: ``seed`` truncated toward zero, modulo 2**32.

    Parameters
    ----------
    seed : real number
        Finite, ``|seed| < 2**63`` (where the C conversion is defined on x86-64).

    Returns
    -------
    int
        The state, in ``[0, 2**32)``.

    Examples
    --------
    >>> seed_value(7.9), seed_value(-1), seed_value(2**32 + 3)
    (7, 4294967295, 3)
    """
    if isinstance(seed, bool) or not isinstance(seed, Real) or not math.isfinite(seed) \
            or abs(seed) >= 2.0 ** 63:
        raise ValueError(f"seed must be a finite number of magnitude below 2**63, got "
                         f"{seed!r}")
    return int(seed) & MODULUS


class ScopRandom:
    """NEURON's random-number stream in Python (the reference the kernels match).

    Parameters
    ----------
    seed : real number
        The initial state, as ``set_seed(seed)``; 1 is a fresh NEURON's.
    """

    def __init__(self, seed=1):
        self.state = seed_value(seed)

    def set_seed(self, seed) -> None:
        """``set_seed(seed)`` (see :func:`seed_value`)."""
        self.state = seed_value(seed)

    def scop_random(self) -> float:
        """The next uniform number in [0, 1]."""
        self.state = (MULTIPLIER * self.state + INCREMENT) & MODULUS
        return float(self.state) / float(MODULUS)

    def normrand(self, mean: float, sd: float) -> float:
        """A normal number of mean ``mean`` and standard deviation ``sd``."""
        s = 1.0
        while s >= 1.0:
            v1 = 2.0 * self.scop_random() - 1.0
            v2 = 2.0 * self.scop_random() - 1.0
            s = v1 * v1 + v2 * v2
        return v1 * math.sqrt(-2.0 * math.log(s) / s) * sd + mean

    def exprand(self, mean: float) -> float:
        """An exponential number of mean ``mean``."""
        return -mean * math.log(self.scop_random())

    def poisrand(self, mean: float) -> float:
        """A Poisson count of mean ``mean`` (as a float)."""
        n, s, q = 0, math.exp(-mean), 1.0
        while q >= s:
            q = q * self.scop_random()
            n += 1
        return float(n - 1)


def numba_source() -> str:
    """The kernels' forms of the functions: ``_rand_<name>(_RS, args...)``, ``_RS`` the
    stream's state (one int64)."""
    return (
        "@njit(cache=True, error_model='numpy')\n"
        "def _rand_scop_random(_RS):\n"
        f"    _RS[0] = ({MULTIPLIER} * _RS[0] + {INCREMENT}) & {MODULUS}\n"
        f"    return float(_RS[0]) / {float(MODULUS)!r}\n\n\n"
        "@njit(cache=True, error_model='numpy')\n"
        "def _rand_normrand(_RS, mean, sd):\n"
        "    s = 1.0\n"
        "    v1 = 0.0\n"
        "    while s >= 1.0:\n"
        "        v1 = 2.0 * _rand_scop_random(_RS) - 1.0\n"
        "        v2 = 2.0 * _rand_scop_random(_RS) - 1.0\n"
        "        s = (v1 * v1) + (v2 * v2)\n"
        "    return ((v1 * math.sqrt(((-2.0) * math.log(s)) / s)) * sd) + mean\n\n\n"
        "@njit(cache=True, error_model='numpy')\n"
        "def _rand_exprand(_RS, mean):\n"
        "    return (-mean) * math.log(_rand_scop_random(_RS))\n\n\n"
        "@njit(cache=True, error_model='numpy')\n"
        "def _rand_poisrand(_RS, mean):\n"
        "    n = 0\n"
        "    s = math.exp(-mean)\n"
        "    q = 1.0\n"
        "    while q >= s:\n"
        "        q = q * _rand_scop_random(_RS)\n"
        "        n += 1\n"
        "    return float(n - 1)\n\n\n"
        "@njit(cache=True, error_model='numpy')\n"
        "def _rand_set_seed(_RS, x):\n"
        f"    _RS[0] = int(x) & {MODULUS}\n")
