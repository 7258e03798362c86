"""The workloads of ``hinesbatch bench sim --part gpu``, built as hinesbatch cells.

* Jaxley's Fig. 2 workload: one cell of about 217 branches with 4 compartments each and
  ``HH`` everywhere, simulated ``N`` times side by side. The repository cell nearest to 217
  branches is ``pyramidal.swc`` (220 sections in NEURON's and hinesbatch's naming, 221
  branches in Jaxley's ``read_swc``); every section gets ``nseg=4``. Simulation ``i`` clamps
  its soma with its own amplitude (:func:`amplitudes`), so that no two simulations are the
  same computation.
* Batches of real morphologies at d_lambda 0.1: copies of one cell, and a mix of the
  repository's 17 cells (cell ``i`` is morphology ``i mod 17``), the same count.

A compartment is a node of the Hines system: NEURON's segments plus the zero-area node at
the end of every section (``nodes``); ``membrane`` counts the segments alone, those that
carry hh. Jaxley's compartments are its cylinders (branches x ncomp), all with membrane.
"""
from __future__ import annotations

import functools
import warnings
from pathlib import Path

import numpy as np

__all__ = ["FIG2_MORPHOLOGY", "BATCH_MORPHOLOGY", "NCOMP", "D_LAMBDA", "DT", "STEPS",
           "CELSIUS", "V_INIT", "RA", "CM", "STIMULUS", "AMPLITUDES", "THRESHOLD", "tstop",
           "amplitudes", "real_morphologies", "read_morphology", "stimulus_location",
           "fig2_cells", "batch_cells", "compartments", "spike_count"]

REAL_DIR = Path("tests/data/morphologies/real")
#: The Fig. 2 cell and the single-morphology batch's cell (1303 nodes at d_lambda 0.1 and
#: Ra 100, the nearest to the mean of the 17 cells, 1129).
FIG2_MORPHOLOGY, BATCH_MORPHOLOGY = "pyramidal.swc", "c91662.swc"
NCOMP = 4           # compartments per branch (Fig. 2)
D_LAMBDA = 0.1      # the batches' discretization (NEURON's d_lambda rule at 100 Hz)
DT = 0.025          # [ms]
STEPS = 800
CELSIUS = 6.3       # [degC]: hh's q10 = 1, as Jaxley's HH (no temperature dependence)
V_INIT = -65.0      # [mV]
RA, CM = 100.0, 1.0  # [ohm cm], [uF/cm2]
#: The clamp on every cell's first section at 0.5: (delay [ms], duration [ms]).
STIMULUS = (2.0, 20.0)
#: Range of the clamps' amplitudes [nA]: every cell spikes once or twice in 20 ms.
AMPLITUDES = (0.5, 2.5)
THRESHOLD = 10.0    # [mV] of the spike counts
_GOLDEN = 0.6180339887498949
#: Radii below this [µm] are raised to it (one repository file has a zero radius).
MIN_RADIUS = 0.01


def tstop(steps: int = STEPS, dt: float = DT) -> float:
    """End time [ms] for which hinesbatch's time grid (``t < tstop - dt/2``) has ``steps``
    steps."""
    return steps * dt


def amplitudes(n: int) -> np.ndarray:
    """Clamp amplitudes [nA] of simulations 0..n-1, float64, shape (n,).

    A golden-ratio sequence over :data:`AMPLITUDES`: simulation ``i`` has the same
    amplitude whatever ``n``, and any ``n`` first ones spread over the whole range.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")
    lo, hi = AMPLITUDES
    return lo + (hi - lo) * np.mod(np.arange(n) * _GOLDEN, 1.0)


def _root() -> Path:
    here = Path(__file__).resolve()
    for root in (Path.cwd(), here.parents[3]):
        if (root / REAL_DIR).is_dir():
            return root
    raise FileNotFoundError(f"{REAL_DIR} is not in this directory or the source tree; run "
                            "from the repository")


def real_morphologies(names=None) -> list[Path]:
    """Paths of the repository's real morphologies (all of them, sorted, or ``names``).

    Raises
    ------
    FileNotFoundError
        The folder or a named file is missing.
    """
    folder = _root() / REAL_DIR
    if names is None:
        return sorted(folder.glob("*.swc"))
    paths = [folder / n for n in names]
    for p in paths:
        if not p.is_file():
            raise FileNotFoundError(f"{p}: no such morphology")
    return paths


@functools.lru_cache(maxsize=32)
def read_morphology(path: str):
    """The morphology of ``path`` read once (radii below :data:`MIN_RADIUS` raised; the
    conventions' warnings of real files silenced)."""
    from ..morphology import check_radii, read_swc

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return check_radii(read_swc(path), min_radius=MIN_RADIUS)


def stimulus_location(cell) -> str:
    """Where a cell is clamped and recorded: the middle of its first section (its soma, or
    the root section of a cell without one)."""
    return f"{cell.section_names[0]}(0.5)"


def _hh_cell(hb, morphology, amp: float, **policy):
    cell = hb.Cell(morphology, ra=RA, cm=CM, **policy)
    cell.insert("hh")
    delay, dur = STIMULUS
    cell.place("IClamp", stimulus_location(cell), delay=delay, dur=dur, amp=float(amp))
    return cell


def fig2_cells(hb, path, amps) -> list:
    """Cells of the Fig. 2 workload: ``path`` at nseg=4, hh everywhere, one clamp per cell
    with amplitude ``amps[i]`` [nA]."""
    morph = read_morphology(str(path))
    return [_hh_cell(hb, morph, a, nseg=NCOMP) for a in np.asarray(amps, dtype=float)]


def batch_cells(hb, paths, n: int) -> list:
    """``n`` cells at d_lambda 0.1 with hh: cell ``i`` is ``paths[i % len(paths)]`` clamped
    with :func:`amplitudes`'s ``i``-th amplitude."""
    if not paths:
        raise ValueError("batch_cells needs at least one morphology")
    morphs = [read_morphology(str(p)) for p in paths]
    return [_hh_cell(hb, morphs[i % len(morphs)], a, d_lambda=D_LAMBDA)
            for i, a in enumerate(amplitudes(n))]


def compartments(cells) -> tuple[int, int]:
    """(nodes, membrane nodes) summed over ``cells``: Hines nodes, and those that carry
    membrane (NEURON's segments)."""
    per_geometry: dict = {}
    nodes = membrane = 0
    for cell in cells:
        geo = cell.geometry
        if id(geo) not in per_geometry:
            per_geometry[id(geo)] = (int(geo.n_nodes), int(np.count_nonzero(geo.has_membrane)))
        n, m = per_geometry[id(geo)]
        nodes += n
        membrane += m
    return nodes, membrane


def spike_count(trace, threshold: float = THRESHOLD) -> int:
    """Upward crossings of ``threshold`` [mV] in a voltage trace."""
    v = np.asarray(trace, dtype=float)
    return int(np.count_nonzero((v[:-1] < threshold) & (v[1:] >= threshold)))
