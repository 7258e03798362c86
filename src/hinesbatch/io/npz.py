"""The results file: a simulation's recordings in one NumPy ``.npz`` archive.

:meth:`hinesbatch.Results.save` writes it and :func:`hinesbatch.io.load_results` reads it
back. It is a plain ``.npz`` (a zip of ``.npy`` arrays), readable with ``numpy.load`` alone
and without pickles (``allow_pickle=False``):

=================  =================================================================
entry              content
=================  =================================================================
``index``          a 0-d unicode array holding the JSON description below
``trace_<i>``      the i-th trace, as recorded (float64; units in the index)
``time_<j>``       a sample-time array [ms], float64, shared by every trace sampled
                   at the same times
``spikes_<k>``     the k-th spike source's times [ms], float64, sorted
=================  =================================================================

A worked example: a soma voltage and a clamp current recorded every step for 0.1 ms
(dt 0.025 ms), and the spikes of cell 0, gives the entries ``index``, ``trace_0``,
``trace_1``, ``time_0`` (both traces share it) and ``spikes_0``, with ``index``::

    {"format": "hinesbatch-results", "version": 1,
     "traces": [{"key": "v@0:soma[0](0.5)", "unit": "mV", "data": "trace_0", "time": "time_0"},
                {"key": "i@0:IClamp[0]", "unit": "nA", "data": "trace_1", "time": "time_0"}],
     "spikes": [{"key": "spikes@0:soma[0](0.5)", "gid": 0, "data": "spikes_0"}],
     "meta": {"dt": 0.025, "tstop": 0.1, "celsius": 6.3}}

Keys are kept in the index, not in entry names, so any key (``@``, ``:``, brackets) is
stored as it is and the order of the keys survives the round trip.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

from .atomic import atomic_write

#: Value of the index's ``"format"`` field.
FORMAT = "hinesbatch-results"
#: Version of the layout written; readers refuse newer ones.
VERSION = 1
#: Name of the entry holding the JSON index.
INDEX = "index"


def npz_path(path: str | os.PathLike) -> Path:
    """``path`` with ``.npz`` appended when it does not already end so (as ``numpy.savez``)."""
    path = Path(path)
    return path if path.suffix == ".npz" else path.with_name(path.name + ".npz")


def write_results(path: str | os.PathLike, traces: dict, times: dict, units: dict,
                  spikes: dict, spike_gids: dict, meta: dict) -> Path:
    """Write the parts of a :class:`~hinesbatch.Results` to ``path`` (``.npz`` appended if
    missing), atomically. Returns the path written.

    ``meta`` must be JSON-serialisable (NumPy scalars and arrays and paths are converted);
    anything else raises ``TypeError`` naming the entry.
    """
    path = npz_path(path)
    arrays: dict[str, np.ndarray] = {}
    shared: dict[tuple, str] = {}  # (dtype, shape, digest) -> time entry
    index: dict = {"format": FORMAT, "version": VERSION, "traces": [], "spikes": []}
    for i, key in enumerate(traces):
        t = np.ascontiguousarray(times[key])
        ident = (t.dtype.str, t.shape, hashlib.sha1(t.tobytes()).hexdigest())
        if ident not in shared:
            shared[ident] = f"time_{len(shared)}"
            arrays[shared[ident]] = t
        arrays[f"trace_{i}"] = np.asarray(traces[key])
        index["traces"].append({"key": key, "unit": units[key], "data": f"trace_{i}",
                                "time": shared[ident]})
    for k, key in enumerate(spikes):
        arrays[f"spikes_{k}"] = np.asarray(spikes[key])
        index["spikes"].append({"key": key, "gid": int(spike_gids[key]),
                                "data": f"spikes_{k}"})
    index["meta"] = _jsonable(meta, "meta")
    text = np.array(json.dumps(index, ensure_ascii=False, allow_nan=True))

    def write(tmp: str) -> None:
        with open(tmp, "wb") as f:
            np.savez(f, **{INDEX: text}, **arrays)

    return atomic_write(path, write)


def read_results(path: str | os.PathLike) -> dict:
    """The parts of a results file, as keyword arguments of :class:`~hinesbatch.Results`:
    ``traces``, ``times``, ``units``, ``spikes``, ``spike_gids``, ``meta``.

    Raises ``ValueError`` naming ``path`` when it is not a results file or a newer version.
    """
    path = Path(path)
    with np.load(path, allow_pickle=False) as npz:
        if INDEX not in npz.files:
            raise ValueError(f"{path}: not a hinesbatch results file (no '{INDEX}' entry; "
                             f"entries: {', '.join(npz.files[:8]) or 'none'})")
        try:
            index = json.loads(str(npz[INDEX][()]))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{path}: the '{INDEX}' entry is not JSON ({exc})") from None
        if not isinstance(index, dict) or index.get("format") != FORMAT:
            raise ValueError(f"{path}: not a hinesbatch results file (format "
                             f"{index.get('format') if isinstance(index, dict) else None!r})")
        if not isinstance(index.get("version"), int) or index["version"] > VERSION:
            raise ValueError(f"{path}: results file version {index.get('version')!r} is newer "
                             f"than this hinesbatch reads ({VERSION}); upgrade hinesbatch")
        try:
            parts = {"traces": {}, "times": {}, "units": {}, "spikes": {}, "spike_gids": {},
                     "meta": index.get("meta", {})}
            loaded: dict[str, np.ndarray] = {}  # traces that shared times share them again
            for entry in index["traces"]:
                key = entry["key"]
                parts["traces"][key] = npz[entry["data"]]
                if entry["time"] not in loaded:
                    loaded[entry["time"]] = npz[entry["time"]]
                parts["times"][key] = loaded[entry["time"]]
                parts["units"][key] = entry["unit"]
            for entry in index["spikes"]:
                parts["spikes"][entry["key"]] = npz[entry["data"]]
                parts["spike_gids"][entry["key"]] = int(entry["gid"])
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{path}: damaged results file (the index names {exc}, which "
                             "the archive lacks)") from None
    return parts


def _jsonable(value, where: str):
    """``value`` with NumPy scalars and arrays, tuples and paths turned into JSON types."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"{where}: keys must be strings, not {type(k).__name__} ({k!r})")
            out[k] = _jsonable(v, f"{where}[{k!r}]")
        return out
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist(), where)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    raise TypeError(f"{where} is of type {type(value).__name__}, which a results file cannot "
                    "store (use numbers, strings, lists or dicts)")
