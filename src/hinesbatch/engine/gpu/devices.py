"""Where the epoch kernel runs: a CUDA device through CuPy, or the host.

Both offer the same small interface to :class:`.runner.GpuRunner`: ``put`` (a NumPy array
onto the device), ``zeros``, ``get`` (back to NumPy), ``get_rows`` (some rows back),
``compile`` (the kernel source of :mod:`.source`), ``launch`` and ``sync``.

:class:`HostDevice` compiles the same source as host C++ (``g++ -DHB_HOST``, no FMA
contraction) and runs the blocks one after another with one thread each, so that every
barrier is trivially met. It exists to test the engine's logic (layout, events, recordings,
several devices) on machines without a GPU; it says nothing about races between threads.
Setting :data:`EMULATION_ENV` (``HINESBATCH_GPU_EMULATION=2``) makes ``backend="gpu"`` use
it, in this process and in the processes it starts.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess

import numpy as np

from ...errors import BackendUnavailableError
from ...solvers.gpu.device import availability, blocks_per_sm, cupy_module, device_properties
from ..kernels import cache_dir

__all__ = ["EMULATION_ENV", "SHARED_MIN_WARPS", "CupyDevice", "HostDevice", "compile_options",
           "cuda_devices", "device_count"]

_SCALARS = {"i32": (np.int32, ctypes.c_int), "i64": (np.int64, ctypes.c_longlong),
            "f64": (np.float64, ctypes.c_double)}


#: Warps a multiprocessor must still hold when the cells' v, d and rhs take shared memory
#: (docs/decisions/021-gpu-state-memory.md): 10,000 cells on an H100 in float64, 128 threads
#: a block, shared against device memory: hh on 1101 nodes (32 warps resident) 7.86 against
#: 6.04 G compartment-steps/s, on 1303 nodes (28 warps) 6.16 against 4.92; the ModelDB 20756
#: model on 1375 nodes (24 warps) 1.95 against 2.16; 17 morphologies up to 2627 nodes
#: (12 warps) 3.97 against 6.20.
SHARED_MIN_WARPS = 28


def compile_options(precision: str) -> tuple:
    """NVRTC's options for the epoch kernel: float64 without FMA contraction, so that every
    operation rounds as on the CPU; float32 with fast division and subnormals flushed
    (docs/simulator.md, "How close to the CPU")."""
    return ("--std=c++17",) + (("--fmad=false",) if precision == "float64"
                               else ("--prec-div=false", "--ftz=true"))


class CupyDevice:
    """One CUDA device, by index."""

    kind = "cuda"
    trunk_scan = True       # long trunks by a warp's scan (runner.TRUNK_MIN, TRUNK_MIN_THREADS)

    def __init__(self, index: int):
        self.cp, self.index = cupy_module(), int(index)
        self.device = self.cp.cuda.Device(self.index)
        self.props = device_properties(self.index)
        self.name, self.max_shared = self.props["name"], self.props["smem_per_block_optin"]
        self.multiprocessors = self.props["sm_count"]

    def __repr__(self) -> str:
        return f"cuda:{self.index} ({self.name})"

    def state_in_shared(self, kernel, threads: int, shared: int) -> bool:
        """Whether a cell's v, d and rhs (``shared`` bytes a block) go to shared memory:
        where they fit and the blocks a multiprocessor then holds are all that the
        kernel's registers allow or at least :data:`SHARED_MIN_WARPS` warps; else to
        device memory."""
        if shared > self.max_shared:
            return False
        with_shared = blocks_per_sm(kernel, threads, shared, self.props)
        without = blocks_per_sm(kernel, threads, 0, self.props)
        return with_shared >= without or with_shared * -(-threads // 32) >= SHARED_MIN_WARPS

    def put(self, array):
        with self.device:
            return self.cp.asarray(np.ascontiguousarray(array))

    def zeros(self, shape, dtype):
        with self.device:
            return self.cp.zeros(shape, dtype=dtype)

    def get(self, array) -> np.ndarray:
        with self.device:
            return self.cp.asnumpy(array)

    def get_rows(self, array, rows) -> np.ndarray:
        """Rows ``rows`` (a NumPy index array) of the 2-D ``array``, gathered on the
        device, back to NumPy."""
        with self.device:
            return self.cp.asnumpy(array[self.cp.asarray(rows)])

    def free_bytes(self) -> int:
        with self.device:
            return int(self.cp.cuda.runtime.memGetInfo()[0])

    def compile(self, source: str, precision: str):
        options = compile_options(precision)
        with self.device:
            module = self.cp.RawModule(code=source, options=options)
            return module.get_function("hb_epoch")

    def launch(self, kernel, grid: int, block: int, shared: int, args, kinds) -> None:
        values = [np.dtype(_SCALARS[k][0]).type(a) if k in _SCALARS else a
                  for a, k in zip(args, kinds)]
        with self.device:
            if shared > 48 * 1024:
                kernel.max_dynamic_shared_size_bytes = shared
            kernel((grid,), (block,), tuple(values), shared_mem=shared)

    def sync(self) -> None:
        with self.device:
            self.cp.cuda.get_current_stream().synchronize()


class HostDevice:
    """The kernel compiled as host C++, run block after block (for tests)."""

    kind = "host"
    max_shared = 1 << 30
    multiprocessors = 1          # one block at a time
    #: The host build takes every node by chains, in NEURON's order, so that it equals the
    #: serial engine bit for bit; tests switch the trunk's scan on to check it.
    trunk_scan = False

    def __init__(self, index: int = 0):
        self.index = index
        self.name = "host emulation"

    def state_in_shared(self, kernel, threads: int, shared: int) -> bool:
        """Always (one block at a time); tests replace it to run the device-memory path."""
        return shared <= self.max_shared

    def __repr__(self) -> str:
        return f"host:{self.index}"

    def put(self, array):
        return np.array(array, copy=True, order="C")

    def zeros(self, shape, dtype):
        return np.zeros(shape, dtype=dtype)

    def get(self, array) -> np.ndarray:
        return np.array(array, copy=True)

    def get_rows(self, array, rows) -> np.ndarray:
        return np.array(array[rows], copy=True)

    def free_bytes(self) -> int:
        return 1 << 40

    def compile(self, source: str, precision: str):
        cxx = shutil.which("g++") or shutil.which("c++")
        if cxx is None:
            raise BackendUnavailableError("the host build of the GPU kernel needs g++")
        digest = hashlib.sha256(source.encode()).hexdigest()[:20]
        folder = cache_dir()
        folder.mkdir(parents=True, exist_ok=True)
        lib = folder / f"hb_gpu_host_{digest}.so"
        if not lib.exists():
            src = folder / f"hb_gpu_host_{digest}.{os.getpid()}.cpp"
            src.write_text(source)
            tmp = lib.with_suffix(f".{os.getpid()}.so")
            done = subprocess.run([cxx, "-DHB_HOST", "-O1", "-ffp-contract=off",
                                   "-fno-fast-math", "-shared", "-fPIC", "-x", "c++", str(src),
                                   "-o", str(tmp)], capture_output=True, text=True, check=False)
            if done.returncode != 0:
                errors = [x for x in done.stderr.splitlines() if "error" in x][:5]
                raise RuntimeError(f"the host build of the GPU kernel failed ({src}):\n"
                                   + "\n".join(errors or done.stderr.splitlines()[-5:]))
            os.replace(tmp, lib)
            src.unlink()
        return ctypes.CDLL(str(lib)).hb_epoch_host

    def launch(self, kernel, grid: int, block: int, shared: int, args, kinds) -> None:
        values = [ctypes.c_int(grid), ctypes.c_longlong(shared)]
        for a, k in zip(args, kinds):
            if k in _SCALARS:
                values.append(_SCALARS[k][1](a))
            else:
                values.append(ctypes.c_void_p(a.ctypes.data if a.size else 0))
        kernel(*values)

    def sync(self) -> None:
        pass


#: Set to a count N, backend ``"gpu"`` runs the kernel built as host C++ on N emulated
#: devices (:class:`HostDevice`): how the GPU engine's logic is tested without a GPU.
EMULATION_ENV = "HINESBATCH_GPU_EMULATION"


def _emulated() -> int:
    value = os.environ.get(EMULATION_ENV, "").strip()
    if not value:
        return 0
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{EMULATION_ENV}={value!r}: give a device count >= 1")
    return int(value)


def device_count() -> tuple[int, str]:
    """CUDA devices visible here (emulated ones when :data:`EMULATION_ENV` is set), and
    why there are none."""
    if _emulated():
        return _emulated(), ""
    ok, why = availability()
    if not ok:
        return 0, why
    return int(cupy_module().cuda.runtime.getDeviceCount()), ""


def cuda_devices(spec) -> list:
    """The devices ``spec`` names: None (all visible), a count, or indices."""
    count, why = device_count()
    if count == 0:
        raise BackendUnavailableError(f"backend 'gpu' cannot run here: {why}")
    if spec is None:
        ids = list(range(count))
    elif isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        if not 1 <= spec <= count:
            raise ValueError(f"devices={spec}: {count} CUDA device(s) are visible")
        ids = list(range(int(spec)))
    else:
        ids = [int(i) for i in spec]
        bad = [i for i in ids if not 0 <= i < count]
        if bad or not ids or len(set(ids)) != len(ids):
            raise ValueError(f"devices={list(spec)}: give distinct indices in [0, {count})")
    kind = HostDevice if _emulated() else CupyDevice
    return [kind(i) for i in ids]
