"""GPU timing for the benchmarks: CUDA events, cold-cache rotation, the copy-bandwidth ceiling.

How a GPU time is taken (:func:`event_times`): the stream is first kept busy by a spin kernel,
so the host can queue every restore and solve before the GPU reaches them; each solve is
bracketed by CUDA events, which then time GPU work only, not Python's launch overhead. Inputs
are restored (untimed, before the first event) because a solve destroys them. When one input
set is smaller than a few times the L2 cache, several sets are used in rotation, so each
solve reads memory that the previous solves have evicted from L2.
"""
from __future__ import annotations

import statistics
from typing import Callable

__all__ = ["gpu_info", "copy_bandwidth", "event_times", "rotation_sets", "free_memory"]

_SPIN = r"""
extern "C" __global__ void hb_spin(long long cycles) {
    const long long start = clock64();
    while (clock64() - start < cycles) { }
}
"""
_spin_kernel = None


def _spin(cupy, ms: float) -> None:
    """Keep the current stream busy for about ``ms`` milliseconds (at ~2 GHz)."""
    global _spin_kernel
    if _spin_kernel is None:
        _spin_kernel = cupy.RawKernel(_SPIN, "hb_spin")
    import numpy as np

    _spin_kernel((1,), (1,), (np.int64(int(ms * 2.0e6)),))


def gpu_info(cupy) -> dict:
    """The devices, driver, CUDA runtime and library versions, for the result files."""
    import numpy as np

    rt = cupy.cuda.runtime
    devices = []
    for k in range(rt.getDeviceCount()):
        p = rt.getDeviceProperties(k)
        name = p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"])
        devices.append(f"{k}: {name}, {p['totalGlobalMem'] / 2**30:.0f} GiB, "
                       f"{p['multiProcessorCount']} SMs, L2 {p['l2CacheSize'] / 2**20:.0f} MiB, "
                       f"cc {p['major']}.{p['minor']}")

    def version(v):
        return f"{v // 1000}.{(v % 1000) // 10}"

    return {
        "gpus": devices,
        "cuda_driver": version(rt.driverGetVersion()),
        "cuda_runtime": version(rt.runtimeGetVersion()),
        "nvidia_driver": _nvidia_driver(),
        "cupy": cupy.__version__,
        "numpy": np.__version__,
    }


def _nvidia_driver() -> str | None:
    import subprocess

    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 else None
    except (OSError, IndexError, subprocess.SubprocessError):
        return None


def free_memory(cupy) -> None:
    """Return cached blocks of CuPy's memory pool to the device."""
    cupy.get_default_memory_pool().free_all_blocks()


def event_times(cupy, solve: Callable[[int], object], restore: Callable[[int], object], *,
                sets: int, repeats: int, warmup: int = 2) -> list[float]:
    """GPU times [ms] of ``solve(i)`` (input set ``i`` of ``sets``), at least ``repeats`` of them.

    ``restore(i)`` refills set ``i`` (queued untimed before the set's first event). Rounds
    restore every set, then time one solve per set, until ``repeats`` times are collected.
    """
    for _ in range(warmup):
        restore(0)
        solve(0)
    cupy.cuda.get_current_stream().synchronize()
    times: list[float] = []
    Event = cupy.cuda.Event
    while len(times) < repeats:
        _spin(cupy, 2.0 + 0.2 * sets)
        for i in range(sets):
            restore(i)
        marks = []
        for i in range(sets):
            start, end = Event(), Event()
            start.record()
            solve(i)
            end.record()
            marks.append((start, end))
        marks[-1][1].synchronize()
        times += [cupy.cuda.get_elapsed_time(a, b) for a, b in marks]
    return times


def rotation_sets(set_bytes: int, l2_bytes: int, *, cap: int = 64) -> int:
    """How many input sets to rotate so that they span at least four times the L2 cache."""
    if set_bytes <= 0:
        return 1
    return max(1, min(cap, -(-4 * l2_bytes // set_bytes)))


def copy_bandwidth(cupy, *, nbytes: int = 4 * 2**30, repeats: int = 10) -> dict:
    """Device-to-device copy of an ``nbytes`` float64 array: bytes read + written per second."""
    import numpy as np

    n = nbytes // 8
    src = cupy.arange(n, dtype=np.float64)
    dst = cupy.empty_like(src)
    times = event_times(cupy, lambda i: cupy.copyto(dst, src), lambda i: None, sets=1,
                        repeats=repeats, warmup=2)
    ms = statistics.median(times)
    del src, dst
    free_memory(cupy)
    return {"array_GiB": nbytes / 2**30, "median_ms": ms, "TB_per_s": 2 * nbytes / (ms * 1e-3) / 1e12,
            "repeats": len(times)}
