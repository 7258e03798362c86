"""CuPy and the CUDA devices, imported lazily: hinesbatch imports and runs without CuPy.

Nothing here imports CuPy at module import time; :func:`cupy_module` does it on first use.
"""
from __future__ import annotations

import ctypes.util
import functools
import os
from typing import Sequence

import numpy as np

__all__ = ["cupy_module", "availability", "nvidia_driver_found", "NO_DRIVER", "device_ids", "device_properties", "resident_blocks",
           "blocks_per_sm", "suits_gpu", "GPU_MIN_UNKNOWNS", "SM_BARRIERS"]

#: Below this many unknowns a kernel launch and its synchronisation cost more than the CPU's
#: whole solve (one 923-node cell: about 5 us serial on a CPU core), so ``auto`` stays on the
#: CPU; the same size at which the CPU backends start threads.
GPU_MIN_UNKNOWNS = 20_000


def suits_gpu(subject) -> tuple[bool, str]:
    """``suits`` of the GPU backends: batches large enough to pay for a launch."""
    from ..suitability import large_enough

    return large_enough(subject, GPU_MIN_UNKNOWNS, "a GPU launch")


def cupy_module():
    """The ``cupy`` module; ``ImportError`` (with CuPy's own message) when it is missing."""
    import cupy  # noqa: PLC0415  (lazy by design)

    return cupy


#: The reason given when no NVIDIA driver is installed at all.
NO_DRIVER = ("no NVIDIA driver found (no libcuda library and no /proc/driver/nvidia/version): "
             "a CUDA GPU needs NVIDIA's driver installed")


def nvidia_driver_found() -> bool:
    """Whether an NVIDIA driver is installed: its kernel module reports a version in
    ``/proc/driver/nvidia/version``, or its user-space library ``libcuda`` can be found."""
    if os.path.exists("/proc/driver/nvidia/version"):
        return True
    return ctypes.util.find_library("cuda") is not None


@functools.lru_cache(maxsize=1)
def availability() -> tuple[bool, str]:
    """Whether CuPy and at least one CUDA device can be used here, and if not, why.

    The reason names the cause: CuPy not installed (or failing to import, with its message),
    no NVIDIA driver at all, no CUDA device, or the driver's error text. Cached for the life of the process.
    """
    try:
        cupy = cupy_module()
    except ImportError as exc:
        if getattr(exc, "name", None) == "cupy":
            return False, "CuPy is not installed (pip install 'hinesbatch[gpu]')"
        return False, f"CuPy failed to import: {exc}"
    except Exception as exc:  # CuPy raises other errors when its CUDA libraries are broken
        return False, f"CuPy failed to import: {type(exc).__name__}: {exc}"
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as exc:  # cupy_backends.cuda.api.runtime.CUDARuntimeError and kin
        text = str(exc)
        if not nvidia_driver_found():  # CUDA then says "driver version is insufficient"
            return False, NO_DRIVER
        if "NoDevice" in text or "no CUDA-capable device" in text:
            return False, f"no CUDA device is visible ({text})"
        return False, f"the CUDA driver reported an error: {text}"
    if count < 1:
        return False, "no CUDA device is visible (cudaGetDeviceCount returned 0)"
    return True, f"CuPy {cupy.__version__}, {count} CUDA device(s)"


def device_ids(devices) -> list[int]:
    """The device list of a plan from its ``devices`` option.

    ``None``: the current device; ``"all"``: every visible device; a sequence of device
    ordinals (an ordinal may repeat: each entry gets its own share of the cells and its own
    stream, which is how the multi-device path is exercised on one GPU).
    """
    cupy = cupy_module()
    count = int(cupy.cuda.runtime.getDeviceCount())
    if devices is None:
        return [int(cupy.cuda.Device().id)]
    if isinstance(devices, str):
        if devices != "all":
            raise ValueError(f"devices must be None, 'all' or a list of device ordinals, got {devices!r}")
        return list(range(count))
    if isinstance(devices, (int, np.integer)) and not isinstance(devices, bool):
        devices = [devices]
    if not isinstance(devices, Sequence) or not devices:
        raise TypeError(f"devices must be None, 'all' or a non-empty list of ints, got {devices!r}")
    out = []
    for dev in devices:
        if isinstance(dev, bool) or not isinstance(dev, (int, np.integer)):
            raise TypeError(f"device ordinals must be ints, got {dev!r}")
        if not 0 <= dev < count:
            raise ValueError(f"device {dev} does not exist: {count} CUDA device(s) are visible")
        out.append(int(dev))
    return out


@functools.lru_cache(maxsize=None)
def device_properties(device: int) -> dict:
    """Name, multiprocessor count, shared memory per block (opt-in) and memory of a device."""
    cupy = cupy_module()
    props = cupy.cuda.runtime.getDeviceProperties(device)
    name = props["name"]
    return {
        "name": name.decode() if isinstance(name, bytes) else str(name),
        "sm_count": int(props["multiProcessorCount"]),
        "smem_per_block_optin": int(props.get("sharedMemPerBlockOptin", 48 * 1024)),
        "smem_per_sm": int(props.get("sharedMemPerMultiprocessor", 100 * 1024)),
        "total_memory": int(props["totalGlobalMem"]),
        "cc": (int(props["major"]), int(props["minor"])),
        "l2_bytes": int(props.get("l2CacheSize", 0)),
    }


#: Hardware barriers a multiprocessor holds for its resident blocks: a block that uses 1, 2,
#: 4, 8 or 16 of them (ptxas reports it) lets 32, 32, 16, 8 or 4 blocks reside (measured on
#: an H200). The occupancy API does not count them.
SM_BARRIERS = 64


def resident_blocks(threads: int, smem: int, props: dict, *, barriers: int = 1, regs: int = 0,
                    static: int = 0) -> int:
    """Blocks of ``threads`` threads, ``smem`` bytes of dynamic (``static`` of static) shared
    memory, ``regs`` registers per thread and ``barriers`` hardware barriers that one
    multiprocessor holds at once: registers, shared memory (``props``:
    :func:`device_properties`; the runtime reserves 1 KB per block), 2048 threads, 32 blocks
    and :data:`SM_BARRIERS`; at least 1."""
    warps = -(-threads // 32)
    per_warp = -(-max(1, regs) * 32 // 256) * 256
    by_regs = 65536 // (per_warp * warps)
    by_smem = props.get("smem_per_sm", 233472) // (smem + static + 1024)
    return max(1, min(by_regs, by_smem, 2048 // threads, 32, SM_BARRIERS // barriers))


def blocks_per_sm(fn, threads: int, smem: int, props: dict, barriers: int = 1) -> int:
    """:func:`resident_blocks` of compiled kernel ``fn`` (its registers and static shared
    memory); 2 when its attributes cannot be read (grids sized by this loop over their work,
    so a low guess stays correct)."""
    try:
        regs = int(fn.num_regs)
        static = int(fn.shared_size_bytes)
    except Exception:
        return 2
    return resident_blocks(threads, smem, props, barriers=barriers, regs=regs, static=static)
