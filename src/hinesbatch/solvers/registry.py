"""Registry of named solver backends: one factory, ``auto`` resolved explicitly.

A backend is a class with

* ``name: str`` and ``kind: str`` (``"hines"`` or ``"tridiagonal"``);
* ``available() -> tuple[bool, str]`` (classmethod): whether it can run here and, if not, why;
* ``__init__(self, structure, *, dtype, **options)``: analyse the structure once (ordering,
  layouts, device buffers); unknown options raise ``TypeError`` naming them;
* ``solve(self, d, rhs) -> None``: the hot path, in place. ``d`` and ``rhs`` are validated,
  C-contiguous arrays of the plan's dtype and of the backend's array module (NumPy for CPU
  backends, CuPy for GPU backends), shaped as the structure's ``values_shape``; the backend
  may overwrite ``d`` and writes the solution over ``rhs``. A zero or
  non-finite pivot raises :class:`hinesbatch.errors.SingularSystemError` naming cell and node;
* ``xp``: the array module it computes with (``numpy`` or ``cupy``);
* ``describe(self) -> str``: one line on what was chosen (strategy, layout, threads, devices).

Backends register themselves with :func:`register`; nothing else in the package switches on
backend names.
"""
from __future__ import annotations

from typing import Callable

__all__ = ["register", "get", "names", "resolve"]

_REGISTRY: dict[str, dict[str, type]] = {"hines": {}, "tridiagonal": {}}
# Preference order for "auto": first available wins, unless a chooser overrides it.
_AUTO_ORDER: dict[str, list[str]] = {"hines": [], "tridiagonal": []}
_CHOOSERS: dict[str, Callable | None] = {"hines": None, "tridiagonal": None}


def register(cls: type, *, auto_rank: int | None = None) -> type:
    """Add a backend class to the registry (usable as a decorator via ``functools.partial``).

    ``auto_rank``: position in ``auto``'s preference list (lower first); ``None`` keeps the
    backend out of ``auto``.
    """
    kind = cls.kind
    if kind not in _REGISTRY:
        raise ValueError(f"unknown backend kind {kind!r}")
    _REGISTRY[kind][cls.name] = cls
    if auto_rank is not None:
        order = [n for n in _AUTO_ORDER[kind] if n != cls.name]
        order.insert(min(auto_rank, len(order)), cls.name)
        _AUTO_ORDER[kind] = order
    return cls


def names(kind: str = "hines") -> list[str]:
    """Valid backend names for ``kind``, ``"auto"`` first."""
    _load_builtin()
    return ["auto", *sorted(_REGISTRY[kind])]


def get(name: str, kind: str = "hines") -> type:
    """The backend class called ``name``; ``ValueError`` listing the valid names otherwise."""
    _load_builtin()
    if not isinstance(name, str):
        raise TypeError(f"backend must be a string, got {type(name).__name__}")
    try:
        return _REGISTRY[kind][name]
    except KeyError:
        raise ValueError(
            f"unknown {kind} backend {name!r}; valid backends: {', '.join(names(kind))}"
        ) from None


def resolve(name: str, kind: str = "hines") -> tuple[type, str]:
    """Resolve ``name`` (possibly ``"auto"``) to a backend class and a note saying why.

    ``auto`` takes the first available backend in preference order; the note lists the ones
    it skipped and their reasons (for example ``gpu: CuPy is not installed``).
    """
    _load_builtin()
    if name != "auto":
        cls = get(name, kind)
        ok, why = cls.available()
        if not ok:
            from ..errors import BackendUnavailableError

            raise BackendUnavailableError(f"backend {name!r} cannot run here: {why}")
        return cls, f"backend {name!r} requested"
    skipped = []
    for candidate in _AUTO_ORDER[kind]:
        cls = _REGISTRY[kind][candidate]
        ok, why = cls.available()
        if ok:
            note = f"auto chose {candidate!r}"
            if skipped:
                note += " (" + "; ".join(skipped) + ")"
            return cls, note
        skipped.append(f"{candidate} unavailable: {why}")
    raise RuntimeError(f"no {kind} backend is available: " + "; ".join(skipped))


_LOADED = False


def _load_builtin() -> None:
    """Import the built-in backends so that they register themselves."""
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    from . import cpu  # noqa: F401  (registers serial, multicore)

    try:
        from . import gpu  # noqa: F401  (registers gpu; imports without CuPy)
    except ImportError:
        pass
