"""The models of the benchmarks built in NEURON, the way a NEURON user builds them.

A cell is read with Import3d (``instantiate(None)``, the hoc path that hinesbatch's geometry
reproduces), given ``Ra`` and ``cm``, then segmented with NEURON's d_lambda rule
(``geom_nseg`` of fixnseg.hoc at 100 Hz) or a fixed nseg, exactly as
:class:`hinesbatch.Cell` with the same ``ra``, ``cm`` and ``d_lambda`` does::

    model = HHModel(path, ra=100, d_lambda=0.1, usetable=True)
    seconds = model.run(100.0)     # finitialize + ParallelContext.psolve, timed
    model.trace(), model.spikes()  # v at soma[0](0.5) every step [mV], spike times [ms]
    model.close()

NEURON keeps global state: building a model deletes every section NEURON holds, so only the
last model built exists.
"""
from __future__ import annotations

import os
import time

import numpy as np

__all__ = ["HHProtocol", "HHModel", "build_cell", "delete_all_sections", "load_neuron",
           "neuron_script"]

# NEURON's fixnseg.hoc (docs/guide/using_the_d_lambda_rule.rst), with stdlib's lambda_f
_GEOM_NSEG_HOC = """
proc hinesbatch_geom_nseg() {
    forall { nseg = int((L/($1*lambda_f($2))+0.9)/2)*2 + 1 }
}
"""


class HHProtocol:
    """The benchmark's protocol: hh everywhere, an IClamp at ``soma[0](0.5)``.

    Attributes are NEURON's units: ``ra`` [Ω·cm], ``cm`` [µF/cm²], ``iclamp`` (amp [nA],
    delay [ms], dur [ms]), ``dt`` [ms], ``v_init`` [mV], ``threshold`` [mV] of the spike
    detector at the soma.
    """

    def __init__(self, *, d_lambda: float = 0.1, ra: float = 100.0, cm: float = 1.0,
                 iclamp: tuple[float, float, float] = (1.0, 5.0, 50.0), dt: float = 0.025,
                 v_init: float = -65.0, threshold: float = 10.0):
        self.d_lambda, self.ra, self.cm = d_lambda, ra, cm
        self.iclamp, self.dt, self.v_init, self.threshold = tuple(iclamp), dt, v_init, threshold

    def describe(self) -> str:
        amp, delay, dur = self.iclamp
        return (f"hh everywhere (NEURON's defaults), d_lambda {self.d_lambda} at 100 Hz, Ra "
                f"{self.ra} ohm*cm, cm {self.cm} uF/cm2, IClamp {amp} nA {delay}-{delay + dur} "
                f"ms at soma[0](0.5), dt {self.dt} ms, v_init {self.v_init} mV, spikes at "
                f"soma[0](0.5) above {self.threshold} mV")


_loaded = False


def load_neuron():
    """Import NEURON and load stdlib.hoc, stdrun.hoc, import3d.hoc and the d_lambda rule (once)."""
    global _loaded
    from neuron import h

    if not _loaded:
        for name in ("stdlib.hoc", "stdrun.hoc", "import3d.hoc"):
            h.load_file(name)
        h(_GEOM_NSEG_HOC)
        _loaded = True
    return h


def delete_all_sections() -> None:
    """Delete every section NEURON holds."""
    h = load_neuron()
    for sec in list(h.allsec()):
        h.delete_section(sec=sec)


def build_cell(path: str | os.PathLike, *, ra: float = 35.4, cm: float = 1.0,
               d_lambda: float | None = None, nseg: int | None = 1, freq: float = 100.0):
    """Instantiate ``path`` with Import3d; set ``Ra``, ``cm``, then nseg.

    Returns ``(h, sections)``: sections by NEURON's name (``"soma[0]"``, ``"dend[12]"``...)
    in ``h.allsec()`` order. ``d_lambda`` (when given) sets nseg by NEURON's d_lambda rule at
    ``freq`` [Hz], after ``Ra`` and ``cm``, as a NEURON user's script does.
    """
    h = load_neuron()
    delete_all_sections()
    reader = h.Import3d_SWC_read()
    reader.quiet = 1
    reader.input(os.fspath(path))
    h.Import3d_GUI(reader, False).instantiate(None)
    sections = {sec.name(): sec for sec in h.allsec()}
    for sec in sections.values():
        sec.Ra, sec.cm = ra, cm
    if d_lambda is not None:
        h.hinesbatch_geom_nseg(d_lambda, freq)
    elif nseg is not None:
        for sec in sections.values():
            sec.nseg = nseg
    return h, sections


class HHModel:
    """One cell with hh everywhere and the protocol's clamp, in NEURON.

    Parameters
    ----------
    path : SWC file
    protocol : HHProtocol
    usetable : bool
        NEURON's ``usetable_hh`` (True: rates from hh's TABLE, NEURON's default).
    nseg : int, optional
        Segments of every section, instead of the protocol's d_lambda rule.

    Attributes
    ----------
    nseg : dict[str, int]
        Segments per section, by NEURON's section name.
    """

    def __init__(self, path, protocol: HHProtocol, *, usetable: bool = True,
                 nseg: int | None = None):
        p = self.protocol = protocol
        h, sections = build_cell(path, ra=p.ra, cm=p.cm,
                                 d_lambda=p.d_lambda if nseg is None else None, nseg=nseg)
        if "soma[0]" not in sections:
            raise ValueError(f"{path}: NEURON built no soma[0]; the protocol clamps soma[0](0.5)")
        self._h = h
        for sec in sections.values():
            sec.insert("hh")
        self.nseg = {name: int(sec.nseg) for name, sec in sections.items()}
        soma = sections["soma[0]"]
        self._stim = h.IClamp(soma(0.5))
        self._stim.amp, self._stim.delay, self._stim.dur = p.iclamp
        self._v = h.Vector().record(soma(0.5)._ref_v)
        self._netcon = h.NetCon(soma(0.5)._ref_v, None, sec=soma)
        self._netcon.threshold = p.threshold
        self._spikes = h.Vector()
        self._netcon.record(self._spikes)
        h.usetable_hh = 1 if usetable else 0
        h.cvode_active(0)
        h.dt, h.steps_per_ms, h.secondorder = p.dt, 1.0 / p.dt, 0
        self._pc = h.ParallelContext()
        self._pc.set_maxstep(10)

    def run(self, tstop: float) -> float:
        """``finitialize(v_init)`` then ``ParallelContext.psolve(tstop)`` (NEURON's stepping
        loop in C); returns the seconds of ``psolve`` alone."""
        self._h.finitialize(self.protocol.v_init)
        start = time.perf_counter()
        self._pc.psolve(tstop)
        return time.perf_counter() - start

    def trace(self) -> np.ndarray:
        """v [mV] at soma[0](0.5) at every step of the last run, t = 0 first."""
        return np.array(self._v)

    def spikes(self) -> np.ndarray:
        """Spike times [ms] of the last run (NetCon.record at soma[0](0.5))."""
        return np.array(self._spikes)

    def close(self) -> None:
        """Free the model's NEURON objects and sections."""
        self._netcon = self._stim = self._v = self._spikes = None
        delete_all_sections()


def neuron_script(path, protocol: HHProtocol, *, tstop: float, out) -> str:
    """A stand-alone NEURON script of the protocol that saves v at soma[0](0.5) to ``out``
    (``.npz``): what a NEURON user runs for the same result as ``hinesbatch simulate
    --mechanism hh``."""
    p = protocol
    amp, delay, dur = p.iclamp
    return f"""\
import numpy as np
from neuron import h
h.load_file("stdrun.hoc")
h.load_file("import3d.hoc")
h('''{_GEOM_NSEG_HOC}''')
reader = h.Import3d_SWC_read()
reader.quiet = 1
reader.input({os.fspath(path)!r})
h.Import3d_GUI(reader, False).instantiate(None)
for sec in h.allsec():
    sec.Ra, sec.cm = {p.ra!r}, {p.cm!r}
h.hinesbatch_geom_nseg({p.d_lambda!r}, 100)
for sec in h.allsec():
    sec.insert("hh")
soma = h.soma[0]
stim = h.IClamp(soma(0.5))
stim.amp, stim.delay, stim.dur = {amp!r}, {delay!r}, {dur!r}
t = h.Vector().record(h._ref_t)
v = h.Vector().record(soma(0.5)._ref_v)
h.dt, h.steps_per_ms = {p.dt!r}, {1.0 / p.dt!r}
h.finitialize({p.v_init!r})
h.continuerun({float(tstop)!r})
np.savez({os.fspath(out)!r}, t=np.array(t), v=np.array(v))
"""
