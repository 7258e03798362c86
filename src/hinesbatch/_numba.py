"""Numba at start-up: imported without what only compiling needs, cached machine code
loaded without preparing the compiler.

A command that finds its kernels in Numba's cache spends most of its start-up in Numba, not in
the kernels. These costs are not needed to run cached machine code:

- ``import numba`` imports SciPy only to check its version, PyYAML in case a configuration
  file is there and ``importlib.metadata`` to find extensions later (:func:`import_numba`
  skips the first and defers the others until Numba uses them);
- before a dispatcher's first call, Numba initialises the installed Numba extensions, which
  reads the entry points of every installed distribution;
- the first load from the cache of each process "refreshes" Numba's typing and target
  contexts: it imports and installs every registry of typing rules and lowerings (``numba.np``,
  ``numba.typed``, ``numba.np.linalg``, which probes SciPy's BLAS, ...), about 0.1 s;
- and it compiles the Numba runtime's (NRT's) own LLVM functions, about 20 ms.

Only compiling new code needs them: a cached object is linked already (the NRT's functions
included) and refers only to symbols outside it, the C API of Python and the C library, and
Numba's C helpers. :func:`light_cache_loads` makes a dispatcher read the cached object, check
that every symbol it leaves undefined resolves in this process (after registering the NRT's C
helpers, as Numba does), and load it, without initialising extensions first. Otherwise (no
entry, an object that is not ELF, a symbol that some registry defines, any error) Numba's own
path runs unchanged: it refreshes the contexts (initialising the extensions), then loads or
compiles and caches. The machine code, and so the results, are the same bits either way.

This relies on how Numba 0.59-0.68 are built (``Dispatcher._cache``, ``FunctionCache``, the
serialized ``CompileResult``, ``_compilation_chain_init_hook``); with a Numba that differs,
the dispatchers keep Numba's own behaviour.
"""
from __future__ import annotations

import functools
import gc
import importlib
import importlib.util
import struct
import sys
import types

__all__ = ["import_numba", "is_light", "light_cache_loads", "light_cache_loads_in",
           "undefined_symbols"]


class _LazyModule(types.ModuleType):
    """Stands for a module that is imported when one of its attributes is first used."""

    def __getattr__(self, name):
        if sys.modules.get(self.__name__) is self:  # used while standing in: the real one
            del sys.modules[self.__name__]
        return getattr(importlib.import_module(self.__name__), name)


def import_numba():
    """``import numba`` without the import of SciPy that only checks its version, without
    importing PyYAML before a Numba configuration file is read, and with the cyclic garbage
    collector paused meanwhile.

    - Numba imports ``scipy`` only to check that it is at least 1.0; that import fails at
      once here, so the check is skipped. SciPy stays importable afterwards.
    - Numba imports ``yaml`` to read a ``.numba_config.yaml`` of the working directory, when
      there is one (PyYAML's import takes about as long as NumPy's C core), and
      ``importlib.metadata`` (with ``email``, ``zipfile``, ... about 15 ms) to find the
      extensions it initialises before compiling. Numba gets stand-ins that import the real
      modules when Numba first uses them; everyone else imports the real modules, as
      before.
    - Importing NumPy and Numba creates about 90,000 objects that the collector tracks, of
      which about 500 end up as garbage in cycles: the passes that the allocations trigger
      find little and took about 6 % of the import. The collector's state is restored
      afterwards (the cycles are collected by its next pass).

    A process that imported Numba or SciPy already is left alone. Returns the module.
    """
    if "numba" in sys.modules or "scipy" in sys.modules:
        import numba

        return numba
    standing_in = {"scipy": None}  # None: `import scipy` raises ImportError at once
    for name in ("yaml", "importlib.metadata"):
        if name not in sys.modules and importlib.util.find_spec(name) is not None:
            standing_in[name] = _LazyModule(name)
    collecting = gc.isenabled()
    gc.disable()
    sys.modules.update(standing_in)
    try:
        import numba
    finally:
        for name, stand_in in standing_in.items():
            if sys.modules.get(name, ...) is stand_in:
                del sys.modules[name]
        if collecting:
            gc.enable()
    return numba


#: ELF: section type of a symbol table; symbol entry and section header sizes [bytes].
_SHT_SYMTAB, _SYMBOL_BYTES = 2, 24


def undefined_symbols(obj: bytes) -> list[str] | None:
    """Names of the symbols that the ELF64 little-endian object ``obj`` uses but does not
    define, or None when ``obj`` is not such an object."""
    if obj[:6] != b"\x7fELF\x02\x01":
        return None
    (shoff,) = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    # (name, type, flags, addr, offset, size, link, info, addralign, entsize)
    sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + k * shentsize)
                for k in range(shnum)]
    names = []
    for sec in sections:
        if sec[1] != _SHT_SYMTAB:
            continue
        strings = sections[sec[6]][4]
        for k in range(sec[5] // _SYMBOL_BYTES):
            name, _, _, shndx, _, _ = struct.unpack_from("<IBBHQQ", obj,
                                                         sec[4] + k * _SYMBOL_BYTES)
            if shndx == 0 and name:  # SHN_UNDEF
                start = strings + name
                names.append(obj[start:obj.index(b"\0", start)].decode())
    return names


@functools.cache
def _register_runtime_helpers() -> None:
    """Register the NRT's C helpers as symbols, as ``NRTRuntime.initialize`` does before it
    compiles the NRT's LLVM functions (which cached objects contain already)."""
    import llvmlite.binding as ll
    from numba.core.runtime import _nrt_python

    for name, address in _nrt_python.c_helpers.items():
        ll.add_symbol(name if name.startswith("_") else "NRT_" + name, address)


def _resolvable(obj: bytes) -> bool:
    """Whether every symbol the object ``obj`` leaves undefined resolves in this process."""
    import llvmlite.binding as ll

    names = undefined_symbols(obj)
    return names is not None and all(ll.address_of_symbol(n) is not None for n in names)


@functools.cache
def _light_cache_class():
    """The :class:`numba.core.caching.FunctionCache` whose loads skip the compiler's set-up,
    or None when this Numba is not built as expected."""
    try:
        from numba.core import config
        from numba.core.caching import FunctionCache
    except ImportError:
        return None
    if not all(hasattr(FunctionCache, a) for a in ("_index_key", "_load_overload")):
        return None

    class LightFunctionCache(FunctionCache):
        """Loads cached machine code without setting up the compiler first."""

        def load_overload(self, sig, target_context):
            try:
                data = self._light_load(sig, target_context)
            except Exception:  # noqa: BLE001  (anything unexpected: Numba's own path decides)
                data = None
            if data is None:  # Numba's own path (the compiler sets itself up on a miss)
                return super().load_overload(sig, target_context)
            return data

        def _light_load(self, sig, target_context):
            if not self._enabled or config.NRT_STATS:  # NRT statistics: Numba's set-up
                return None
            payload = self._cache_file.load(self._index_key(sig, target_context.codegen()))
            if payload is None:
                return None
            _, kind, code = payload[0]  # the serialized library: (name, kind, data)
            if kind != "object":
                return None
            _register_runtime_helpers()
            if not _resolvable(code[0]):
                return None
            return self._impl.rebuild(target_context, payload)

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
        dispatcher._compilation_chain_init_hook = _extensions_when_compiling
    return dispatcher


def _extensions_when_compiling() -> None:
    """A light dispatcher's hook before its first call. Numba's hook initialises the
    installed Numba extensions (``numba_extensions`` entry points), which a search of every
    installed distribution finds; loading cached machine code needs none of them, and
    compiling initialises them itself (when it refreshes the contexts, on the fallback
    path too)."""


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
