"""Convention and plausibility checks of a parsed morphology (each one an SWC warning class).

Every check takes a :class:`Morphology` (parent-first order) and returns at most one warning
that lists every sample involved. Thresholds follow NeuroM's published checks where one
exists; ``docs/swc.md`` lists which real reconstructions of the test set trigger which check.
"""
from __future__ import annotations

import numpy as np

from .errors import (SWCDetachedNeuriteWarning, SWCFatEndWarning, SWCInterruptedSomaWarning,
                     SWCNoSomaWarning, SWCSomaAttachmentWarning, SWCUndefinedTypeWarning,
                     SWCWarning, SWCZeroLengthWarning, listing)
from .model import Morphology

__all__ = ["convention_warnings", "FAT_END_MULTIPLE", "FAT_END_POINTS", "ROOT_JUMP_RADII"]

SOMA = 1
#: A tip is a fat end when its radius exceeds this multiple of the mean radius of the last
#: :data:`FAT_END_POINTS` samples of its branch (NeuroM ``has_no_fat_ends`` defaults).
FAT_END_MULTIPLE = 2.0
FAT_END_POINTS = 5
#: A neurite is far from the soma when its first sample lies more than this many radii of its
#: soma sample from that sample's centre (NeuroM ``has_no_root_node_jumps`` default).
ROOT_JUMP_RADII = 2.0


def convention_warnings(m: Morphology) -> list[SWCWarning]:
    """All convention and plausibility warnings of ``m``, in catalogue order."""
    checks = (_no_soma, _interrupted_soma, _soma_attachment, _undefined_type, _zero_length,
              _fat_ends, _detached_neurites)
    with np.errstate(over="ignore", invalid="ignore"):    # |x| near 1e308: inf compares fine
        return [w for check in checks if (w := check(m)) is not None]


def _s(m: Morphology, i) -> str:
    """``sample 7 (line 12)``."""
    return f"sample {m.ids[i]} (line {m.lines[i]})"


def _no_soma(m: Morphology):
    if m.has_soma:
        return None
    return SWCNoSomaWarning(
        m.source, [m.lines[0]], f"no sample has type 1 (soma); the root, {_s(m, 0)}, has type "
        f"{m.types[0]}. The tree is used as it is, without a soma.")


def _soma_pieces(m: Morphology) -> np.ndarray:
    """First sample of each connected piece of soma (its parent is not soma, or it is the root)."""
    soma = np.flatnonzero(m.types == SOMA)
    par = m.parents[soma]
    return soma[(par < 0) | (m.types[np.maximum(par, 0)] != SOMA)]


def _interrupted_soma(m: Morphology):
    soma = np.flatnonzero(m.types == SOMA)
    if soma.size == 0:
        return None
    pieces = _soma_pieces(m)
    cuts = np.flatnonzero(np.diff(soma) > 1)
    if pieces.size == 1 and pieces[0] == 0 and cuts.size == 0:
        return None
    parts = []
    if pieces.size > 1:
        parts.append(f"the soma is {pieces.size} separate pieces (non-soma samples between "
                     "them), starting at " + listing([_s(m, i) for i in pieces]))
    if m.types[0] != SOMA:
        parts.append(f"the root, {_s(m, 0)}, is not soma")
    if cuts.size:
        runs = np.split(soma, cuts + 1)
        spans = [f"lines {m.lines[r[0]]}-{m.lines[r[-1]]}" if r.size > 1 else
                 f"line {m.lines[r[0]]}" for r in runs]
        parts.append(f"soma samples are not contiguous in the file: {len(runs)} runs, "
                     + listing(spans) + " (NEURON's Import3d puts each run in its own soma section(s))")
    return SWCInterruptedSomaWarning(m.source, m.lines[soma], "; ".join(parts) + ".")


def _soma_attachment(m: Morphology):
    """Neurites on a non-root point of a 3-point soma, or on an interior multi-point soma point."""
    soma = np.flatnonzero(m.types == SOMA)
    kids = np.flatnonzero(m.parents >= 0)
    at = m.parents[kids]
    neurites = kids[(m.types[kids] != SOMA) & (m.types[at] == SOMA)]
    on = m.parents[neurites]
    soma_kids = np.bincount(at[m.types[kids] == SOMA], minlength=m.n_samples)
    three_point = (soma.size == 3 and m.types[0] == SOMA and np.all(m.parents[soma[1:]] == 0)
                   and np.all(soma_kids[soma[1:]] == 0))
    if three_point:
        bad = neurites[on != 0]
        why = (f"with a 3-point soma, neurites should attach to its first (centre) sample, "
               f"{_s(m, 0)}, but ")
        then = " (NEURON's Import3d then does not treat the soma as a 3-point soma)."
    else:
        bad = neurites[(on != 0) & (soma_kids[on] > 0)]
        why = "neurites attached to an interior point of the soma (one with soma children): "
        then = "."
    if bad.size == 0:
        return None
    items = [f"{_s(m, i)} is on soma {_s(m, m.parents[i])}" for i in bad]
    return SWCSomaAttachmentWarning(m.source, m.lines[bad], why + listing(items, sep="; ") + then)


def _undefined_type(m: Morphology):
    bad = np.flatnonzero(m.types <= 0)
    if bad.size == 0:
        return None
    items = [f"{_s(m, i)} type {m.types[i]}" for i in bad]
    return SWCUndefinedTypeWarning(
        m.source, m.lines[bad], f"{bad.size} sample(s) of type 0 (undefined) or negative type: "
        + listing(items) + ". Their sections get NEURON's names dend_0 / minus_<t>.")


def _zero_length(m: Morphology):
    """Samples exactly at their parent's position, except the duplicated first point of a
    branch (same type as a non-soma branch point: a common writer convention)."""
    kid = np.flatnonzero(m.parents >= 0)
    par = m.parents[kid]
    same = np.all(m.xyz[kid] == m.xyz[par], axis=1)
    n_kids = np.bincount(par, minlength=m.n_samples)
    branch_copy = (n_kids[par] > 1) & (m.types[kid] == m.types[par]) & (m.types[par] != SOMA)
    bad = kid[same & ~branch_copy]
    if bad.size == 0:
        return None
    items = [f"{_s(m, i)} at its parent {_s(m, m.parents[i])}" for i in bad]
    return SWCZeroLengthWarning(
        m.source, np.concatenate([m.lines[bad], m.lines[m.parents[bad]]]),
        f"{bad.size} zero-length segment(s), a sample at exactly its parent's position: "
        + listing(items, sep="; ") + ".")


def _fat_ends(m: Morphology):
    n_kids = np.bincount(m.parents[m.parents >= 0], minlength=m.n_samples)
    tips = np.flatnonzero((n_kids == 0) & (m.types != SOMA) & (m.parents >= 0))
    bad, means = [], []
    for tip in tips:
        path, i = [tip], tip
        while len(path) < FAT_END_POINTS and m.parents[i] >= 0:
            i = m.parents[i]
            path.append(i)
            if n_kids[i] != 1 or m.types[i] == SOMA:
                break                      # the branch starts at a branch point or the soma
        mean = float(m.radii[path].mean())
        if m.radii[tip] > FAT_END_MULTIPLE * mean:
            bad.append(tip)
            means.append(mean)
    if not bad:
        return None
    items = [f"{_s(m, i)} radius {m.radii[i]:g} µm, mean {mu:.3g} µm"
             for i, mu in zip(bad, means)]
    return SWCFatEndWarning(
        m.source, m.lines[bad], f"{len(bad)} tip(s) more than {FAT_END_MULTIPLE:g} times as "
        f"thick as the mean of the last {FAT_END_POINTS} samples of their branch: "
        + listing(items, sep="; ") + ".")


def _detached_neurites(m: Morphology):
    kid = np.flatnonzero(m.parents >= 0)
    first = kid[(m.types[kid] != SOMA) & (m.types[m.parents[kid]] == SOMA)]
    at = m.parents[first]
    dist = np.linalg.norm(m.xyz[first] - m.xyz[at], axis=1)
    far = (dist > ROOT_JUMP_RADII * m.radii[at]) & (m.radii[at] > 0)   # r = 0: check_radii's job
    if not far.any():
        return None
    items = [f"{_s(m, i)} is {d:.3g} µm from soma {_s(m, s)} of radius {m.radii[s]:g} µm"
             for i, s, d in zip(first[far], at[far], dist[far])]
    return SWCDetachedNeuriteWarning(
        m.source, m.lines[first[far]],
        f"{int(far.sum())} neurite(s) start more than {ROOT_JUMP_RADII:g} soma radii from the "
        "soma sample they hang on: " + listing(items, sep="; ")
        + ". Check that the neurite is meant to start there.")
