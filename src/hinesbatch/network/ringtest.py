"""NEURON's ringtest (neuronsimulator/ringtest) as a hinesbatch :class:`~.description.Network`.

The ringtest is the benchmark NEURON and CoreNEURON use for networks: ``nring`` rings of
``ncell`` branching cells; in each ring cell ``i`` drives cell ``i + 1`` (the last drives
the first), and one NetStim kicks the first cell of each ring at t = 0. The model,
rebuilt here from what ringtest does (defaults in brackets, as its command line):

Rings and gids
    ``nring`` [16] rings of ``ncell`` [8] cells; the cells of ring ``r`` are gids
    ``r*ncell .. r*ncell + ncell - 1``. Ring ``r``'s NetStim (number 1, start 0 ms)
    drives its first cell with weight 0.01 µS and delay 1 ms; it gets gid
    ``nring*ncell + r`` here (ringtest gives it none; its spikes are not in ringtest's
    raster).
Cell types
    ``ntype = (nring*ncell - 1) // npt + 1`` types (``npt`` [8] cells per type). The
    list ``[gid % ntype for gid in ...]`` is shuffled by Fisher-Yates with NEURON's
    Random123 stream (0, 1): for ``i = 0 .. n-1``, swap ``i`` with
    ``discunif(i, n-1)``. Gid ``g`` has type ``types[g]``.
A type's shape (stream (type, 2))
    ``nb = discunif(branch[0], branch[1])`` dendrites [10..20]; one draw of
    ``discunif(compart[0], compart[1])`` [1..1] and ``nb`` repicks give each dendrite's
    nseg. Dendrite 0 hangs on the soma's x = 1 end; dendrite ``i >= 1`` on the x = 1 end of
    dendrite ``secpar[i]``, chosen so that no dendrite has more than two children: a list
    of open slots ``[[0, 0]]``; for each ``i``, ``a = discunif(0, len(slots) - 1)``,
    ``secpar[i] = slots[a][0]``, ``slots[a][1] += 1``; a slot with two children is
    reused for dendrite ``i`` (``slots[a] = [i, 0]``), else ``[i, 0]`` is appended.
The cell (ringtest's ``B_BallStick``)
    soma: L = diam = 12.6157 µm (two 3-D points, so diam is a float32), nseg 1, hh with
    its defaults; dendrite 0: L 200 µm, diam 1 µm (two 3-D points); the others L 10 µm,
    diam 1 µm (stylized); Ra 100 Ω·cm and cm 1 µF/cm² everywhere; the dendrites carry
    pas (g 0.001 S/cm², e -65 mV) and hh. Two ExpSyns on dendrite 0: ``ExpSyn[0]`` at
    0.8 (tau 2 ms, e 0 mV), the target of every NetCon, and ``ExpSyn[1]`` at 0.1 (tau 5
    ms, e -80 mV). The spike source is v at ``soma[0](1)``, threshold 10 mV.
Connections
    ``i -> (i + 1) % ncell`` within each ring, weight 0.01 µS, delay 1 ms, to ExpSyn[0].
Run
    dt 0.025 ms, celsius 6.3 degC, v_init -65 mV, tstop 100 ms, fixed step. The default
    case fires 688 spikes.

``hinesbatch.run_network(ringtest(), 100.0)`` runs it, in one process or on every rank of
``mpiexec``; ``hinesbatch bench network`` times it against NEURON.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..model.sections import SectionCell
from .description import Network
from .random123 import Random123Stream

__all__ = ["RingtestParameters", "cell_shape", "cell_types", "ringtest", "ringtest_cell"]

SOMA_L_UM = 12.6157
DEND0_L_UM = 200.0
DEND_L_UM = 10.0
WEIGHT_US = 0.01
DELAY_MS = 1.0


@dataclass(frozen=True)
class RingtestParameters:
    """ringtest's command-line options (its defaults)."""

    nring: int = 16
    ncell: int = 8
    npt: int = 8
    branch: tuple[int, int] = (10, 20)
    compart: tuple[int, int] = (1, 1)
    tstop: float = 100.0

    def __post_init__(self):
        for name in ("nring", "ncell", "npt"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        for name in ("branch", "compart"):
            low, high = getattr(self, name)
            if not (isinstance(low, int) and isinstance(high, int) and 1 <= low <= high):
                raise ValueError(f"{name} must be two integers 1 <= low <= high, got "
                                 f"{getattr(self, name)!r}")
        object.__setattr__(self, "branch", tuple(self.branch))
        object.__setattr__(self, "compart", tuple(self.compart))

    @property
    def n_cells(self) -> int:
        return self.nring * self.ncell

    @property
    def ntype(self) -> int:
        """Number of cell types: ``(nring*ncell - 1) // npt + 1``."""
        return (self.n_cells - 1) // self.npt + 1


def cell_types(params: RingtestParameters) -> list[int]:
    """The type of every gid: ``gid % ntype``, shuffled with stream (0, 1)."""
    types = [i % params.ntype for i in range(params.n_cells)]
    ran = Random123Stream(0, 1)
    n = len(types) - 1
    for i in range(n + 1):
        j = ran.discunif(i, n)
        types[i], types[j] = types[j], types[i]
    return types


def cell_shape(cell_type: int, branch=(10, 20), compart=(1, 1)) -> tuple[list, list]:
    """``(secpar, nseg)`` of a type: each dendrite's parent dendrite and its nseg."""
    r = Random123Stream(int(cell_type), 2)
    nb = r.discunif(*branch)
    r.discunif(*compart)
    nseg = [r.repick() for _ in range(nb)]
    secpar = [0] * nb
    slots = [[0, 0]]
    for i in range(1, nb):
        a = r.discunif(0, len(slots) - 1)
        secpar[i] = slots[a][0]
        slots[a][1] += 1
        if slots[a][1] > 1:
            slots[a] = [i, 0]
        else:
            slots.append([i, 0])
    return secpar, nseg


def ringtest_cell(secpar, nseg, *, name: str | None = None) -> SectionCell:
    """A ``B_BallStick`` with dendrites ``secpar`` (parent dendrite of each) and ``nseg``."""
    nb = len(secpar)
    names = ["soma[0]"] + [f"dend[{i}]" for i in range(nb)]
    parents = [-1, 0] + [1 + int(p) for p in secpar[1:]]
    lengths = [SOMA_L_UM, DEND0_L_UM] + [DEND_L_UM] * (nb - 1)
    diams = [SOMA_L_UM, 1.0] + [1.0] * (nb - 1)
    cell = SectionCell(names, parents, lengths, diams, nseg=[1] + [int(n) for n in nseg],
                       pt3d=[True, True] + [False] * (nb - 1), ra=100.0, cm=1.0, name=name)
    cell.insert("hh", "soma")
    cell.insert("pas", "dend", g=0.001, e=-65.0)
    cell.insert("hh", "dend")
    cell.place("ExpSyn", "dend[0](0.8)", tau=2.0, e=0.0)
    cell.place("ExpSyn", "dend[0](0.1)", tau=5.0, e=-80.0)
    return cell


def ringtest(params: RingtestParameters | None = None, **options) -> Network:
    """The ringtest network (module docstring); ``options`` override the defaults of
    :class:`RingtestParameters` (``nring``, ``ncell``, ``npt``, ``branch``, ``compart``).
    """
    if params is None:
        params = RingtestParameters(**{k: v for k, v in options.items() if k != "tstop"})
    elif options:
        raise TypeError("give RingtestParameters or keyword options, not both")
    types = cell_types(params)
    shapes = {t: cell_shape(t, params.branch, params.compart) for t in sorted(set(types))}

    def build(gid):
        secpar, nseg = shapes[types[gid]]
        return ringtest_cell(secpar, nseg, name=f"ringtest cell {gid}")

    def compartments(gid):
        _, nseg = shapes[types[gid]]
        # root, soma and its end, each dendrite's segments and end
        return 3 + sum(int(n) + 1 for n in nseg)

    net = Network()
    gids = net.add_cells(params.n_cells, build=build, compartments=compartments)
    net.spike_source(gids, location="soma[0](1)", threshold=10.0)
    for r in range(params.nring):
        first = r * params.ncell
        for i in range(params.ncell):
            net.connect(first + i, first + (i + 1) % params.ncell, "ExpSyn[0]",
                        weight=WEIGHT_US, delay=DELAY_MS)
    for r in range(params.nring):
        stim = net.net_stim(start=0.0, interval=10.0, number=1)
        net.connect(stim, r * params.ncell, "ExpSyn[0]", weight=WEIGHT_US, delay=DELAY_MS)
    return net

