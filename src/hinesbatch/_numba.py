"""Numba at start-up: imported without its SciPy probe, cached machine code loaded without
preparing the compiler.

A command that finds its kernels in Numba's cache spends most of its start-up in Numba, not in
the kernels. Two costs are not needed to run cached machine code:

- ``import numba`` imports ``scipy`` only to check that it is at least 1.0
  (:func:`import_numba` skips the check; SciPy stays importable afterwards);
- the first load from the cache of each process "refreshes" Numba's typing and target
  contexts: it imports and installs every registry of typing rules and lowerings (``numba.np``,
  ``numba.typed``, ``numba.np.linalg``, which probes SciPy's BLAS, ...), about 0.1 s, which only
  compiling new code uses. :func:`light_cache_loads` makes a dispatcher load its cached
  machine code with the Numba runtime (NRT) initialised and nothing else; the cached object is
  linked already (the NRT's inline functions included) and needs only the runtime's C helpers.
  When the cache has no entry, or loading it fails, Numba's own path runs unchanged (it
  refreshes the contexts, then compiles and caches), so the machine code, and so the results,
  are the same bits either way.

Both rely on how Numba 0.59-0.68 are built (``Dispatcher._cache``, ``FunctionCache``); with a
Numba that differs, both fall back to Numba's own behaviour.
"""
from __future__ import annotations

import functools
import sys

__all__ = ["import_numba", "is_light", "light_cache_loads", "light_cache_loads_in"]


def import_numba():
    """``import numba`` without the import of SciPy that only checks its version.

    A process that imported Numba or SciPy already is left alone. Returns the module.
    """
    if "numba" in sys.modules or "scipy" in sys.modules:
        import numba

        return numba
    sys.modules["scipy"] = None  # `import scipy` fails at once: Numba skips the check
    try:
        import numba
    finally:
        del sys.modules["scipy"]
    return numba


@functools.cache
def _light_cache_class():
    """The :class:`numba.core.caching.FunctionCache` whose loads skip the refresh, or None
    when this Numba is not built as expected."""
    try:
        from numba.core.caching import FunctionCache
        from numba.core.runtime import nrt
    except ImportError:
        return None
    if not hasattr(FunctionCache, "_load_overload"):
        return None

    class LightFunctionCache(FunctionCache):
        """Loads cached machine code without refreshing the contexts first."""

        def load_overload(self, sig, target_context):
            try:
                nrt.rtsys.initialize(target_context)
                with self._guard_against_spurious_io_errors():
                    data = self._load_overload(sig, target_context)
            except Exception:  # noqa: BLE001  (anything unexpected: Numba's own path decides)
                data = None
            if data is None:  # no entry (the compiler refreshes the contexts itself)
                return super().load_overload(sig, target_context)
            return data

    return LightFunctionCache


def light_cache_loads(dispatcher):
    """Make ``dispatcher`` (an ``@njit(cache=True)`` function) load its machine code from the
    cache without preparing the compiler; returns it, so it can decorate::

        @light_cache_loads
        @njit(cache=True)
        def f(x): ...

    A dispatcher without a cache, or of a Numba built differently, is returned unchanged.
    """
    from numba.core.caching import FunctionCache

    light = _light_cache_class()
    cache = getattr(dispatcher, "_cache", None)
    if light is not None and type(cache) is FunctionCache:
        cache.__class__ = light  # the same state: no second look-up of the cache folder
    return dispatcher


def light_cache_loads_in(namespace) -> int:
    """:func:`light_cache_loads` for every Numba dispatcher of ``namespace`` (a module, or a
    module's ``globals()``); returns how many there were."""
    from numba.core.dispatcher import Dispatcher

    values = (namespace if isinstance(namespace, dict) else vars(namespace)).values()
    dispatchers = [v for v in values if isinstance(v, Dispatcher)]
    for d in dispatchers:
        light_cache_loads(d)
    return len(dispatchers)


def is_light(dispatcher) -> bool:
    """Whether :func:`light_cache_loads` applies to ``dispatcher``."""
    light = _light_cache_class()
    return light is not None and type(getattr(dispatcher, "_cache", None)) is light
