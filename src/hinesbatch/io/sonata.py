"""Spike reports in the SONATA format (HDF5), the format BMTK and libsonata read and write.

The layout follows the "Spike file" section of the SONATA developer guide
(``AllenInstitute/sonata``, ``docs/SONATA_DEVELOPER_GUIDE.md``), with the attribute types
libsonata writes and reads::

    /                              attributes magic = 0x0A7A (uint32),
                                              version = [0, 1] (uint32[2])
    /spikes/<population>/          group; attribute sorting = by_time, an HDF5 enum over
                                   uint8 {none: 0, by_id: 1, by_time: 2}
    /spikes/<population>/timestamps  float64[N], spike times; attribute units = "ms"
    /spikes/<population>/node_ids    uint64[N], the node (gid) of each spike

The spikes are written sorted by time, and by node id among equal times. A worked
example: gid 0 fires at 7.1 and 19.6 ms and gid 2 at 7.1 ms, population ``"hinesbatch"``::

    /spikes/hinesbatch/timestamps  [7.1, 7.1, 19.6]
    /spikes/hinesbatch/node_ids    [0,   2,   0]

h5py is needed for both directions; it is the ``sonata`` extra
(``pip install 'hinesbatch[sonata]'``) and is imported only when a report is written or read.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .atomic import atomic_write

#: The SONATA ``sorting`` enumeration, as libsonata declares it.
SORTING = {"none": 0, "by_id": 1, "by_time": 2}
#: The root attributes every SONATA HDF5 file carries.
MAGIC = 0x0A7A
SPEC_VERSION = (0, 1)
#: Factors from the time units a report may declare to ms.
_TO_MS = {"ms": 1.0, "s": 1000.0}


def _h5py():
    try:
        import h5py
    except ImportError:
        raise ImportError("SONATA spike reports need h5py: pip install 'hinesbatch[sonata]' "
                          "(or pip install h5py)") from None
    return h5py


def _check_population(population) -> str:
    if not isinstance(population, str) or not population or "/" in population:
        raise ValueError(f"population must be a non-empty name without '/', not {population!r}")
    return population


def write_spike_report(path: str | os.PathLike, gids, times, *,
                       population: str = "hinesbatch") -> Path:
    """Write spikes as a SONATA spike report, atomically.

    Parameters
    ----------
    path : str or os.PathLike
        The HDF5 file to write (conventionally ``.h5``; written as given).
    gids : array_like of int, shape (N,)
        The node id (gid, >= 0) of each spike.
    times : array_like of float, shape (N,)
        The spike times [ms], finite.
    population : str
        The SONATA node population the gids belong to.

    Returns
    -------
    pathlib.Path
        The path written.
    """
    h5py = _h5py()
    population = _check_population(population)
    gids, times = _spike_arrays(gids, times)
    order = np.lexsort((gids, times))
    gids, times = gids[order], times[order]
    sorting = h5py.enum_dtype(SORTING, basetype="u1")

    def write(tmp: str) -> None:
        with h5py.File(tmp, "w") as f:
            f.attrs.create("magic", MAGIC, dtype="u4")
            f.attrs.create("version", np.array(SPEC_VERSION, dtype="u4"))
            group = f.create_group(f"spikes/{population}")
            group.attrs.create("sorting", SORTING["by_time"], dtype=sorting)
            ts = group.create_dataset("timestamps", data=times, dtype="f8")
            ts.attrs["units"] = "ms"
            group.create_dataset("node_ids", data=gids.astype(np.uint64), dtype="u8")

    return atomic_write(path, write)


def _spike_arrays(gids, times) -> tuple[np.ndarray, np.ndarray]:
    gids = np.asarray(gids)
    times = np.asarray(times, dtype=np.float64)
    if gids.ndim != 1 or times.ndim != 1 or gids.shape != times.shape:
        raise ValueError(f"gids and times must be 1-D of the same length, not shapes "
                         f"{gids.shape} and {times.shape}")
    if gids.size and (gids.dtype.kind not in "iu" or gids.min() < 0):
        raise ValueError(f"gids must be integers >= 0 (dtype {gids.dtype}, min "
                         f"{gids.min()})")
    if not np.isfinite(times).all():
        bad = int(np.flatnonzero(~np.isfinite(times))[0])
        raise ValueError(f"spike time {times[bad]} of gid {gids[bad]} (entry {bad}) is not "
                         "finite")
    return gids.astype(np.int64), times


def read_spike_report(path: str | os.PathLike,
                      population: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Read a SONATA spike report (any writer's).

    Parameters
    ----------
    path : str or os.PathLike
        The HDF5 file.
    population : str, optional
        The population to read; may be left out when the file holds only one.

    Returns
    -------
    gids : numpy.ndarray of int64, shape (N,)
        The node id of each spike.
    times : numpy.ndarray of float64, shape (N,)
        Spike times [ms] (converted from seconds when the report says ``units = "s"``),
        sorted by time and then by node id, as :meth:`hinesbatch.Results.spike_report`.
    """
    h5py = _h5py()
    path = Path(path)
    with h5py.File(path, "r") as f:
        spikes = f.get("spikes")
        if not isinstance(spikes, h5py.Group):
            raise ValueError(f"{path}: not a SONATA spike report (no /spikes group)")
        names = sorted(spikes.keys())
        if population is None:
            if len(names) != 1:
                raise ValueError(f"{path}: holds {len(names)} populations "
                                 f"({', '.join(names) or 'none'}); choose one with population=")
            population = names[0]
        if population not in names:
            raise ValueError(f"{path}: no population {population!r} under /spikes "
                             f"(populations: {', '.join(names) or 'none'})")
        group = spikes[population]
        missing = [d for d in ("timestamps", "node_ids") if d not in group]
        if missing:
            raise ValueError(f"{path}: /spikes/{population} lacks {' and '.join(missing)}")
        times = np.asarray(group["timestamps"][()], dtype=np.float64)
        gids = np.asarray(group["node_ids"][()])
        units = group["timestamps"].attrs.get("units", "ms")
    units = units.decode() if isinstance(units, bytes) else str(units)
    if units not in _TO_MS:
        raise ValueError(f"{path}: /spikes/{population}/timestamps has units {units!r}; "
                         f"known: {', '.join(_TO_MS)}")
    if gids.shape != times.shape:
        raise ValueError(f"{path}: /spikes/{population}: node_ids has {gids.size} entries but "
                         f"timestamps {times.size}")
    gids = gids.astype(np.int64)
    times = times * _TO_MS[units] if units != "ms" else times
    order = np.lexsort((gids, times))
    return gids[order], times[order]
