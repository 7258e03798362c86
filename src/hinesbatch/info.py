"""``hinesbatch info``: versions, the backends available here, and whether a GPU was found."""
from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import sys

__all__ = ["gpu_status", "collect", "configure", "run"]


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def gpu_status() -> dict:
    """Whether a usable CUDA GPU is visible through CuPy, and if not, why.

    Returns a dict with ``found`` (bool), ``reason`` (str, empty when found) and, when
    found, ``devices``: a list of ``{"id", "name", "memory_gib", "compute_capability"}``
    plus ``driver`` and ``runtime`` CUDA versions.
    """
    try:
        import cupy
    except ImportError as exc:
        return {"found": False, "reason": f"CuPy is not installed ({exc}); "
                "install the 'gpu' extra: pip install 'hinesbatch[gpu]'"}
    except Exception as exc:  # a broken CuPy install raises other errors at import
        return {"found": False, "reason": f"CuPy failed to import: {type(exc).__name__}: {exc}"}
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDARuntimeError: no driver, driver too old, ...
        from .solvers.gpu.device import NO_DRIVER, nvidia_driver_found

        if not nvidia_driver_found():  # CUDA calls a missing driver an insufficient one
            return {"found": False, "reason": NO_DRIVER}
        return {"found": False, "reason": f"CUDA driver error: {exc}"}
    if n == 0:
        return {"found": False, "reason": "CuPy is installed but no CUDA device is visible"}
    devices = []
    for i in range(n):
        props = cupy.cuda.runtime.getDeviceProperties(i)
        name = props["name"]
        devices.append({
            "id": i,
            "name": name.decode() if isinstance(name, bytes) else str(name),
            "memory_gib": round(props["totalGlobalMem"] / 2**30, 1),
            "compute_capability": f"{props['major']}.{props['minor']}",
        })
    return {
        "found": True,
        "reason": "",
        "devices": devices,
        "driver": cupy.cuda.runtime.driverGetVersion(),
        "runtime": cupy.cuda.runtime.runtimeGetVersion(),
    }


def collect() -> dict:
    """Everything ``hinesbatch info`` reports, as a JSON-serialisable dict."""
    from . import __version__
    from .solvers import registry

    backends = {}
    for kind in ("hines", "tridiagonal"):
        backends[kind] = {}
        for name in registry.names(kind)[1:]:
            ok, why = registry.get(name, kind).available()
            backends[kind][name] = "available" if ok else f"unavailable: {why}"
    return {
        "hinesbatch": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "versions": {d: _version(d) for d in
                     ("numpy", "numba", "cupy-cuda13x", "cupy-cuda12x", "neuron", "matplotlib")},
        "backends": backends,
        "gpu": gpu_status(),
    }


def configure(parser) -> None:
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args) -> int:
    report = collect()
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"hinesbatch {report['hinesbatch']} on Python {report['python']} ({report['platform']}), "
          f"{report['cpu_count']} CPUs")
    for dist, ver in report["versions"].items():
        if ver is not None:
            print(f"  {dist:14s} {ver}")
    for kind, entries in report["backends"].items():
        print(f"{kind} backends:")
        for name, state in entries.items():
            print(f"  {name:14s} {state}")
    gpu = report["gpu"]
    if gpu["found"]:
        for dev in gpu["devices"]:
            print(f"GPU {dev['id']}: {dev['name']}, {dev['memory_gib']} GiB, "
                  f"compute capability {dev['compute_capability']}")
    else:
        print(f"GPU: none found ({gpu['reason']})")
    return 0
