"""The CUDA C++ sources of the GPU backend and their compiled modules, cached per device.

Each ``kernels/*.cu`` file becomes one ``cupy.RawModule`` per (device, dtype), compiled with
NVRTC on first use, with ``name_expressions`` listing the template instantiations for that
dtype (:data:`KERNELS`). The local headers (``*.cuh``) are inlined into the source text, so
CuPy's on-disk kernel cache (keyed by the source text) never serves a stale build.
The same instantiation list drives ``tests/unit/test_cu_compile.py``, which compiles every
source with ``nvcc`` for sm_90 in CI without a GPU.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path

import numpy as np

from .device import cupy_module

__all__ = ["KERNEL_DIR", "KERNELS", "TILED_VARIANTS", "SLOT_VARIANTS", "FACTOR_VARIANTS",
           "FACTOR_PER_CELL_AHEAD", "CHUNK_CONFIGS", "SEGMENT_ROWS", "name_expressions",
           "source_text", "kernel"]

KERNEL_DIR = Path(__file__).with_name("kernels")

#: (lanes per cell, nodes per lane and step) of ``hines_tiled_mono`` that are instantiated;
#: the ``tiled`` strategy's ``lanes`` and ``batch`` (= lanes * nodes per lane) options.
TILED_VARIANTS = ((1, 1), (2, 1), (4, 1), (8, 1), (16, 1), (32, 1), (4, 2), (8, 2), (16, 2),
                  (4, 4), (8, 4))

#: The variants of ``hines_tiled_slots`` (``tiled`` on values in slot order, its native
#: layout): those of at least 4 lanes, whose tile planes start on 16 bytes (bulk copies), and
#: at most 2 nodes per lane and step (with 4, the several-group kernels spilled).
SLOT_VARIANTS = tuple((kb, v) for kb, v in TILED_VARIANTS if kb >= 4 and v <= 2)

#: (lanes per cell, nodes per lane and step, steps loaded ahead) of ``hines_factors`` for a
#: shared structure: the ``block-shared`` strategy's ``lanes`` and ``slots`` (= lanes * nodes
#: per lane) with ``keep="factors"``; and the steps loaded ahead for per-cell structures (one
#: lane, one node per step).
FACTOR_VARIANTS = ((1, 1, 16), (1, 2, 8), (1, 4, 6), (1, 8, 3), (2, 1, 8), (2, 2, 6),
                   (4, 1, 8), (4, 2, 6), (8, 1, 8), (8, 2, 4))
FACTOR_PER_CELL_AHEAD = 12

#: Rows per group (system segment) of ``tri_chunked`` -> (G lanes per group, L rows per lane).
CHUNK_CONFIGS: dict[int, tuple[int, int]] = {
    16: (4, 4), 32: (8, 4), 64: (8, 8), 128: (16, 8), 256: (32, 8), 512: (32, 16)}
#: Segment lengths available to tridiagonal systems longer than 512 rows (``segment_rows``).
SEGMENT_ROWS = (128, 256, 512)


def _bool(b: bool) -> str:
    return "true" if b else "false"


def _chunked_templates() -> tuple[str, ...]:
    out = []
    for q, (g, l) in CHUNK_CONFIGS.items():
        for inter in (False, True):
            out.append(f"tri_chunked<{{T}}, {g}, {l}, {_bool(inter)}, false>")
            if q in SEGMENT_ROWS:
                out.append(f"tri_chunked<{{T}}, {g}, {l}, {_bool(inter)}, true>")
    out.append("tri_segments<{T}>")
    return tuple(out)


#: Source file -> templates instantiated for each dtype; ``{T}`` is ``float`` or ``double``.
#: Every source of ``kernels/`` the package launches is listed here and nowhere else.
KERNELS: dict[str, tuple[str, ...]] = {
    "hines_strided.cu": (
        "hines_strided<{T}, true>", "hines_strided<{T}, false>",
        "hines_block_shared<{T}, true>", "hines_block_shared<{T}, false>",
    ),
    "hines_tiled.cu": (
        *(f"hines_tiled_mono<{{T}}, {kb}, {v}, {g}, {listed}>" for kb, v in TILED_VARIANTS
          for g in ("false", "true") for listed in ("false", "true")),
        *(f"hines_tiled_slots<{{T}}, {kb}, {v}, {g}>" for kb, v in SLOT_VARIANTS
          for g in ("false", "true")),
        "hines_tiled_classes<{T}>", "hines_tiled_multi<{T}>",
    ),
    "hines_factors.cu": (
        *(f"hines_factors<{{T}}, true, {v}, {a}, {kb}>" for kb, v, a in FACTOR_VARIANTS),
        f"hines_factors<{{T}}, false, 1, {FACTOR_PER_CELL_AHEAD}, 1>",
    ),
    "layout.cu": ("canonical_to_layout<{T}>", "layout_to_canonical<{T}>"),
    "hines_multi.cu": (
        "multi_levels<{T}, 0>", "multi_levels<{T}, 1>", "multi_levels<{T}, 2>",
        "multi_fine<{T}>", "multi_dhs<{T}>", "multi_gather<{T}>", "multi_scatter<{T}>",
        "multi_failure<{T}>",
    ),
    "tridiagonal_thomas.cu": ("tri_thomas<{T}, true>", "tri_thomas<{T}, false>",
                              "tri_interleave4<{T}>", "tri_deinterleave<{T}>"),
    "tridiagonal_chunked.cu": _chunked_templates(),
}

_CTYPES = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
_OPTIONS = ("-std=c++17",)
_INCLUDE = re.compile(r'^#include "([A-Za-z0-9_]+\.cuh)"\s*$', re.MULTILINE)


def ctype(dtype) -> str:
    """The C type of a supported dtype (``float`` or ``double``)."""
    try:
        return _CTYPES[np.dtype(dtype)]
    except KeyError:
        raise TypeError(f"the GPU kernels support float32 and float64, not {np.dtype(dtype)}") from None


def name_expressions(source: str, dtype) -> list[str]:
    """The template instantiations of ``source`` for ``dtype`` (as given to NVRTC)."""
    t = ctype(dtype)
    return [expr.format(T=t) for expr in KERNELS[source]]


@functools.lru_cache(maxsize=None)
def source_text(source: str) -> str:
    """The text of ``kernels/<source>`` with its local ``#include "*.cuh"`` lines inlined,
    headers within headers too, each header once (later includes of it become empty)."""
    seen: set[str] = set()

    def inline(name: str) -> str:
        def header(m):
            if m.group(1) in seen:
                return ""
            seen.add(m.group(1))
            return inline(m.group(1))

        return _INCLUDE.sub(header, (KERNEL_DIR / name).read_text())

    return inline(source)


@functools.lru_cache(maxsize=None)
def _module(device: int, source: str, dtype_name: str):
    cupy = cupy_module()
    with cupy.cuda.Device(device):
        return cupy.RawModule(
            code=source_text(source),
            options=_OPTIONS,
            name_expressions=name_expressions(source, dtype_name),
        )


_KERNEL_CACHE: dict[tuple, object] = {}


def kernel(device: int, source: str, template: str, dtype):
    """The compiled kernel ``template`` (e.g. ``"hines_strided<{T}, true>"``) of ``source``.

    Compiled once per (device, source, dtype) and cached for the process.
    """
    dtype = np.dtype(dtype)
    key = (device, source, template, dtype.str)
    fn = _KERNEL_CACHE.get(key)
    if fn is None:
        if template not in KERNELS[source]:
            raise KeyError(f"{template!r} is not instantiated in {source}")
        cupy = cupy_module()
        module = _module(device, source, dtype.name)
        with cupy.cuda.Device(device):
            fn = module.get_function(template.format(T=ctype(dtype)))
        _KERNEL_CACHE[key] = fn
    return fn
