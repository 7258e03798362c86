"""How much memory a simulation needs, and how much this process may still use.

A run holds, per cell, its state (``v``, and the ``d`` and ``rhs`` of the step being solved),
the backend's scratch and the recordings (one float64 per cell and sample). Everything is
sized before the first large allocation, so a run that cannot fit is refused with the
numbers instead of dying half-way (a ``MemoryError``, or the kernel's out-of-memory killer
under a cgroup or ``ulimit -v`` limit).
"""
from __future__ import annotations

import os
import resource
from dataclasses import dataclass, field
from pathlib import Path

from .errors import InsufficientMemoryError

__all__ = ["MemoryEstimate", "available_host_memory", "available_address_space",
           "available_device_memory", "format_bytes"]

_F64 = 8
#: Bytes of ``/proc/meminfo`` etc. values given in kB.
_KB = 1024


@dataclass
class MemoryEstimate:
    """Bytes a run needs, by part, in host memory and in device memory.

    Attributes
    ----------
    host, device : dict[str, int]
        Part name -> bytes (``device`` is empty for CPU backends).
    disk : int
        Bytes written to disk while running (recordings streamed to a file); they are
        memory-mapped, so they take address space (``ulimit -v``) but not memory.
    """

    host: dict = field(default_factory=dict)
    device: dict = field(default_factory=dict)
    disk: int = 0

    @classmethod
    def passive(cls, *, n_cells: int, n_nodes: int, n_samples: int, buffer_columns: int,
                on_device: bool, streamed: bool) -> "MemoryEstimate":
        """The estimate of :func:`hinesbatch.sim.simulate_passive`'s loop.

        Parameters
        ----------
        n_cells, n_nodes : int
            Cells in the batch and nodes per cell.
        n_samples : int
            Recorded samples per cell.
        buffer_columns : int
            Columns of the recording buffer the loop fills between copies to the output.
        on_device : bool
            Whether the state lives on a GPU (the backend's array module is not NumPy).
        streamed : bool
            Whether the recordings go to a file on disk instead of host memory.
        """
        cells_nodes = n_cells * n_nodes * _F64
        state = {"state (v, d, rhs)": 3 * cells_nodes,
                 "recording buffer": n_cells * (buffer_columns + 1) * _F64}
        est = cls()
        if on_device:
            # the array assembler's scratch, and a strategy's relayout of d and rhs
            state["assembly scratch"] = cells_nodes
            state["solver layout copies"] = 2 * cells_nodes
            est.device = state
        else:
            est.host.update(state)
            est.host["solver scratch"] = 2 * n_cells * _F64
        recordings = n_cells * n_samples * _F64
        if streamed:
            est.disk = recordings
        else:
            est.host["recordings"] = recordings
        return est

    @property
    def host_bytes(self) -> int:
        return sum(self.host.values())

    @property
    def device_bytes(self) -> int:
        return sum(self.device.values())

    def check(self, *, hint: str, device_free=None) -> None:
        """Raise :class:`InsufficientMemoryError` when a part of the run cannot fit.

        ``device_free`` is a callable returning ``(bytes, source)`` for the device (called
        only when the estimate has device parts). ``hint`` says how to shrink the run.
        """
        for where, parts, free in (("host", self.host, available_host_memory),
                                   ("device", self.device, device_free)):
            need = sum(parts.values())
            if not parts or free is None:
                continue
            avail, source = free()
            if avail is None or need <= avail:
                continue
            listed = ", ".join(f"{name} {format_bytes(b)}" for name, b in parts.items() if b)
            raise InsufficientMemoryError(
                f"this run needs about {format_bytes(need)} of {where} memory ({listed}) but "
                f"{format_bytes(avail)} is available ({source}); {hint}",
                needed=need, available=avail, where=where)
        space, source = available_address_space()
        need = self.host_bytes + self.disk
        if self.disk and space is not None and need > space:
            raise InsufficientMemoryError(
                f"the recordings file is mapped into memory: this run needs about "
                f"{format_bytes(need)} of address space but {format_bytes(space)} is left "
                f"({source}); {hint}", needed=need, available=space, where="address space")


def format_bytes(n: float) -> str:
    """``n`` bytes as a short text: ``"29.0 GiB"``, ``"512.0 MiB"``, ``"12 B"``."""
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def available_host_memory() -> tuple[int | None, str]:
    """Bytes this process may still allocate, and where the limit comes from.

    The least of: ``MemAvailable`` in ``/proc/meminfo``; the cgroup's limit less its usage
    (cgroup v2 ``memory.max``/``memory.current``, or v1 ``memory.limit_in_bytes``/
    ``memory.usage_in_bytes``; reclaimable page cache counted as free); the address-space
    limit (``ulimit -v``) less the process's size. ``(None, reason)`` when nothing can be read
    (not Linux).
    """
    found = []
    meminfo = _read_keyed(Path("/proc/meminfo"))
    if "MemAvailable" in meminfo:
        found.append((meminfo["MemAvailable"] * _KB, "MemAvailable in /proc/meminfo"))
    cgroup = _cgroup_free()
    if cgroup is not None:
        found.append(cgroup)
    space = available_address_space()
    if space[0] is not None:
        found.append(space)
    if not found:
        return None, "no memory information on this system"
    return min(found, key=lambda item: item[0])


def available_address_space() -> tuple[int | None, str]:
    """Bytes of address space left under ``ulimit -v`` (``RLIMIT_AS``), or ``(None, ...)``
    when there is no such limit."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None, "no address-space limit"
    size = _read_keyed(Path("/proc/self/status")).get("VmSize", 0) * _KB
    return max(0, soft - size), (f"address-space limit (ulimit -v) of {format_bytes(soft)}, "
                                 f"{format_bytes(size)} in use")


def available_device_memory(xp) -> tuple[int | None, str]:
    """Free bytes on the current device of array module ``xp`` (CuPy), and the source."""
    try:
        free, total = xp.cuda.runtime.memGetInfo()
    except Exception as exc:  # not CuPy, or the runtime call failed: no basis to refuse
        return None, f"device memory unknown ({exc})"
    pool = xp.get_default_memory_pool()
    free += pool.free_bytes()  # held by CuPy's pool, reusable by this run
    return int(free), f"free on the GPU, of {format_bytes(total)}"


def _read_keyed(path: Path) -> dict:
    """``key: value kB`` lines (``/proc/meminfo``, ``/proc/self/status``) as {key: int}."""
    try:
        text = path.read_text()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            out[key.strip()] = int(parts[0])
    return out


def _cgroup_free() -> tuple[int, str] | None:
    """The cgroup's memory limit less its usage (page cache counted free), or None."""
    root = Path("/sys/fs/cgroup")
    own = ""
    try:  # cgroup v2: "0::/path"
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                own = line[3:].strip().lstrip("/")
    except OSError:
        pass
    candidates = [(root / own, "memory.max", "memory.current", "inactive_file"),
                  (root, "memory.max", "memory.current", "inactive_file"),
                  (root / "memory", "memory.limit_in_bytes", "memory.usage_in_bytes",
                   "total_inactive_file")]
    for folder, limit_name, usage_name, cache_key in candidates:
        try:
            limit_text = (folder / limit_name).read_text().strip()
            usage = int((folder / usage_name).read_text().strip())
        except (OSError, ValueError):
            continue
        if limit_text == "max" or not limit_text.isdigit() or int(limit_text) >= 2**60:
            return None
        cache = 0
        try:
            for line in (folder / "memory.stat").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == cache_key:
                    cache = int(value)
        except (OSError, ValueError):
            pass
        limit = int(limit_text)
        return max(0, limit - usage + cache), (
            f"cgroup limit {format_bytes(limit)} in {os.fspath(folder / limit_name)}")
    return None
