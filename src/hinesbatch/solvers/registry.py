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
* ``describe(self) -> str``: one line on what was chosen (strategy, layout, threads, devices);
* optionally ``suits(subject) -> tuple[bool, str]`` (classmethod): whether ``auto`` should
  take it for this structure or batch shape, and if not, why.

Tridiagonal backends (``kind = "tridiagonal"``) follow the same protocol with a
:class:`hinesbatch.solvers.tridiagonal.TridiagonalShape` (``n``, ``batch``, ``lengths``) in
place of the structure and ``solve(self, dl, d, du, rhs) -> None``: all four are validated,
C-contiguous ``(batch, n)`` arrays of the plan's dtype; ``dl`` and ``du`` arrive read-only,
``d`` may be overwritten, the solution is written over ``rhs`` and entries past
``lengths[k]`` are left as they are.

The built-in backends are listed in :data:`BUILTIN` and imported on first use; other backends
are added with :func:`register`. Nothing else in the package switches on backend names.
"""
from __future__ import annotations

import importlib
import importlib.util

__all__ = ["BUILTIN", "register", "get", "names", "resolve"]

_REGISTRY: dict[str, dict[str, type]] = {"hines": {}, "tridiagonal": {}}
# Preference for "auto": name -> rank; the available backend of lowest rank wins (ties: the
# one registered first).
_AUTO_RANK: dict[str, dict[str, int]] = {"hines": {}, "tridiagonal": {}}


def register(cls: type, *, auto_rank: int | None = None) -> type:
    """Add a backend class to the registry (usable as a decorator via ``functools.partial``).

    ``auto_rank``: rank in ``auto``'s preference (lower first, whatever the order in which
    backends register: gpu 0, multicore 1, serial 2); ``None`` keeps the backend out of
    ``auto``.
    """
    kind = cls.kind
    if kind not in _REGISTRY:
        raise ValueError(f"unknown backend kind {kind!r}")
    _REGISTRY[kind][cls.name] = cls
    _AUTO_RANK[kind].pop(cls.name, None)
    if auto_rank is not None:
        _AUTO_RANK[kind][cls.name] = int(auto_rank)
    return cls


def _auto_order(kind: str) -> list[str]:
    ranks = _AUTO_RANK[kind]
    return sorted(ranks, key=ranks.__getitem__)  # stable: equal ranks keep registration order


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
        why = f" ({_LOAD_FAILURES[name]})" if name in _LOAD_FAILURES else ""
        raise ValueError(
            f"unknown {kind} backend {name!r}{why}; valid backends: {', '.join(names(kind))}"
        ) from None


def resolve(name: str, kind: str = "hines", subject=None) -> tuple[type, str]:
    """Resolve ``name`` (possibly ``"auto"``) to a backend class and a note saying why.

    ``auto`` takes the first backend in preference order that is available and, when a
    ``subject`` (the structure or batch shape to solve) is given, suits it: a backend may
    define ``suits(subject) -> (bool, reason)`` (a threaded backend declines batches too small
    to gain from threads). The note lists what was passed over and why (for example
    ``gpu unavailable: CuPy is not installed``).
    """
    _load_builtin()
    if name != "auto":
        cls = get(name, kind)
        ok, why = cls.available()
        if not ok:
            from ..errors import BackendUnavailableError

            raise BackendUnavailableError(f"backend {name!r} cannot run here: {why}")
        return cls, f"backend {name!r} requested"
    skipped = [f"{k}: {why}" for k, why in _LOAD_FAILURES.items()]
    for candidate in _auto_order(kind):
        cls = _REGISTRY[kind][candidate]
        ok, why = cls.available()
        if not ok:
            skipped.append(f"{candidate} unavailable: {why}")
            continue
        suits = getattr(cls, "suits", None)
        if subject is not None and suits is not None:
            ok, why = suits(subject)
            if not ok:
                skipped.append(f"{candidate} passed over: {why}")
                continue
        note = f"auto chose {candidate!r}"
        if skipped:
            note += " (" + "; ".join(skipped) + ")"
        return cls, note
    raise RuntimeError(f"no {kind} backend is available: " + "; ".join(skipped))


#: The built-in backends, in registration order: (kind, module, class, auto rank or None). The
#: GPU modules import without CuPy; their backends say whether they can run (``available``).
BUILTIN: tuple[tuple[str, str, str, int | None], ...] = (
    ("hines", "cpu.backends", "MulticoreHines", 1),
    ("hines", "cpu.backends", "SerialHines", 2),
    ("tridiagonal", "cpu.backends", "MulticoreTridiagonal", 1),
    ("tridiagonal", "cpu.backends", "SerialTridiagonal", 2),
    ("hines", "gpu.backend", "GpuBackend", 0),
    ("tridiagonal", "gpu.cusparse", "CusparseTridiagonal", None),  # a reference, never auto
    ("tridiagonal", "gpu.tridiagonal", "GpuTridiagonal", 0),
)

_LOADED = False
_LOAD_FAILURES: dict[str, str] = {}  # built-in backend module -> why it did not load


def _load_builtin() -> None:
    """Import the built-in backends (:data:`BUILTIN`) and register them."""
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    has_gpu = importlib.util.find_spec(f"{__package__}.gpu") is not None
    for kind, module, name, rank in BUILTIN:
        path = f"{__package__}.{module}"
        if module.startswith("gpu."):
            if not has_gpu or "gpu" in _LOAD_FAILURES:
                continue  # an installation without the GPU backend, or one that failed to load
            try:
                cls = getattr(importlib.import_module(path), name)
            except ImportError as exc:  # keep the CPU usable, and say why there is no gpu
                _LOAD_FAILURES["gpu"] = f"importing {path} failed: {exc}"
                continue
        else:
            cls = getattr(importlib.import_module(path), name)
        register(cls, auto_rank=rank)
