"""CUDA source generated for one shared cell structure: an experiment, not part of the
package (README.md beside this says what it measured and why it is not a strategy).

The schedule-driven kernel (``kernels/hines_factors.cu``) spends most of its instructions on
what the structure decides: loading schedule entries, decoding flags, choosing where each
contribution goes, rotating its ring of values loaded ahead. When all cells share one
structure, all of that is known before the launch, so this module writes the elimination out
as straight-line code, one block of statements per node, compiled once per structure
(NVRTC; CuPy caches the binary on disk by source text):

* ``l`` and ``u`` are literals (hexadecimal, exact), parents are names, offsets immediates;
* every contribution to a parent and every ``x`` a child needs stays in a register (a named
  variable): shared memory only holds the two factors per node that the forward sweep needs,
  ``m[j] = l[j] / D[j]`` and ``y[j] = R[j] / D[j]``, written once and read once;
* ``d`` and ``rhs`` are loaded ``ahead`` nodes before their use, so that many loads are in
  flight per thread although shared memory holds only a few dozen cells per SM;
* pivots are checked as in every Hines kernel (:func:`hb_bad_result`, largest failing node).

Layout: Block-Interleaved with ``bs`` cells per block, as ``hines_factors`` (value i of cell c
at ``((c / bs) * n + i) * bs + c % bs``); one thread per cell, ``bs`` threads per block,
``n * bs`` pairs of shared memory per block.
"""
from __future__ import annotations

import numpy as np

__all__ = ["generated_source", "elimination_order", "GENERATED_KERNEL", "MAX_GENERATED_NODES"]

#: Name of the generated kernel (``extern "C"``).
GENERATED_KERNEL = "hines_generated"
#: Largest cell written out as straight-line code: the source and the compile time grow
#: linearly with it, and past a few hundred nodes too few cells fit in shared memory anyway.
MAX_GENERATED_NODES = 2048

_HEADER = """\
#include "hines_common.cuh"
typedef {T} T;
typedef hb_pair<T>::type T2;
"""


def elimination_order(schedule) -> np.ndarray:
    """The nodes of a :class:`~.schedule.FactorSchedule` in the order its steps take them
    (children always before their parent), dummies left out."""
    node = np.asarray(schedule.entries[:, 0], dtype=np.int64)
    return node[node >= 0]


def _literal(x: float) -> str:
    """An exact C++ literal of ``x`` (hexadecimal floating point), converted to T."""
    return f"T({float(x).hex()})"


def generated_source(parent, lower, upper, order, *, ctype: str, bs: int, ahead: int) -> str:
    """CUDA C++ of ``hines_generated`` for one structure (``parent``: -1 at the root; row i:
    ``d[i] x[i] + lower[i] x[parent[i]] + sum_c upper[c] x[c] = rhs[i]``), eliminating the
    nodes in ``order`` (children first; the forward sweep runs it in reverse)."""
    parent = np.asarray(parent, dtype=np.int64)
    order = [int(j) for j in order]
    n = parent.size
    if sorted(order) != list(range(n)):
        raise ValueError("order must list every node once")
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(n)
    if np.any((parent >= 0) & (position[np.maximum(parent, 0)] <= position)):
        raise ValueError("order must take every node after all of its children")
    # The last child of each parent in `order` folds its contribution in directly, at the
    # parent; earlier children sum theirs into the parent's accumulators (ad, ar).
    last_child = np.full(n, -1, dtype=np.int64)
    for j in order:
        if parent[j] >= 0:
            last_child[parent[j]] = j
    has_acc = np.zeros(n, dtype=bool)
    lines = [_HEADER.format(T=ctype),
             f'extern "C" __global__ void __launch_bounds__({bs}, 1)',
             f"{GENERATED_KERNEL}(T* __restrict__ d, T* __restrict__ rhs, long long n_cells,",
             "                long long cell_base, unsigned long long* __restrict__ flag,",
             "                T* __restrict__ bad_value) {",
             "    extern __shared__ __align__(16) unsigned char hb_smem_gen[];",
             f"    T2* const col = reinterpret_cast<T2*>(hb_smem_gen) + threadIdx.x;",
             f"    const long long c = static_cast<long long>(blockIdx.x) * {bs} + threadIdx.x;",
             "    if (c >= n_cells) return;",
             f"    const long long base = static_cast<long long>(blockIdx.x) * {n * bs} + threadIdx.x;",
             "    const T* const dc = d + base;",
             "    T* const rc = rhs + base;",
             "    int bad = -1;",
             "    T bad_pivot = T(0);"]

    def load(k: int) -> None:
        if k < n:
            j = order[k]
            lines.append(f"    const T d{j} = dc[{j * bs}], r{j} = rc[{j * bs}];")

    for k in range(min(ahead, n)):
        load(k)
    for k, j in enumerate(order):  # backward sweep
        load(k + ahead)
        D, R = f"d{j}", f"r{j}"
        if has_acc[j]:
            D, R = f"({D} + ad{j})", f"({R} + ar{j})"
        c = last_child[j]
        if c >= 0:
            nu = _literal(-upper[c])
            D, R = f"fma({nu}, m{c}, {D})", f"fma({nu}, y{c}, {R})"
        lines.append(f"    const T D{j} = {D}, R{j} = {R};")
        lines.append(f"    const T q{j} = hb_rcp(D{j});")
        lines.append(f"    if (hb_bad_result(q{j}) && {j} > bad) {{ bad = {j}; bad_pivot = D{j}; }}")
        m = "T(0)" if parent[j] < 0 else f"{_literal(lower[j])} * q{j}"
        lines.append(f"    const T m{j} = {m}, y{j} = R{j} * q{j};")
        lines.append(f"    col[{j * bs}] = T2{{m{j}, y{j}}};")
        p = int(parent[j])
        if p >= 0 and last_child[p] != j:
            nu = _literal(-upper[j])
            if has_acc[p]:
                lines.append(f"    ad{p} = fma({nu}, m{j}, ad{p}); ar{p} = fma({nu}, y{j}, ar{p});")
            else:
                lines.append(f"    T ad{p} = {nu} * m{j}, ar{p} = {nu} * y{j};")
                has_acc[p] = True
    # The factors are read back from shared memory: without this fence the compiler would
    # forward every stored pair to its load and keep all of them in registers (spills).
    lines.append('    asm volatile("" ::: "memory");')
    for j in reversed(order):  # forward sweep: x over rhs
        p = int(parent[j])
        lines.append(f"    const T2 f{j} = col[{j * bs}];")
        x = f"f{j}.y" if p < 0 else f"fma(-f{j}.x, x{p}, f{j}.y)"
        lines.append(f"    const T x{j} = {x};")
        lines.append(f"    rc[{j * bs}] = x{j};")
    lines.append("    hb_report(flag, bad_value + c, cell_base + c, bad, bad_pivot);")
    lines.append("}")
    return "\n".join(lines) + "\n"
