"""The ``gpu`` Hines backend: CUDA C++ kernels through CuPy, on one or several devices.

The backend protocol is :mod:`hinesbatch.solvers.registry`'s. Values arrive as CuPy arrays
in the canonical order (``plan.py`` moves NumPy inputs to the current device and the result
back, or, when they exceed ``max_bytes``, hands them to :meth:`GpuBackend.solve_host`, which
streams them in chunks of cells: :mod:`.streaming`); nothing inside :meth:`GpuBackend.solve` goes through the host except, when
``check_pivots`` is on, one 8-byte read of the pivot flag per device.
"""
from __future__ import annotations

import contextlib
import threading

import numpy as np

from ...errors import singular_pivot_error
from . import options as check
from .auto import AUTO_REASON, auto_strategy
from .device import availability, cupy_module, device_ids, device_properties, suits_gpu
from .device_parts import Part, split
from .strategies import STRATEGIES, Strategy
from .streaming import HostStreamer

__all__ = ["GpuBackend", "AUTO_REASON"]

_NO_FAILURE = np.uint64(0xFFFFFFFFFFFFFFFF)
_OWN_OPTIONS = ("strategy", "devices", "max_bytes", "check_pivots")
_STRATEGY_OPTIONS = tuple(sorted({o for cls in STRATEGIES.values() for o in cls.options}))



class _DevicePart:
    """One part of the batch on one device: its strategy, stream, flag and buffers."""

    def __init__(self, part: Part, device: int, strategy: Strategy):
        self.part, self.device, self.strategy = part, device, strategy
        self.stream = self.flag = self.values = self.done = None
        self.remote = None  # (d, rhs) buffers when the values live on another device

    def setup(self):
        if self.flag is None:
            cupy = cupy_module()
            with cupy.cuda.Device(self.device):
                self.stream = cupy.cuda.Stream(non_blocking=True)
                self.flag = cupy.empty(1, dtype=np.uint64)
                self.values = cupy.empty(self.part.n_cells, dtype=self.strategy.dtype)
                self.done = cupy.cuda.Event(block=False, disable_timing=True)

    @property
    def pivots(self):
        return self.flag, self.values


class GpuBackend:
    """Batched Hines solves on CUDA devices: one thread per cell (the papers' layouts), a
    group of lanes per cell (``tiled``), or several threads per cell from host schedules
    (``levels``, ``fine``, ``dhs``).

    Parameters
    ----------
    structure : HinesStructure or MonoBatch
    dtype : numpy.dtype
        float32 or float64 (the plan makes one backend per dtype).
    strategy : str
        ``"auto"`` (default), ``"flat"``, ``"interleaved"``, ``"block-interleaved"``,
        ``"block-shared"``, ``"tiled"`` (see :mod:`.strategies`), ``"grouped"`` (cells with the
        same matrix solved together, :mod:`.strategies.grouped`), ``"levels"``, ``"fine"`` or
        ``"dhs"``
        (see :mod:`.strategies.multi_morphology`; options ``reroot``, ``split``, ``block_size``,
        ``threads_per_cell``).
    devices : None, "all" or list of int
        Devices to spread the cells over (one stream each); ``None``: the current device.
    max_bytes : int or None
        Cap on the device memory the plan allocates on each device (structure copies,
        layout scratch); larger batches are solved in chunks of cells. ``None``: half of
        the device's free memory when the plan is made.
    check_pivots : bool
        Check for zero or non-finite pivots (one 8-byte device-to-host read per device and
        solve, which also waits for the solve to finish). ``False`` keeps ``solve`` fully
        asynchronous.
    threads, bs, tile_cells, groups, batch, lanes, buffers : int
        Strategy options (threads per block; cells per block of the block layouts; cells
        per tile, tiles per block, nodes per elimination step, lanes per cell and tile
        buffers of ``tiled``;
        docs/gpu.md lists them all, with those of ``levels``, ``fine`` and ``dhs``).
    """

    name = "gpu"
    kind = "hines"
    suits = staticmethod(suits_gpu)

    @classmethod
    def available(cls) -> tuple[bool, str]:
        return availability()

    def __init__(self, structure, *, dtype, strategy: str = "auto", devices=None,
                 max_bytes: int | None = None, check_pivots: bool = True, **options):
        unknown = sorted(set(options) - set(_STRATEGY_OPTIONS))
        if unknown:
            raise TypeError(f"backend 'gpu' got unknown option(s) {', '.join(unknown)}; its options: "
                            f"{', '.join(_OWN_OPTIONS + _STRATEGY_OPTIONS)}")
        self.xp = cupy_module()
        self.structure = structure
        self.dtype = np.dtype(dtype)
        self.check_pivots = bool(check_pivots)
        self.devices = device_ids(devices)
        self.max_bytes = check.optional(check.positive_int, "max_bytes", max_bytes)
        self._auto_options: dict = {}
        self.strategy, self.reason = self._choose(strategy)
        options = {**self._auto_options, **options}  # the user's options win over auto's
        self._parts = [_DevicePart(part, dev, self._make(self.strategy, part, dev, options))
                       for part, dev in zip(split(structure, len(self.devices)), self.devices)
                       if part.n_cells]
        self._events: dict[int, object] = {}
        self._streamer = HostStreamer(self, options)  # NumPy batches larger than the cap
        # Calls share the parts' pivot flags and scratch buffers: they run one at a time
        # (host threads take turns) and, on the device, in order (see _in_turn).
        self._lock = threading.RLock()
        self._finished: dict[int, object] = {}  # device -> event after the last solve's work
        self._last_stream = None

    # -- construction ------------------------------------------------------------------------
    def _choose(self, strategy) -> tuple[str, str]:
        if not isinstance(strategy, str):
            raise TypeError(f"strategy must be a string, got {type(strategy).__name__}")
        if strategy != "auto":
            if strategy not in STRATEGIES:
                raise ValueError(f"unknown GPU strategy {strategy!r}; valid strategies: auto, "
                                 f"{', '.join(STRATEGIES)}")
            return strategy, "requested"
        sms = min(device_properties(d)["sm_count"] for d in self.devices)
        name, self._auto_options, why = auto_strategy(self.structure, sms)
        return name, "auto: " + why

    def _budget(self, device: int) -> int:
        if self.max_bytes is not None:
            return int(self.max_bytes)
        cupy = cupy_module()
        with cupy.cuda.Device(device):
            free, _ = cupy.cuda.runtime.memGetInfo()
        return int(free) // 2

    def _make(self, name: str, part: Part, device: int, options: dict) -> Strategy:
        opts = dict(options)
        budget = self._budget(device)
        try:
            strategy = STRATEGIES[name](part, self.dtype, device, opts, budget)
        except ValueError as exc:
            if self.reason == "requested" or name == "interleaved":
                raise
            # auto: the cells do not fit in shared memory; Full-Interleaved always works
            self.strategy = "interleaved"
            self.reason = f"auto: {exc}; using 'interleaved' (the paper's fastest layout)"
            return self._make("interleaved", part, device, options)
        if opts and self.reason == "requested":
            raise TypeError(f"option(s) {', '.join(sorted(opts))} do not apply to strategy "
                            f"{name!r} (its options: {', '.join(STRATEGIES[name].options) or 'none'})")
        if opts and f"ignored by {name}" not in self.reason:
            self.reason += f"; option(s) {', '.join(sorted(opts))} ignored by {name}"
        need = strategy.structure_bytes() + strategy.scratch_bytes()
        if need > budget:
            raise ValueError(f"max_bytes={budget} is too small for strategy {name!r} on device "
                             f"{device}: its structure and scratch need {need} bytes")
        return strategy

    # -- protocol ------------------------------------------------------------------------------
    def describe(self) -> str:
        parts = self._parts
        first = parts[0].strategy.describe() if parts else self.strategy
        pivots = ("pivots checked (one 8-byte device-to-host read per device and solve)"
                  if self.check_pivots else "pivots not checked")
        return (f"strategy {self.strategy} ({self.reason}); {first}; devices {self.devices}"
                f" ({len(parts)} part(s)); {self.dtype.name}; {pivots}")

    def solve(self, d, rhs) -> None:
        """Solve in place: ``d`` is destroyed, ``x`` is written over ``rhs`` (canonical order).

        Parts on the arrays' device run on that device's current stream; parts on other
        devices copy their cells there and back (peer copies) on their own streams. Safe to
        call from several host threads: calls take turns (:meth:`_in_turn`).
        """
        cupy = self.xp
        home = d.device.id
        with cupy.cuda.Device(home):
            current = cupy.cuda.get_current_stream()
        with self._in_turn(home, current):
            self._solve(d, rhs, home, current)

    def _solve(self, d, rhs, home: int, current) -> None:
        cupy = self.xp
        ready = self._ready_event(home, current)
        for p in self._parts:
            p.setup()
            if p.device == home:
                with cupy.cuda.Device(home):
                    self._reset(p, current)
                    p.strategy.solve_canonical(p.part.canonical(d), p.part.canonical(rhs),
                                               p.pivots, current)
            else:
                self._solve_remote(p, d, rhs, home, ready)
        self._join(home, current)

    @contextlib.contextmanager
    def _in_turn(self, home: int, current):
        """Run a solve's block alone, its device work after the previous solve's.

        Host threads wait for the lock. On the device, a call on another stream than the
        previous one (each host thread has its own current stream) first waits for the
        previous call's work: with ``check_pivots`` that work is already finished (the flag
        read waited for it), without it the previous call may still be running, on the
        same scratch buffers.
        """
        with self._lock:
            cupy = self.xp
            last = self._last_stream
            if not self.check_pivots and last is not None and last[1].ptr != current.ptr:
                with cupy.cuda.Device(home):
                    current.wait_event(self._finished[last[0]])
            try:
                yield
            finally:
                if not self.check_pivots:
                    with cupy.cuda.Device(home):
                        event = self._finished.get(home)
                        if event is None:
                            event = self._finished[home] = cupy.cuda.Event(
                                block=False, disable_timing=True)
                        event.record(current)
                    self._last_stream = (home, current)  # held: its pointer is not reused

    def _reset(self, p: _DevicePart, stream) -> None:
        if self.check_pivots:
            self.xp.cuda.runtime.memsetAsync(p.flag.data.ptr, 0xFF, 8, stream.ptr)

    def _solve_remote(self, p: _DevicePart, d, rhs, home: int, ready) -> None:
        cupy = self.xp
        rt = cupy.cuda.runtime
        src_d, src_r = p.part.canonical(d), p.part.canonical(rhs)
        _enable_peer_access(p.device, home)
        with cupy.cuda.Device(p.device):
            if p.remote is None:
                p.remote = (cupy.empty(src_d.shape, self.dtype), cupy.empty(src_r.shape, self.dtype))
            bd, br = p.remote
            s = p.stream
            s.wait_event(ready)
            self._reset(p, s)
            rt.memcpyPeerAsync(bd.data.ptr, p.device, src_d.data.ptr, home, src_d.nbytes, s.ptr)
            rt.memcpyPeerAsync(br.data.ptr, p.device, src_r.data.ptr, home, src_r.nbytes, s.ptr)
            p.strategy.solve_canonical(bd, br, p.pivots, s)
            rt.memcpyPeerAsync(src_r.data.ptr, home, br.data.ptr, p.device, br.nbytes, s.ptr)
            p.done.record(s)

    def _check(self, home: int, current) -> None:
        if not self.check_pivots or not self._parts:
            return
        cupy = self.xp
        worst, where = int(_NO_FAILURE), None
        for p in self._parts:
            with cupy.cuda.Device(p.device):
                stream = current if p.device == home else p.stream
                key = int(p.flag.get(stream=stream)[0])
                if key < worst:
                    worst, where = key, (p, stream)
        if where is None:
            return
        cell, node = worst >> 32, worst & 0xFFFFFFFF
        p, stream = where
        with cupy.cuda.Device(p.device):
            pivot = float(p.values[cell - p.part.cell_start: cell - p.part.cell_start + 1]
                          .get(stream=stream)[0])
        raise singular_pivot_error(
            "Hines", cell, node, pivot,
            detail="the lowest failing cell; its node met first in descending elimination order")

    # -- NumPy values larger than the device (streaming.py) -------------------------------------
    def streams_host(self) -> bool:
        """Whether NumPy values of the whole batch plus the plan's memory exceed ``max_bytes``
        (``Plan.solve`` then hands them to :meth:`solve_host` instead of moving them whole)."""
        return self._streamer.needed()

    def solve_host(self, d: np.ndarray, rhs: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Solve NumPy values (``values_shape``, the plan's dtype) streamed to the device in
        chunks of whole cells; ``d`` and ``rhs`` are only read, ``x`` goes into ``out`` (may be
        ``rhs``), which is returned. ``SingularSystemError`` names the batch's cell and node."""
        with self._lock:  # one chunk at a time: the chunk plans are shared
            return self._streamer.solve(d, rhs, out)

    def host_chunks(self) -> list[tuple[int, int]]:
        """The ranges ``[a, b)`` of cells in which :meth:`solve_host` streams NumPy values."""
        return self._streamer.ranges()

    # -- native layout -------------------------------------------------------------------------
    def layout_shapes(self) -> list[tuple[int, ...]]:
        """Shape of each device's values in the native layout (one entry per part)."""
        with self._lock:  # a strategy may plan its layout on first use
            return [p.strategy.native_shape() for p in self._parts]

    @property
    def strategies(self) -> tuple:
        """The strategy object of each device part (its plan: tiles, schedule, block size),
        in the order of :meth:`layout_shapes`."""
        return tuple(p.strategy for p in self._parts)

    @property
    def native_is_canonical(self) -> bool:
        """Whether the native layout is the canonical order on every device part."""
        return all(p.strategy.native_is_canonical for p in self._parts)

    def to_layout(self, a):
        """Canonical values (CuPy, any device) -> native-layout arrays, one per part's device.

        Returns one array when the plan has one part, else a list. Synchronous (setup-time);
        calls from several threads take turns (strategies build device arrays on first use).
        """
        cupy = self.xp
        out = []
        with self._lock:
            for p in self._parts:
                with cupy.cuda.Device(p.device):
                    stream = cupy.cuda.get_current_stream()
                    src = _on_device(cupy.ascontiguousarray(p.part.canonical(a)), p.device)
                    out.append(p.strategy.to_native(src.astype(self.dtype, copy=False), stream))
                    stream.synchronize()
        return out[0] if len(out) == 1 else out

    def from_layout(self, native):
        """Native-layout arrays (as :meth:`to_layout` returns) -> one canonical CuPy array, on
        the first part's device. Synchronous."""
        cupy = self.xp
        arrays = self._per_part(native, "native")
        pieces = []
        with self._lock:
            for p, a in zip(self._parts, arrays):
                with cupy.cuda.Device(p.device):
                    stream = cupy.cuda.get_current_stream()
                    pieces.append(p.strategy.from_native(a, stream))
                    stream.synchronize()
        if not pieces:
            return cupy.empty(self.structure.values_shape, self.dtype)
        with cupy.cuda.Device(self._parts[0].device):
            return cupy.concatenate([_on_device(x, self._parts[0].device) for x in pieces], axis=0)

    def solve_layout(self, d, rhs):
        """Solve values kept in the native layout, in place (x over ``rhs``); returns ``rhs``.

        ``d`` and ``rhs``: as :meth:`to_layout` returns them (one array per part's device).
        Parts on the current device run on the current stream, the others on their device's
        stream; the current stream waits for all of them. Calls take turns as
        :meth:`solve`'s do.
        """
        cupy = self.xp
        ds, rs = self._per_part(d, "d"), self._per_part(rhs, "rhs")
        home = cupy.cuda.Device().id
        current = cupy.cuda.get_current_stream()
        with self._in_turn(home, current):
            self._solve_layout(ds, rs, home, current)
        return rhs

    def _solve_layout(self, ds, rs, home: int, current) -> None:
        cupy = self.xp
        ready = self._ready_event(home, current)
        for p, dd, rr in zip(self._parts, ds, rs):
            p.setup()
            if p.device == home:
                self._reset(p, current)
                p.strategy.solve_native(dd, rr, p.pivots, current)
                continue
            with cupy.cuda.Device(p.device):
                p.stream.wait_event(ready)
                self._reset(p, p.stream)
                p.strategy.solve_native(dd, rr, p.pivots, p.stream)
                p.done.record(p.stream)
        self._join(home, current)

    def _ready_event(self, home: int, current):
        """An event on the caller's stream that remote parts wait for (None without them)."""
        if all(p.device == home for p in self._parts):
            return None
        cupy = self.xp
        with cupy.cuda.Device(home):
            event = self._events.get(home)
            if event is None:
                event = self._events[home] = cupy.cuda.Event(block=False, disable_timing=True)
            event.record(current)
        return event

    def _join(self, home: int, current) -> None:
        """The caller's stream waits for the remote parts; then the pivot flags are read."""
        cupy = self.xp
        with cupy.cuda.Device(home):
            for p in self._parts:
                if p.device != home:
                    current.wait_event(p.done)
        self._check(home, current)

    def layout_streams(self) -> list[tuple[int, object]]:
        """(device, stream) per part: where :meth:`solve_layout`, called on the current device,
        runs each part. Work queued there on native arrays (refilling inputs, say) is ordered
        before the next solve."""
        cupy = self.xp
        home = cupy.cuda.Device().id
        out = []
        with self._lock:  # setup() builds a part's device state once
            for p in self._parts:
                p.setup()
                out.append((p.device,
                            cupy.cuda.get_current_stream() if p.device == home else p.stream))
        return out

    def _per_part(self, arrays, name: str) -> list:
        if len(self._parts) == 1 and not isinstance(arrays, (list, tuple)):
            arrays = [arrays]
        if not isinstance(arrays, (list, tuple)) or len(arrays) != len(self._parts):
            raise ValueError(f"{name} must hold one array per device part ({len(self._parts)})")
        with self._lock:  # a strategy may plan its layout on first use
            shapes = [p.strategy.native_shape() for p in self._parts]
        for p, a, shape in zip(self._parts, arrays, shapes):
            if not isinstance(a, self.xp.ndarray):
                raise TypeError(f"{name} must be CuPy arrays in the plan's layout, got {type(a).__name__}")
            if tuple(a.shape) != tuple(shape) or a.dtype != self.dtype or not a.flags.c_contiguous:
                raise ValueError(f"{name} must be C-contiguous {self.dtype} of shape {shape}, got "
                                 f"{a.dtype} {tuple(a.shape)}")
            if a.device.id != p.device:
                raise ValueError(f"{name}: the part of device {p.device} is on device {a.device.id}")
        return list(arrays)


def _on_device(a, device: int):
    """``a`` itself if it lives on ``device``, else a copy there (peer copy, synchronous)."""
    cupy = cupy_module()
    if a.device.id == device:
        return a
    src = cupy.ascontiguousarray(a)
    with cupy.cuda.Device(device):
        out = cupy.empty(src.shape, src.dtype)
        cupy.cuda.runtime.memcpyPeer(out.data.ptr, device, src.data.ptr, src.device.id, src.nbytes)
    return out


_PEERS: set[tuple[int, int]] = set()


def _enable_peer_access(a: int, b: int) -> None:
    """Let devices ``a`` and ``b`` read each other's memory (NVLink/PCIe peer copies instead of
    copies staged through the host), once per pair; silently skipped where unsupported."""
    cupy = cupy_module()
    rt = cupy.cuda.runtime
    for dev, peer in ((a, b), (b, a)):
        if (dev, peer) in _PEERS:
            continue
        _PEERS.add((dev, peer))
        try:
            if rt.deviceCanAccessPeer(dev, peer):
                with cupy.cuda.Device(dev):
                    rt.deviceEnablePeerAccess(peer)
        except Exception:  # already enabled, or not allowed: the copies still work, slower
            pass
