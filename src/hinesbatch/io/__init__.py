"""Files in and out of the simulator: results (``.npz``), SONATA spike reports (HDF5),
figures, and model files for ``hinesbatch run``.

- :func:`load_results` reads what :meth:`hinesbatch.Results.save` wrote
  (layout: :mod:`hinesbatch.io.npz`).
- :func:`load_spikes` reads a SONATA spike report, as :meth:`hinesbatch.Results.save_spikes`
  writes them (layout: :mod:`hinesbatch.io.sonata`; needs h5py, the ``sonata`` extra).
- :func:`load_model` reads a model file (``.json`` or ``.py``) and builds its simulation
  (format: :mod:`hinesbatch.io.model_file` and docs/model-files.md).
"""
from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .model_file import (
        ModelFileError,
        build_model,
        load_model,
        read_model,
        save_outputs,
    )
    from .sonata import read_spike_report as load_spikes

#: Public name -> (module, name there), imported on first use (PEP 562): writing a results
#: file needs neither model files nor SONATA.
_LAZY = {"ModelFileError": ("model_file", "ModelFileError"),
         "build_model": ("model_file", "build_model"),
         "load_model": ("model_file", "load_model"),
         "read_model": ("model_file", "read_model"),
         "save_outputs": ("model_file", "save_outputs"),
         "load_spikes": ("sonata", "read_spike_report")}


def __getattr__(name: str):
    if name in _LAZY:
        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(f".{module}", __name__), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "ModelFileError",
    "build_model",
    "load_model",
    "load_results",
    "load_spikes",
    "read_model",
    "save_outputs",
]


def load_results(path: str | os.PathLike):
    """Read a results file written by :meth:`hinesbatch.Results.save`.

    Parameters
    ----------
    path : str or os.PathLike
        The ``.npz`` file (``.npz`` appended when the name lacks it and no such file
        exists, as ``save`` appended it).

    Returns
    -------
    hinesbatch.Results
        The traces, times, units, spikes, gids and ``meta`` (JSON types) as saved.
    """
    from ..engine.results import Results
    from .npz import npz_path, read_results

    if not os.path.exists(path) and os.path.exists(npz_path(path)):
        path = npz_path(path)
    return Results(**read_results(path))


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
