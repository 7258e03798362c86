"""Figures of simulation results: traces (one axis per unit) and spike rasters.

matplotlib is the ``plot`` extra (``pip install 'hinesbatch[plot]'``), imported only when a
figure is drawn. Figures are made with ``matplotlib.figure.Figure`` directly, not through
``pyplot``: no global state, nothing to close, and no GUI backend is needed (in Jupyter the
returned figure displays itself; elsewhere ``fig.savefig(...)`` or the ``path`` argument).
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .atomic import atomic_write

#: Lines named in one axis's legend at most; the rest are counted in a last entry.
LEGEND_ENTRIES = 12


def _figure(**kwargs):
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError("plots need matplotlib: pip install 'hinesbatch[plot]' "
                          "(or pip install matplotlib)") from None
    return Figure(layout="constrained", **kwargs)


def figure_path(path: str | os.PathLike) -> tuple[Path, str]:
    """``path`` (``.png`` appended when it has no suffix) and the format matplotlib writes
    for it; ``ValueError`` listing the formats when matplotlib cannot write that suffix."""
    fig = _figure()
    path = Path(path)
    if not path.suffix:
        path = path.with_name(path.name + ".png")
    fmt = path.suffix[1:].lower()
    formats = fig.canvas.get_supported_filetypes()
    if fmt not in formats:
        raise ValueError(f"{path}: matplotlib cannot write '.{fmt}' files; use one of "
                         f"{', '.join('.' + f for f in sorted(formats))}")
    return path, fmt


def save_figure(fig, path: str | os.PathLike, *, dpi: int = 120) -> Path:
    """Write ``fig`` to ``path`` atomically (format from the suffix, ``.png`` appended when
    there is none). Returns the path written."""
    path, fmt = figure_path(path)
    return atomic_write(path, lambda tmp: fig.savefig(tmp, format=fmt, dpi=dpi))


def plot_traces(results, keys=None, path: str | os.PathLike | None = None):
    """Draw traces of ``results`` against time [ms], one axis per unit, stacked, sharing the
    time axis; each axis has a legend naming the keys. Returns the ``Figure``; also written
    to ``path`` when given. See :meth:`hinesbatch.Results.plot`."""
    keys = results.keys() if keys is None else _key_list(keys)
    for key in keys:
        results[key]  # KeyError listing valid keys
    if not keys:
        raise ValueError("no traces to plot: the results hold no recordings")
    if path is not None:
        figure_path(path)  # an unwritable format fails before drawing
    groups: dict[str, list[str]] = {}
    for key in keys:
        groups.setdefault(results.units[key], []).append(key)
    fig = _figure(figsize=(8, 2.2 + 2.0 * len(groups)))
    axes = fig.subplots(len(groups), 1, sharex=True, squeeze=False)[:, 0]
    for ax, (unit, group) in zip(axes, groups.items()):
        names = {key.partition("@")[0] for key in group}
        label = f"{names.pop()} ({unit})" if len(names) == 1 else f"({unit})"
        for n, key in enumerate(group):
            ax.plot(results.time(key), np.asarray(results[key]), lw=1,
                    label=key if n < LEGEND_ENTRIES else "_nolegend_")
        if len(group) > LEGEND_ENTRIES:
            ax.plot([], [], " ", label=f"and {len(group) - LEGEND_ENTRIES} more")
        ax.set_ylabel(label)
        ax.legend(fontsize="small", loc="upper right")
    axes[-1].set_xlabel("t (ms)")
    if path is not None:
        save_figure(fig, path)
    return fig


def plot_raster(results, path: str | os.PathLike | None = None):
    """Draw the spike raster of ``results``: one tick per spike, gid against time [ms].
    Returns the ``Figure``; also written to ``path`` when given. See
    :meth:`hinesbatch.Results.raster`."""
    if path is not None:
        figure_path(path)
    gids, times = results.spike_report()
    fig = _figure(figsize=(8, 1.8 + 0.15 * min(40, len(set(gids.tolist())) + 1)))
    ax = fig.subplots()
    ax.scatter(times, gids, marker="|", s=80, linewidths=1.2, color="k")
    tstop = results.meta.get("tstop")
    if isinstance(tstop, (int, float)) and tstop > 0:
        ax.set_xlim(0, tstop)
    if gids.size == 0:
        ax.text(0.5, 0.5, "no spikes", transform=ax.transAxes, ha="center", va="center")
    else:
        ax.set_ylim(gids.min() - 0.5, gids.max() + 0.5)
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.set(xlabel="t (ms)", ylabel="gid",
           title=f"{gids.size} spikes from {len(results.spikes)} sources")
    if path is not None:
        save_figure(fig, path)
    return fig


def _key_list(keys) -> list[str]:
    if isinstance(keys, str):
        return [keys]
    keys = list(keys)
    bad = [k for k in keys if not isinstance(k, str)]
    if bad:
        raise TypeError(f"keys must be strings, not {type(bad[0]).__name__} ({bad[0]!r})")
    return keys
