"""The in-memory morphology: SWC samples as arrays, in an order where parents come first."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

__all__ = ["Morphology", "SWC_TYPE_NAMES"]

#: Standard SWC structure identifiers (other values are legal and kept as they are).
SWC_TYPE_NAMES = {0: "undefined", 1: "soma", 2: "axon", 3: "dend", 4: "apic"}


@dataclass(frozen=True, eq=False)
class Morphology:
    """A neuron reconstruction: one rooted tree of samples.

    Samples are stored in *file order* when the file lists every parent before its children
    (as every NeuroMorpho.Org file does, and as NEURON requires); otherwise they are put in
    a parent-first order, and ``lines`` still points at each sample's line in the file.

    Attributes
    ----------
    ids : int64[n]
        SWC sample identifiers, as in the file.
    types : int32[n]
        SWC structure identifiers (1 soma, 2 axon, 3 basal dendrite, 4 apical dendrite, ...).
    xyz : float64[n, 3]
        Sample centres [µm], exactly as parsed (NEURON rounds them to float32 on import;
        :mod:`hinesbatch.discretize` does the same).
    radii : float64[n]
        Sample radii [µm], as parsed.
    parents : int64[n]
        Index (into these arrays, not an SWC id) of each sample's parent; ``-1`` for the root.
        ``parents[i] < i`` always.
    lines : int64[n]
        1-based line number of each sample in the source.
    source : str
        Path of the file read, or ``"<stream>"``.
    header : tuple[str, ...]
        The comment lines of the file, without the leading ``#``.
    """

    ids: np.ndarray
    types: np.ndarray
    xyz: np.ndarray
    radii: np.ndarray
    parents: np.ndarray
    lines: np.ndarray
    source: str = "<stream>"
    header: tuple = field(default_factory=tuple)

    def __post_init__(self) -> None:
        # Normalise dtypes and check the invariants every consumer relies on.
        dtypes = {"ids": np.int64, "types": np.int32, "xyz": np.float64, "radii": np.float64,
                  "parents": np.int64, "lines": np.int64}
        for name, dtype in dtypes.items():
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=dtype))
        object.__setattr__(self, "header", tuple(self.header))
        n = self.ids.shape[0] if self.ids.ndim == 1 else -1
        shapes = {name: getattr(self, name).shape for name in dtypes}
        if n < 1 or any(shp != ((n, 3) if name == "xyz" else (n,)) for name, shp in shapes.items()):
            raise ValueError(f"Morphology needs n >= 1 samples: ids, types, radii, parents and "
                             f"lines of shape (n,), xyz of shape (n, 3); got {shapes}")
        if self.parents[0] != -1 or np.any(self.parents[1:] < 0) or np.any(
                self.parents[1:] >= np.arange(1, n)):
            raise ValueError("Morphology.parents must be -1 for sample 0 (the root) and satisfy "
                             "0 <= parents[i] < i for every other sample")
        if not (np.isfinite(self.xyz).all() and np.isfinite(self.radii).all()):
            raise ValueError("Morphology.xyz and radii must be finite")

    @property
    def n_samples(self) -> int:
        return int(self.ids.size)

    @cached_property
    def children(self) -> list[np.ndarray]:
        """Indices of each sample's children, in index order."""
        order = np.argsort(self.parents, kind="stable")
        counts = np.bincount(self.parents[self.parents >= 0], minlength=self.n_samples)
        starts = np.concatenate([[0], np.cumsum(counts)])
        kids = order[self.n_samples - int(counts.sum()):]
        return [kids[starts[i]:starts[i + 1]] for i in range(self.n_samples)]

    @cached_property
    def sections(self) -> list[np.ndarray]:
        """Unbranched runs of samples, each a parent-to-child array of sample indices.

        A section starts at the root, at every child of a branch point (a sample with more
        than one child), and where the SWC type changes; it ends at a tip, at a branch point
        or before a type change. Every sample belongs to exactly one section.
        Note: NEURON's Import3d cuts sections by slightly different rules (file order,
        soma handling); :mod:`hinesbatch.discretize` reproduces those exactly.
        """
        n = self.n_samples
        counts = np.bincount(self.parents[self.parents >= 0], minlength=n)
        starts_section = np.ones(n, dtype=bool)
        child = np.flatnonzero(self.parents >= 0)
        p = self.parents[child]
        starts_section[child] = (counts[p] != 1) | (self.types[p] != self.types[child])
        sections = []
        for s in np.flatnonzero(starts_section):
            run = [int(s)]
            while True:
                kids = self.children[run[-1]]
                if kids.size != 1 or starts_section[kids[0]]:
                    break
                run.append(int(kids[0]))
            sections.append(np.asarray(run, dtype=np.int64))
        return sections

    @cached_property
    def section_parents(self) -> np.ndarray:
        """For each section in :attr:`sections`, the index of its parent section (-1 for the root's)."""
        owner = np.empty(self.n_samples, dtype=np.int64)
        for k, run in enumerate(self.sections):
            owner[run] = k
        first = np.array([run[0] for run in self.sections], dtype=np.int64)
        par = self.parents[first]
        return np.where(par >= 0, owner[np.maximum(par, 0)], -1)

    @property
    def has_soma(self) -> bool:
        return bool(np.any(self.types == 1))

    def __repr__(self) -> str:
        return (f"<Morphology {self.source}: {self.n_samples} samples, "
                f"{len(self.sections)} sections>")
