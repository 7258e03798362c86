"""What ``hinesbatch bench tridiagonal`` measures, case by case (see :mod:`.tridiagonal`).

Every GPU time is the median of CUDA-event times after warm-up (:func:`._gpu_timing.event_times`),
input sets rotated when one set fits in a few L2 caches. Contenders:

* ``chunked`` (canonical ``(batch, n)`` values, what ``solve_tridiagonal`` runs) and
  ``chunked-native`` (interleaved ``(n, batch)`` values);
* ``thomas`` (cuThomasBatch with the transposes of the canonical entry point) and
  ``thomas-native`` (cuThomasBatch on interleaved values: the paper's measurement);
* cuSPARSE ``gtsv2StridedBatch`` and ``gtsvInterleavedBatch`` algorithms 0, 1, 2, each on
  arrays already in its own layout with zero corner entries (the routine alone is timed; the
  inputs it overwrites are restored, untimed, before each call).

Our contenders include the reset of the pivot records (two small memsets) but not the 8-byte
read that checks them; ``check_ms`` is the host-clock time of a whole solve with that check
(launch, solve, read, wait) for ``chunked``.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field

import numpy as np

from ..solvers.gpu.cusparse import Routine
from ..solvers.gpu.tridiagonal import GpuTridiagonal
from ..solvers.tridiagonal import TridiagonalShape, plan_tridiagonal
from ._gpu_timing import event_times, free_memory, rotation_sets

__all__ = ["Case", "gpu_case", "cpu_times", "accuracy_rows", "memory_rows", "vbatch_rows",
           "random_systems"]

OURS = ("chunked", "chunked-native", "thomas", "thomas-native")
CUSPARSE = (("gtsv2StridedBatch", "strided", 0), ("gtsvInterleavedBatch-0", "interleaved", 0),
            ("gtsvInterleavedBatch-1", "interleaved", 1), ("gtsvInterleavedBatch-2", "interleaved", 2))


def random_systems(cupy, batch: int, n: int, dtype, seed: int):
    """Diagonally dominant random systems on the device, canonical ``(batch, n)``:
    dl, du ~ U(-1, 1), d = (|dl| + |du|) * U(1.05, 2) (|d| > |dl| + |du|, as in the paper),
    rhs ~ N(0, 1)."""
    rs = cupy.random.RandomState(seed)
    a = rs.uniform(-1, 1, (batch, n)).astype(dtype)
    c = rs.uniform(-1, 1, (batch, n)).astype(dtype)
    b = ((cupy.abs(a) + cupy.abs(c)) * rs.uniform(1.05, 2.0, (batch, n))).astype(dtype)
    y = rs.standard_normal((batch, n)).astype(dtype)
    return a, b, c, y


@dataclass
class Case:
    """Measured times and checks of one (dtype, n, batch)."""

    dtype: str
    n: int
    batch: int
    sets: int
    ms: dict = field(default_factory=dict)        # contender -> median ms
    spread: dict = field(default_factory=dict)    # contender -> (min, max) ms
    diff: dict = field(default_factory=dict)      # contender -> max rel. diff vs LU (algo 1)
    memory: dict = field(default_factory=dict)    # contender -> extra device bytes
    errors: dict = field(default_factory=dict)    # contender -> message, when it failed
    check_ms: float | None = None  # chunked: enqueue + pivot check, host clock (ms)


def _canonical_from(name: str, arrays):
    """A contender's solution of set 0 as a canonical (batch, n) array."""
    return arrays.T if name.endswith("native") or name.startswith("gtsvInterleaved") else arrays


def gpu_case(cupy, dtype, n: int, batch: int, *, repeats: int, l2_bytes: int, seed: int,
             contenders=None) -> Case:
    """Time every contender on ``batch`` random systems of ``n`` rows."""
    dtype = np.dtype(dtype)
    set_bytes = 5 * n * batch * dtype.itemsize
    sets = rotation_sets(set_bytes, l2_bytes, cap=16)
    case = Case(dtype.name, n, batch, sets)
    wanted = contenders or (*OURS, *(c[0] for c in CUSPARSE))
    canon = [random_systems(cupy, batch, n, dtype, seed + i) for i in range(sets)]
    inter = None
    if any(w.endswith("native") for w in wanted):
        inter = [tuple(cupy.ascontiguousarray(a.T) for a in s) for s in canon]
    outputs = {}
    for name in wanted:
        try:
            out = _time_ours(cupy, case, name, canon, inter, repeats) if name in OURS else \
                _time_cusparse(cupy, case, name, canon, repeats)
            outputs[name] = out
        except Exception as exc:  # record and carry on: one broken contender must not stop the run
            case.errors[name] = f"{type(exc).__name__}: {exc}"
        cupy.cuda.get_current_stream().synchronize()
    ref = outputs.get("gtsvInterleavedBatch-1")
    if ref is not None:
        ref = _canonical_from("gtsvInterleavedBatch-1", ref)
        scale = cupy.maximum(cupy.max(cupy.abs(ref), axis=1), np.finfo(dtype).tiny)
        for name, out in outputs.items():
            x = _canonical_from(name, out)
            case.diff[name] = float(cupy.max(cupy.max(cupy.abs(x - ref), axis=1) / scale))
    del canon, inter, outputs, ref
    free_memory(cupy)
    return case


def _wall_ms(call, repeats: int) -> float:
    import time

    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def _record(case: Case, name: str, times) -> None:
    case.ms[name] = statistics.median(times)
    case.spread[name] = (min(times), max(times))


def _time_ours(cupy, case: Case, name: str, canon, inter, repeats: int):
    n, batch, sets = case.n, case.batch, case.sets
    dtype = canon[0][0].dtype
    variant = "chunked" if name.startswith("chunked") else "thomas"
    impl = GpuTridiagonal(TridiagonalShape(n, batch), dtype=dtype, variant=variant)
    native = name.endswith("native")
    outs = [cupy.full((n, batch) if native else (batch, n), np.nan, dtype) for _ in range(sets)]
    if native:
        def solve(i):
            impl.solve_interleaved(*inter[i], out=outs[i], check=False)
    else:
        def solve(i):
            impl.enqueue(*canon[i], outs[i])
    times = event_times(cupy, solve, lambda i: None, sets=sets, repeats=repeats)
    _record(case, name, times)
    impl.check_singular()  # the data are dominant: nothing may be flagged
    if impl.last_singular.size:
        raise RuntimeError(f"{impl.last_singular.size} systems flagged singular")
    if name == "chunked":  # what a caller waits for: launch + solve + pivot check, host clock
        case.check_ms = _wall_ms(lambda: (impl.enqueue(*canon[0], outs[0]), impl.check_singular()),
                                 max(3, repeats // 2))
    case.memory[name] = impl.scratch_bytes()
    return outs[0]


def _time_cusparse(cupy, case: Case, name: str, canon, repeats: int):
    from ..solvers.gpu.cusparse import padded_copies

    label, routine_name, algo = next(c for c in CUSPARSE if c[0] == name)
    n, batch, sets = case.n, case.batch, case.sets
    rows = max(n, 3)
    interleaved = routine_name == "interleaved"
    routine = Routine(routine_name, rows, batch, canon[0][0].dtype, algorithm=algo)
    pristine = [padded_copies(cupy, *s, n, rows=rows, interleaved=interleaved) for s in canon]
    work = [tuple(a.copy() for a in p) for p in pristine]
    nbytes = routine.buffer_size(*work[0])
    workspace = cupy.empty(nbytes, dtype=np.uint8)
    if interleaved:  # all four are overwritten
        def restore(i):
            for w, p in zip(work[i], pristine[i]):
                w[...] = p
    else:  # only x
        def restore(i):
            work[i][3][...] = pristine[i][3]

    def solve(i):
        routine(*work[i], workspace)

    times = event_times(cupy, solve, restore, sets=sets, repeats=repeats)
    _record(case, name, times)
    case.memory[name] = nbytes
    x = work[0][3]
    return x[:n] if interleaved else x[:, :n]


def cpu_times(dl, d, du, rhs, *, repeats: int) -> dict:
    """Median wall times [ms] of the serial and multicore CPU solvers on host arrays (the plan's
    hot path: overwrite, no finiteness check; d and rhs restored, untimed, before each call)."""
    from .common import median_time

    out = {}
    batch, n = rhs.shape
    work_d, work_r = d.copy(), rhs.copy()

    def setup():
        np.copyto(work_d, d)
        np.copyto(work_r, rhs)

    for backend in ("serial", "multicore"):
        plan = plan_tridiagonal(n, batch, backend=backend)
        med, _ = median_time(lambda: plan.solve(dl, work_d, du, work_r, overwrite=True,
                                                check_finite=False),
                             repeats=repeats, setup=setup, warmup=1 if n * batch < 5e7 else 0)
        out[backend] = med * 1e3
    return out


def accuracy_rows(cupy, sizes, dtype, *, batch: int, seed: int) -> list[dict]:
    """Fig. 12a: forward error of each method against the serial float64 CPU solve of the same
    (rounded) inputs, as the size grows."""
    from ..solvers.tridiagonal import solve_tridiagonal

    rows = []
    for n in sizes:
        canon = random_systems(cupy, batch, n, np.dtype(dtype), seed + n)
        host = [a.get().astype(np.float64) for a in canon]
        ref = solve_tridiagonal(*host, backend="serial", check_finite=False)
        scale = np.max(np.abs(ref), axis=1)
        row = {"dtype": np.dtype(dtype).name, "n": n, "systems": batch}
        for name, x in _accuracy_solutions(cupy, canon, n, batch).items():
            err = np.max(np.abs(x.get().astype(np.float64) - ref), axis=1) / scale
            row[f"{name} max"] = float(err.max())
            row[f"{name} median"] = float(np.median(err))
        rows.append(row)
        free_memory(cupy)
    return rows


def _accuracy_solutions(cupy, canon, n: int, batch: int) -> dict:
    from ..solvers.gpu.cusparse import padded_copies

    dtype = canon[0].dtype
    out = {}
    for variant in ("chunked", "thomas"):
        impl = GpuTridiagonal(TridiagonalShape(n, batch), dtype=dtype, variant=variant)
        x = cupy.empty((batch, n), dtype)
        impl.enqueue(*canon, x)
        impl.check_singular()
        out[variant] = x
    rows = max(n, 3)
    for label, routine_name, algo in CUSPARSE:
        interleaved = routine_name == "interleaved"
        routine = Routine(routine_name, rows, batch, dtype, algorithm=algo)
        work = padded_copies(cupy, *canon, n, rows=rows, interleaved=interleaved)
        routine(*work, cupy.empty(routine.buffer_size(*work), np.uint8))
        out[label] = work[3].T[:, :n] if interleaved else work[3][:, :n]
    return out


def memory_rows(cupy, sizes, *, batch: int, seed: int) -> list[dict]:
    """Fig. 12b: device memory (MB) each method needs beyond its inputs and solution, fp64:
    ours from the plan's buffers, cuSPARSE's from *_bufferSizeExt; and the CuPy pool's growth
    around one solve of each (which also counts the arrays it allocates)."""
    rows = []
    dtype = np.dtype(np.float64)
    for n in sizes:
        canon = random_systems(cupy, batch, n, dtype, seed + n)
        inputs = 4 * batch * n * dtype.itemsize
        row = {"n": n, "systems": batch, "inputs+solution MB": (inputs + batch * n * 8) / 1e6}
        pool = cupy.get_default_memory_pool()
        inter = None
        for variant, native in (("chunked", False), ("thomas", False), ("thomas", True)):
            free_memory(cupy)
            before = pool.used_bytes()
            impl = GpuTridiagonal(TridiagonalShape(n, batch), dtype=dtype, variant=variant)
            if native:
                inter = [cupy.ascontiguousarray(a.T) for a in canon]
                before += sum(a.nbytes for a in inter)
                impl.solve_interleaved(*inter, out=inter[3])
            else:
                impl.enqueue(*canon, canon[3])
                impl.check_singular()
            name = f"{variant}{'-native' if native else ''}"
            row[f"{name} MB"] = (pool.used_bytes() - before) / 1e6
            del impl
            inter = None
        for label, routine_name, algo in CUSPARSE:
            routine = Routine(routine_name, max(n, 3), batch, dtype, algorithm=algo)
            shape = (batch, n) if routine_name == "strided" else (n, batch)
            probe = [cupy.empty(shape, dtype) for _ in range(4)]
            row[f"{label} MB"] = routine.buffer_size(*probe) / 1e6
            del probe
        rows.append(row)
        del canon
        free_memory(cupy)
    return rows


def vbatch_rows(cupy, *, batch: int, repeats: int, seed: int) -> list[dict]:
    """Fig. 13: variable sizes U[256, 512] against fixed 256 and 512, fp64: cuThomasVBatch with
    and without computing padding (interleaved values), and the chunked solver."""
    rows = []
    rng = np.random.default_rng(seed)
    for label, lengths in (("256-512", rng.integers(256, 513, batch)), ("256", None), ("512", None)):
        n = 256 if label == "256" else 512
        canon = random_systems(cupy, batch, n, np.float64, seed)
        inter = tuple(cupy.ascontiguousarray(a.T) for a in canon)
        row = {"sizes": label, "systems": batch}
        shape = TridiagonalShape(n, batch, lengths)
        for name, options, native in (("thomas CP", {"variant": "thomas", "padding": "cp"}, True),
                                      ("thomas NCP", {"variant": "thomas", "padding": "ncp"}, True),
                                      ("chunked", {"variant": "chunked"}, False),
                                      ("chunked-native", {"variant": "chunked"}, True)):
            impl = GpuTridiagonal(shape, dtype=np.float64, **options)
            out = cupy.empty((n, batch) if native else (batch, n))
            src = inter if native else canon
            solve = ((lambda i: impl.solve_interleaved(*src, out=out, check=False)) if native
                     else (lambda i: impl.enqueue(*src, out)))
            times = event_times(cupy, solve, lambda i: None, sets=1, repeats=repeats)
            row[f"{name} ms"] = statistics.median(times)
            impl.check_singular()
        rows.append(row)
        del canon, inter
        free_memory(cupy)
    return rows
