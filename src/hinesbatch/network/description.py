"""``Network``: cells with gids, spike generators and connections, as plain data.

A network is described once, the same way on every rank, and built piecewise: each rank
builds only the cells it owns (:mod:`.distribution`), so a description holds *how to
build* a cell (a function of its gid) rather than the cell itself::

    net = Network()
    cells = net.add_cells(8, build=make_cell, compartments=23)   # gids 0..7
    net.spike_source(cells, location="soma[0](1)", threshold=10.0)
    stim = net.net_stim(start=0.0, number=1)                    # gid 8
    for i in cells:
        net.connect(i, (i + 1) % 8, "ExpSyn[0]", weight=0.01, delay=1.0)
    net.connect(stim, 0, "ExpSyn[0]", weight=0.01, delay=1.0)
    net.record("v", 0, "soma[0](0.5)")
    res = run_network(net, 100.0)     # hinesbatch.run_network: one process or mpiexec

What each part means
    Cells
        ``add_cells(n, build=f)``: gids ``g .. g+n-1`` in order of the calls; ``f(gid)``
        returns a :class:`~hinesbatch.Cell` with its decor and synapses placed.
        ``compartments`` (a count, a sequence or a function of the gid) is the cell's
        node count for the distribution; without it every rank builds every cell once
        to count its nodes. ``add_cells([cell, ...])`` takes built cells.
    Spike sources
        Every cell has one threshold source (NEURON's ``pc.cell(gid, netcon)``): by
        default at ``soma[0](0.5)`` with 10 mV; :meth:`spike_source` moves it. Every
        source's spikes are recorded.
    Generators
        :meth:`net_stim` and :meth:`vec_stim` add a NetStim or VecStim with the next gid,
        :meth:`artificial_cell` an instance of a translated NMODL ARTIFICIAL_CELL; their
        spikes are recorded too.
    Connections
        ``connect(source_gid, target_gid, synapse, weight=, delay=)``: a NetCon from the
        source's spike source to the synapse named ``synapse`` of the target cell
        (``"ExpSyn[0]"``: kind and index among that kind, as ``PointProcess.name``, or
        the position in ``cell.point_processes``), or to the artificial cell
        ``target_gid`` itself (``synapse`` is then not used). Weight in µS, delay in ms.

Checks before a run (:meth:`check`): every connection names known gids, its target a
cell or an artificial cell with a NET_RECEIVE, and a delay ``>= dt`` (spikes cross ranks
once per epoch of at least one step); :class:`~.distribution.NetworkCheckError`
otherwise. A synapse name is checked where the target cell is built.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from numbers import Integral

import numpy as np

from .distribution import Distribution, check_network, distribute
from .events import finite_number
from .sources import NetStimGenerator, VecStimGenerator

__all__ = ["Network"]

DEFAULT_SOURCE = ("soma[0](0.5)", 10.0)


class Network:
    """Cells with gids, spike generators, NetCons and recordings (module docstring).

    Gids are handed out in the order cells and generators are added, from 0.
    """

    def __init__(self):
        self._builders: list[tuple[int, int, Callable]] = []   # (first gid, n, build)
        self._compartments: list = []     # per population: int array or None
        self._kinds: list[str] = []       # per gid: "cell", "NetStim", "VecStim" or an
        #                                   ARTIFICIAL_CELL's name
        self._generators: dict[int, tuple[str, dict]] = {}
        self._sources: dict[int, tuple[str, float]] = {}
        self._src: list[int] = []
        self._tgt: list[int] = []
        self._syn: list = []
        self._weight: list[float] = []
        self._weight_vectors: dict[int, tuple] = {}
        self._delay: list[float] = []
        self._records: list[tuple[str, int, str]] = []

    # ---- contents ---------------------------------------------------------------------
    @property
    def n_gids(self) -> int:
        """Number of gids: cells and generators."""
        return len(self._kinds)

    @property
    def cell_gids(self) -> np.ndarray:
        """(n_cells,) int64: the gids of the cells, ascending."""
        return np.array([g for g, k in enumerate(self._kinds) if k == "cell"], dtype=np.int64)

    @property
    def generator_gids(self) -> np.ndarray:
        """(n_generators,) int64: the gids of the NetStims, VecStims and artificial cells,
        ascending."""
        return np.array(sorted(self._generators), dtype=np.int64)

    def __len__(self) -> int:
        return self.n_gids

    def __repr__(self) -> str:
        return (f"Network({self.cell_gids.size} cells, {len(self._generators)} generators, "
                f"{len(self._src)} connections)")

    def kind(self, gid: int) -> str:
        """``"cell"``, ``"NetStim"``, ``"VecStim"`` or the name of an artificial cell's
        mechanism."""
        return self._kinds[self._check_gid(gid, "gid")]

    # ---- cells ------------------------------------------------------------------------
    def add_cells(self, cells, *, build: Callable | None = None,
                  compartments=None) -> range:
        """Add a population; returns its gids.

        Parameters
        ----------
        cells : int or sequence of Cell
            How many cells ``build`` makes, or the cells themselves.
        build : callable, optional
            ``build(gid) -> Cell``, called on the rank that owns the gid (with an int
            ``cells``).
        compartments : int, sequence of int or callable, optional
            Nodes of each cell (``cell.geometry.n_nodes``), for the distribution: one
            count for all, one per cell, or ``compartments(gid)``. Counted from the
            cells when omitted (which builds each of them on every rank).

        Returns
        -------
        range
            The gids of the new cells.
        """
        first = self.n_gids
        if isinstance(cells, Integral) and not isinstance(cells, bool):
            n = int(cells)
            if n < 0:
                raise ValueError(f"the number of cells must be >= 0, got {n}")
            if build is None or not callable(build):
                raise TypeError("add_cells(n) needs build=, a function gid -> Cell")
            make = build
        else:
            from ..model.cell import Cell

            built = list(cells)
            for i, c in enumerate(built):
                if not isinstance(c, Cell):
                    raise TypeError(f"cells[{i}] is a {type(c).__name__}, not a hinesbatch.Cell")
            if build is not None:
                raise TypeError("give build= only with a number of cells")
            n = len(built)

            def make(gid, _built=built, _first=first):
                return _built[gid - _first]

            if compartments is None:
                compartments = [c.geometry.n_nodes for c in built]
        counts = None
        if compartments is not None:
            gids = range(first, first + n)
            if callable(compartments):
                counts = [compartments(g) for g in gids]
            elif isinstance(compartments, Integral) and not isinstance(compartments, bool):
                counts = [int(compartments)] * n
            else:
                counts = list(compartments)
                if len(counts) != n:
                    raise ValueError(f"compartments has {len(counts)} entries for {n} cells")
            for g, c in zip(gids, counts):
                if isinstance(c, bool) or not isinstance(c, Integral) or c < 1:
                    raise ValueError(f"compartments of gid {g} must be an integer >= 1, got {c!r}")
            counts = np.array(counts, dtype=np.int64)
        self._builders.append((first, n, make))
        self._compartments.append(counts)
        self._kinds.extend(["cell"] * n)
        return range(first, first + n)

    def build_cell(self, gid: int):
        """The cell of ``gid``, built now (by its population's ``build``)."""
        from ..model.cell import Cell

        gid = self._check_gid(gid, "gid")
        if self._kinds[gid] != "cell":
            raise ValueError(f"gid {gid} is a {self._kinds[gid]}, not a cell")
        for first, n, make in self._builders:
            if first <= gid < first + n:
                cell = make(gid)
                if not isinstance(cell, Cell):
                    raise TypeError(f"the build function of gids {first}..{first + n - 1} "
                                    f"returned a {type(cell).__name__} for gid {gid}, not a "
                                    "hinesbatch.Cell")
                return cell
        raise AssertionError(f"gid {gid} has no population")  # unreachable: kinds says cell

    def compartments(self) -> np.ndarray:
        """(n_cells,) int64: nodes of each cell, in gid order of :attr:`cell_gids`."""
        out = []
        for (first, n, _), counts in zip(self._builders, self._compartments):
            if counts is None:
                counts = np.array([self.build_cell(g).geometry.n_nodes
                                   for g in range(first, first + n)], dtype=np.int64)
            out.append(counts)
        return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)

    # ---- sources and generators -------------------------------------------------------
    def spike_source(self, gids, location: str = DEFAULT_SOURCE[0],
                     threshold: float = DEFAULT_SOURCE[1]) -> None:
        """Set where the spikes of cells ``gids`` (an int or a sequence) are detected.

        Parameters
        ----------
        gids : int or sequence of int
        location : str
            ``"soma[0](1)"``: section and x of the watched node.
        threshold : float
            [mV]; a spike is the step at which v crosses it upwards.
        """
        from ..model.cell import parse_location

        parse_location(location)
        threshold = finite_number(threshold, "threshold [mV]")
        for g in _gid_list(gids):
            g = self._check_gid(g, "gid")
            if self._kinds[g] != "cell":
                raise ValueError(f"gid {g} is a {self._kinds[g]}; only cells have a threshold "
                                 "source")
            self._sources[g] = (location, threshold)

    def source_of(self, gid: int) -> tuple[str, float]:
        """``(location, threshold [mV])`` of a cell's spike source."""
        gid = self._check_gid(gid, "gid")
        return self._sources.get(gid, DEFAULT_SOURCE)

    def net_stim(self, *, start: float = 50.0, interval: float = 10.0, number: float = 10,
                 noise: float = 0.0) -> int:
        """Add a NetStim (NEURON's defaults; ``noise = 0`` only); returns its gid."""
        params = {"start": start, "interval": interval, "number": number, "noise": noise}
        NetStimGenerator(**params)  # checks the parameters now
        return self._add_generator("NetStim", params)

    def vec_stim(self, times, *, delay: float = 0.0) -> int:
        """Add a VecStim playing ``times`` [ms] (sorted, >= 0), each ``delay`` [ms]
        later (>= 0, :class:`~.sources.VecStimGenerator`); returns its gid."""
        times = np.array(times, dtype=np.float64)
        VecStimGenerator(times, delay)
        params = {"times": times}
        if delay:
            params["delay"] = float(delay)
        return self._add_generator("VecStim", params)

    def artificial_cell(self, kind: str, **params) -> int:
        """Add an instance of the translated ARTIFICIAL_CELL ``kind`` (``hb.load_mechanisms``
        registers it, on every rank) with ``params``, its PARAMETERs and ASSIGNED
        variables by NEURON's names; returns its gid. It is a source of connections where
        its NET_RECEIVE calls ``net_event``, and a target where it has a NET_RECEIVE
        (``Simulation.artificial_cell``).

        Raises
        ------
        ValueError
            ``kind`` is not a registered ARTIFICIAL_CELL, or a name is unknown or a value
            not finite.
        """
        from ..engine.artificial import artificial_mechanism, check_params

        mech = artificial_mechanism(kind)
        return self._add_generator(mech.name, check_params(mech, params))

    def _add_generator(self, kind: str, params: dict) -> int:
        gid = self.n_gids
        self._kinds.append(kind)
        self._generators[gid] = (kind, params)
        return gid

    def generator(self, gid: int) -> tuple[str, dict]:
        """``(kind, parameters)`` of the generator ``gid``."""
        gid = self._check_gid(gid, "gid")
        if gid not in self._generators:
            raise ValueError(f"gid {gid} is a cell, not a generator")
        kind, params = self._generators[gid]
        return kind, dict(params)

    # ---- connections ------------------------------------------------------------------
    def connect(self, source: int, target: int, synapse="ExpSyn[0]", *, weight=0.0,
                delay: float = 1.0) -> int:
        """A NetCon from gid ``source`` to the synapse ``synapse`` of cell ``target``.

        Gids need not exist yet: :meth:`check` looks at them before the run.

        Parameters
        ----------
        source, target : int
            Gids (``>= 0``).
        synapse : str or int
            ``"ExpSyn[0]"`` (kind and index among the cell's point processes of that
            kind) or the position in ``cell.point_processes``.
        weight : float or sequence of float
            [µS for ExpSyn and Exp2Syn]; or the NetCon's weight vector ``(w, a, ...)`` for
            a synapse whose NET_RECEIVE takes more arguments (NEURON's ``nc.weight[i]``).
        delay : float
            [ms], finite.

        Returns
        -------
        int
            The connection's index (creation order: the order NetCons from one source act
            in at equal times).
        """
        i = len(self._src)
        for what, g in (("source", source), ("target", target)):
            if isinstance(g, bool) or not isinstance(g, Integral) or g < 0:
                raise ValueError(f"connection {i}: {what} must be a gid >= 0, got {g!r}")
        if isinstance(synapse, bool) or not isinstance(synapse, (str, Integral)):
            raise TypeError(f"connection {i}: synapse must be a name ('ExpSyn[0]') or an "
                            f"index, got {synapse!r}")
        self._src.append(int(source))
        self._tgt.append(int(target))
        self._syn.append(synapse if isinstance(synapse, str) else int(synapse))
        if isinstance(weight, (list, tuple, np.ndarray)):
            vector = tuple(finite_number(w, f"connection {i}: weight[{k}]")
                           for k, w in enumerate(np.ravel(np.asarray(weight, dtype=object))))
            if not vector:
                raise ValueError(f"connection {i}: the weight vector is empty")
        else:
            vector = (finite_number(weight, f"connection {i}: weight"),)
        self._weight.append(vector[0])
        if len(vector) > 1:
            self._weight_vectors[i] = vector
        self._delay.append(finite_number(delay, f"connection {i}: delay [ms]"))
        return i

    @property
    def connections(self) -> dict:
        """The connections as arrays: ``source``, ``target`` (int64 gids), ``synapse``
        (list), ``weight`` [µS] (entry 0 of a weight vector), ``delay`` [ms], and
        ``weight_vectors`` (connection index -> the whole weight vector, for the
        connections given one)."""
        return {"source": np.array(self._src, dtype=np.int64),
                "target": np.array(self._tgt, dtype=np.int64),
                "synapse": list(self._syn),
                "weight": np.array(self._weight, dtype=np.float64),
                "delay": np.array(self._delay, dtype=np.float64),
                "weight_vectors": dict(self._weight_vectors)}

    def min_delay(self) -> float:
        """The smallest connection delay [ms]; ``inf`` without connections."""
        return min(self._delay, default=math.inf)

    # ---- recordings -------------------------------------------------------------------
    def record(self, variable: str, gid: int, location: str = "soma[0](0.5)") -> str:
        """Record ``variable`` (``"v"``, ``"m_hh"``...) of cell ``gid`` at ``location``
        at every step; returns the key of the trace, ``"v@<gid>:<location>"``."""
        from ..model.cell import format_location, parse_location

        gid = self._check_gid(gid, "gid")
        if self._kinds[gid] != "cell":
            raise ValueError(f"gid {gid} is a {self._kinds[gid]}; only cells have traces")
        sec, x = parse_location(location)
        key = f"{variable}@{gid}:{format_location(sec, x)}"
        self._records.append((variable, gid, format_location(sec, x)))
        return key

    @property
    def records(self) -> list[tuple[str, int, str]]:
        """``(variable, gid, location)`` of every recording, in the order asked."""
        return list(self._records)

    # ---- before a run -----------------------------------------------------------------
    def check(self, dt: float) -> None:
        """Refuse a connection from or to an unknown gid, to a generator, or with a delay
        below ``dt`` [ms] (:class:`~.distribution.NetworkCheckError`)."""
        from .distribution import NetworkCheckError

        conns = self.connections
        check_network(np.arange(self.n_gids), {"source": conns["source"],
                                               "target": conns["target"],
                                               "delay": conns["delay"]}, dt)
        for i, g in enumerate(self._tgt):
            if self._kinds[g] in ("NetStim", "VecStim"):
                raise NetworkCheckError(f"connection {i}: target gid {g} is a "
                                        f"{self._kinds[g]}; NetCons end on a cell's synapse "
                                        "or an artificial cell")
            if self._kinds[g] != "cell" and not _receives(self._kinds[g]):
                raise NetworkCheckError(f"connection {i}: target gid {g} is an artificial "
                                        f"cell {self._kinds[g]} without a NET_RECEIVE")

    def distribute(self, n_ranks: int) -> Distribution:
        """Which rank owns each gid.

        Cells: greedy LPT by compartments (:func:`~.distribution.distribute`). A
        generator goes to the rank of the target of its first connection (rank 0 when it
        has none), so that a stimulus and its cell share a rank. The loads count cells
        only.
        """
        counts = np.zeros(self.n_gids, dtype=np.int64)
        cells = self.cell_gids
        counts[cells] = self.compartments()
        dist = distribute(counts, n_ranks)
        rank = dist.rank_of_cell.copy()
        first_target: dict[int, int] = {}
        for s, t in zip(self._src, self._tgt):
            first_target.setdefault(s, t)
        for g in self._generators:
            t = first_target.get(g)
            rank[g] = rank[t] if t is not None and t < self.n_gids and \
                self._kinds[t] == "cell" else 0
        return Distribution(rank, dist.loads)

    def _check_gid(self, gid, what: str) -> int:
        if isinstance(gid, bool) or not isinstance(gid, Integral):
            raise TypeError(f"{what} must be an integer gid, got {gid!r}")
        if not 0 <= gid < self.n_gids:
            raise ValueError(f"{what} {gid} is not a gid of the network (0 .. "
                             f"{self.n_gids - 1})")
        return int(gid)


def _receives(kind: str) -> bool:
    """Whether the mechanism ``kind`` has a NET_RECEIVE block."""
    from .. import mechanisms

    return bool(mechanisms.get(kind).net_receive)


def _gid_list(gids) -> list:
    if isinstance(gids, (Integral, np.integer)) and not isinstance(gids, bool):
        return [int(gids)]
    if isinstance(gids, (Sequence, range, np.ndarray)):
        return list(gids)
    raise TypeError(f"gids must be an int or a sequence of ints, got {type(gids).__name__}")

