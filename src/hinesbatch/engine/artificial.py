"""Artificial cells: instances of an NMODL ``ARTIFICIAL_CELL``, run on the host event queue.

An artificial cell (NEURON's ``h.NetStimm()`` for a file declaring ``ARTIFICIAL_CELL
NetStimm``) belongs to no cell and has no location. It has a parameter set per instance,
and lives by its events: INITIAL at ``finitialize`` (its ``net_send`` self-events
queued), NET_RECEIVE for each NetCon event and self-event it is sent, and ``net_event``
spikes sent through the NetCons leaving it and recorded by ``record_spikes``. Everything
runs on the host between the kernels' epochs, in the run's one event queue, so every
backend (``serial``, ``multicore``, ``gpu``) runs the same events in the same order.

Compiled code
    The INITIAL and NET_RECEIVE blocks of each mechanism (and the FUNCTIONs and
    PROCEDUREs they call) are generated from the description as for mechanisms on cells
    (:class:`~hinesbatch.mechanisms.codegen.MechanismCode`) into one module per set of
    mechanisms, cached by content (:func:`~.kernels.load_source`).

Storage
    Each mechanism's instances are one float64 array ``fields × instances`` (in
    :attr:`~hinesbatch.mechanisms.Mechanism.fields` order), instance ``j`` the ``j``-th
    created of that mechanism.

NEURON's order
    INITIAL blocks run by mechanism type order (:attr:`Mechanism.order`, the order
    nrnivmodl registers the files in) interleaved with the mechanisms on cells, instances in
    creation order; so do the random draws they make and the self-events they queue.

Recording a variable (NEURON's ``Vector.record(art._ref_m)``)
    Its value changes only at events, so the engine keeps the value after INITIAL and
    after each event (with the event's time ``te``) and samples that history afterwards
    with NEURON's rule (:func:`sampled`): the sample at ``t_0`` holds the events with
    ``te <= 0``; the one at ``t_{n+1}`` those with ``te <= t_n + dt/2``, delivered at the
    start of step ``n`` or before (NEURON records at the end of a step before it delivers
    the events due by then).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real

import numpy as np

from .. import mechanisms as _mechanisms
from ..mechanisms.codegen import MechanismCode, count_net_sends, hoc_exp_source
from ..mechanisms.scoprand import numba_source as scoprand_source

__all__ = ["ArtificialCell", "ArtificialCells", "ArtificialModule", "sampled"]


@dataclass(eq=False)
class ArtificialCell:
    """One artificial cell: an instance of an ``ARTIFICIAL_CELL`` mechanism.

    Attributes
    ----------
    kind : str
        Mechanism name (``"NetStimm"``).
    params : dict
        Values set at creation (NEURON's names: PARAMETERs and ASSIGNED variables,
        :func:`check_params`); the others keep the file's defaults.
    kind_index : int
        Creation index among the artificial cells of this kind.
    source : SpikeSource
        Its spike source (``net_event``), for ``connect`` and ``record_spikes``.
    """

    kind: str
    params: dict
    kind_index: int
    source: object = None

    @property
    def name(self) -> str:
        """``"NetStimm[0]"``: the kind and its creation index."""
        return f"{self.kind}[{self.kind_index}]"

    def __repr__(self) -> str:
        ps = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"ArtificialCell({self.name}{', ' if ps else ''}{ps})"


def artificial_mechanism(kind: str):
    """The registered mechanism ``kind``, which must be a translated ARTIFICIAL_CELL.

    Raises
    ------
    ValueError
        Unknown name, a mechanism of another kind, or the built-in NetStim/VecStim (their
        own methods make them).
    """
    mech = _mechanisms.get(kind)
    if mech.name in ("NetStim", "VecStim"):
        raise ValueError(f"{mech.name} is built in: use net_stim(...) or vec_stim(...)")
    if mech.kind != "artificial":
        raise ValueError(f"{mech.name} is a {mech.kind} mechanism, not an ARTIFICIAL_CELL: "
                         + ("place it on a cell with cell.place(...)" if mech.kind == "point"
                            else "insert it into a cell with cell.insert(...)"))
    return mech


def settable(mech) -> tuple:
    """Names an artificial cell's instance may be given: its PARAMETERs and ASSIGNED
    variables. NEURON's hoc sets any RANGE variable of an ``h.IntFire()``-like instance
    before ``finitialize``, and integrate-and-fire files often keep their constants
    (``taum``, ``Cm``) in RANGE ASSIGNED variables; INITIAL may overwrite them, as in
    NEURON."""
    return tuple(mech.parameter_names) + tuple(a.name for a in mech.assigned)


def check_params(mech, params: dict) -> dict:
    """``params`` of an instance of ``mech`` by NEURON's names (:func:`settable`), each a
    finite number.

    Raises
    ------
    ValueError
        An unknown name (listing the valid ones) or a value that is not a finite number.
    """
    names = settable(mech)
    values = {}
    for k, v in params.items():
        key = mech.aliases.get(k, k)
        if key not in names:
            raise ValueError(f"{mech.name} has no parameter or ASSIGNED variable {k!r}; "
                             f"those: {', '.join(names) or '(none)'}")
        if isinstance(v, bool) or not isinstance(v, Real) or not math.isfinite(v):
            raise ValueError(f"{mech.name}.{k} must be a finite number, got {v!r}")
        values[key] = float(v)
    return values


class ArtificialModule:
    """The generated INITIAL and NET_RECEIVE functions of artificial mechanisms.

    Has what :class:`~.receive.Receiver` reads of a kernel module: ``module`` and
    ``codes`` (one :class:`~hinesbatch.mechanisms.codegen.MechanismCode` per mechanism).
    """

    def __init__(self, mechs: list):
        from .kernels import load_source

        self.codes = [MechanismCode(m, tables=False) for m in mechs]
        self.stream = any(c.stream for c in self.codes)
        header = ("# Generated by hinesbatch.engine.artificial; do not edit.\n"
                  "import math\n\nimport numpy as np\nfrom numba import njit\n\n\n")
        parts = [header, hoc_exp_source(False)]
        if self.stream:
            parts.append("\n\n" + scoprand_source())
        parts += ["\n\n" + c.module_functions() for c in self.codes]
        self.module = load_source("".join(parts) + "\n")


class ArtificialCells:
    """The artificial cells of a simulation, in creation order, and their run state."""

    def __init__(self):
        self.cells: list[ArtificialCell] = []
        self.data: dict = {}
        self.module: ArtificialModule | None = None

    def __len__(self) -> int:
        return len(self.cells)

    def add(self, kind: str, params: dict) -> ArtificialCell:
        """A new instance of the ARTIFICIAL_CELL ``kind`` with ``params``."""
        mech = artificial_mechanism(kind)
        values = check_params(mech, params)
        same = sum(1 for c in self.cells if c.kind == mech.name)
        cell = ArtificialCell(mech.name, values, same)
        self.cells.append(cell)
        return cell

    def instance(self, cell: ArtificialCell) -> tuple:
        """``(mechanism name, instance)`` of ``cell``."""
        return cell.kind, cell.kind_index

    def mechs(self) -> list:
        """The mechanisms with instances, in type order."""
        names = dict.fromkeys(c.kind for c in self.cells)
        return sorted((_mechanisms.get(n) for n in names), key=lambda m: m.order)

    def build(self) -> None:
        """The instances' arrays at the files' defaults and their parameters, and the
        compiled module (``finitialize``, before INITIAL)."""
        mechs = self.mechs()
        self.data = {}
        for mech in mechs:
            mine = [c for c in self.cells if c.kind == mech.name]
            data = np.array([[f.default for f in mech.fields]] * len(mine),
                            dtype=np.float64).T.copy()
            names = mech.field_names
            for j, c in enumerate(mine):
                for k, v in c.params.items():
                    data[names.index(k), j] = v
            self.data[mech.name] = data
        self.module = ArtificialModule(mechs) if mechs else None

    def initial(self, code, dt: float, celsius: float, stream) -> np.ndarray | None:
        """Run INITIAL of every instance of ``code``'s mechanism (``t`` = 0); the
        self-events it sent, rows ``instance, te, flag`` (None without ``net_send``)."""
        m = code.mech.name
        data = self.data[m]
        n = data.shape[1]
        rows = [np.empty((n * code.initial_sends, 3))] if code.initial_sends else []
        rs = [stream] if code.stream else []
        # no membrane: no node to read (the lowering refuses reads of v)
        sent = getattr(self.module.module, f"_initial_{m}")(
            data, np.zeros(n, dtype=np.int64), np.zeros(1), 0.0, dt, celsius, *rs, *rows)
        return rows[0][:sent] if rows else None

    def codes(self) -> list:
        """The MechanismCode of each mechanism with instances (empty before
        :meth:`build`)."""
        return self.module.codes if self.module is not None else []


def sampled(te, values, tgrid, dt: float, every: int = 1) -> np.ndarray:
    """A variable's samples from its history (module docstring).

    Parameters
    ----------
    te : (k,) float64
        Times [ms] of the changes, non-decreasing; the first is ``-inf`` (the value after
        INITIAL).
    values : (k,) float64
        The value after each change.
    tgrid : (N + 1,) float64
        The run's accumulated times [ms].
    dt : float
        [ms].
    every : int
        Sample every ``every`` steps (t = 0 included).

    Returns
    -------
    (N // every + 1,) float64
    """
    steps = np.arange(0, tgrid.size, every)
    limits = np.where(steps == 0, 0.0, tgrid[np.maximum(steps - 1, 0)] + 0.5 * dt)
    last = np.searchsorted(np.asarray(te), limits, side="right") - 1
    return np.asarray(values, dtype=np.float64)[last]


def is_spike_source(mech) -> bool:
    """Whether ``mech``'s NET_RECEIVE calls ``net_event``."""
    return bool(count_net_sends(mech.net_receive, ("net_event",)))
