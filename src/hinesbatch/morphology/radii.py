"""Radii the cable equation can use: strictly positive, or raised to a chosen minimum."""
from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np

from .errors import SWCRadiusClampedWarning, SWCRadiusError, listing
from .model import Morphology

__all__ = ["check_radii"]


def check_radii(morph: Morphology, *, min_radius: float | None = None) -> Morphology:
    """Make sure every radius can be simulated (zero radius: no membrane, infinite resistance).

    Parameters
    ----------
    morph : Morphology
        A morphology, e.g. from :func:`~hinesbatch.morphology.read_swc`.
    min_radius : float, keyword-only
        Smallest radius to allow [µm]. ``None`` (default): any radius ``<= 0`` is an error.
        Otherwise every radius below ``min_radius`` is raised to it, with a warning.

    Returns
    -------
    Morphology
        ``morph`` itself when nothing is changed; otherwise a copy with radii clamped.

    Raises
    ------
    SWCRadiusError
        ``min_radius`` is None and some radius is zero or negative; the message lists the
        samples and lines.
    ValueError
        ``min_radius`` is not a positive finite number.

    Warns
    -----
    SWCRadiusClampedWarning
        How many radii were raised, and which samples.
    """
    radii = morph.radii
    if min_radius is None:
        bad = np.flatnonzero(~(radii > 0))
        if bad.size == 0:
            return morph
        items = [f"sample {morph.ids[i]} (line {morph.lines[i]}) r={radii[i]:g}" for i in bad]
        raise SWCRadiusError(
            morph.source, morph.lines[bad],
            f"{bad.size} of {radii.size} samples have radius <= 0, which the cable equation "
            "cannot use (no membrane, infinite axial resistance): " + listing(items)
            + ". Pass min_radius=<µm> to raise them to a minimum instead.",
            rule="non-positive radius")
    if isinstance(min_radius, bool) or not isinstance(min_radius, (int, float, np.floating,
                                                                    np.integer)):
        raise ValueError(f"min_radius must be a positive number [µm], got {min_radius!r}")
    if not (math.isfinite(min_radius) and min_radius > 0):
        raise ValueError(f"min_radius must be a positive finite number [µm], got {min_radius!r}")
    low = np.flatnonzero(radii < min_radius)
    if low.size == 0:
        return morph
    items = [f"sample {morph.ids[i]} (line {morph.lines[i]}) r={radii[i]:g}" for i in low]
    warnings.warn(SWCRadiusClampedWarning(
        morph.source, morph.lines[low],
        f"{low.size} of {radii.size} radii were below min_radius={float(min_radius):g} µm and "
        "were raised to it: " + listing(items) + "."), stacklevel=2)
    return dataclasses.replace(morph, radii=np.maximum(radii, float(min_radius)))
