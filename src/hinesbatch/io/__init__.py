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

import os

from .model_file import ModelFileError, build_model, load_model, read_model, save_outputs
from .sonata import read_spike_report as load_spikes

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
