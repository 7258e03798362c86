"""Ions as NEURON 9.0.2 keeps them.

NEURON gives each segment one value per ion of the reversal potential (``ena``), the inside
and outside concentrations (``nai``, ``nao``, in mM) and the current (``ina``, the sum of
what the mechanisms there write); each mechanism instance copies in what it reads at the
start of its blocks and stores back what it writes (``eion.cpp``, nocmodl's C). The engine
gives each instance its own copy too, with NEURON's defaults (``membdef.h``), and keeps an
ion in one of two ways:

- **Constant** (no mechanism writes a concentration of the ion or reads its current): the
  copies are all there is. One rule of NEURON's reaches across mechanisms (``nrn_promote``
  and ``ion_init``): where any mechanism of a segment reads the ion's concentration, the
  reversal potential is computed at ``finitialize`` from the concentrations by
  :func:`nernst`, and every mechanism there that reads it sees that value.
  :func:`initialize_reversals` applies it.
- **Per node** (:func:`kept_per_node`): one array per ion, :data:`ION_ROWS` × nodes, as
  NEURON's ion mechanism holds it. :func:`ion_arrays` sets it up as ``ion_alloc``,
  ``nrn_promote`` and ``ion_init`` do; the generated kernels then do what NEURON's step does:
  at the start of each step's currents the ion's current is zeroed and, on segments where
  a concentration is written, the reversal potential recomputed (``ion_cur``); each
  mechanism loads its copies from the node before its current, state and INITIAL blocks,
  adds the currents it writes to the node's after its current block (a point process's
  as ``i·1e2/area``), and stores the concentrations it writes after its state and INITIAL
  blocks, the latter followed by :func:`nernst` where NEURON's ``nrn_wrote_conc`` does so.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["CONCENTRATIONS", "ION_DEFAULTS", "ION_ROWS", "VALENCES", "concentration_names",
           "default", "initialize_reversals", "ion_arrays", "kept_per_node", "nernst"]

#: NEURON's reversal potentials where no mechanism of the segment reads the ion's
#: concentrations (membdef.h): ena = 115 + (-65), ek = -12 + (-65), and eca as NEURON 9.0.2
#: prints it; any other ion's is 0.
ION_DEFAULTS = {"ena": 50.0, "ek": -77.0, "eca": 132.4579341637009}
#: Inside and outside concentrations [mM] (membdef.h); any other ion's are 1 and 1.
CONCENTRATIONS = {"na": (10.0, 140.0), "k": (54.4, 2.5), "ca": (5e-5, 2.0)}
#: Charges of NEURON's own ions; any other ion's comes from its ``VALENCE``.
VALENCES = {"na": 1.0, "k": 1.0, "ca": 2.0}
#: NEURON 9.0.2's ``_faraday_codata2018`` [C/mol] and ``_gasconstant_codata2018``
#: [J/(K mol)] as its nrnunits computes them from CODATA 2018's exact constants (e·N_A,
#: k·N_A); hoc's ``FARADAY`` and ``R`` print the same doubles.
FARADAY = 96485.33212331001
GAS_CONSTANT = 8.31446261815324
#: Rows of the per-node array of an ion kept per node: the reversal potential [mV], the
#: inside and outside concentrations [mM], the current [mA/cm2], NEURON's style bits
#: ``eadvance`` (recompute the reversal potential every step) and ``einit`` (at
#: ``finitialize`` and after an INITIAL writes a concentration) as 1.0 or 0.0, and the
#: node's area [um2] (a point process's current enters as ``i·1e2/area``).
ION_ROWS = ("e", "ci", "co", "cur", "eadvance", "einit", "area")


def concentration_names(ion: str) -> tuple[str, str]:
    """``("nai", "nao")`` for ``"na"``."""
    return f"{ion}i", f"{ion}o"


def default(name: str, ion: str) -> float:
    """NEURON's default of ion variable ``name`` (``ena``, ``nai``, ``nao``) of ``ion``."""
    inside, outside = concentration_names(ion)
    if name in (inside, outside):
        c = CONCENTRATIONS.get(ion, (1.0, 1.0))
        return c[0] if name == inside else c[1]
    return ION_DEFAULTS.get(name, 0.0)


def nernst(ci: float, co: float, z: float, celsius: float) -> float:
    """NEURON's ``nrn_nernst``: the reversal potential [mV] of concentrations ``ci``, ``co``
    [mM] and charge ``z`` at ``celsius``, in its order of operations (1e6 and -1e6 mV for a
    concentration that is not positive)."""
    if z == 0:
        return 0.0
    if ci <= 0.0:
        return 1e6
    if co <= 0.0:
        return -1e6
    ktf = 1000.0 * GAS_CONSTANT * (celsius + 273.15) / FARADAY
    return ktf / z * math.log(co / ci)


def _valences(mechs) -> dict:
    valence: dict[str, float] = {}
    for m in mechs:
        for ion in m.ions:
            if ion.valence is not None:
                valence.setdefault(ion.name, float(ion.valence))
    return valence


def _charge(name: str, valence: dict) -> float:
    z = VALENCES.get(name, valence.get(name))
    if z is None:
        raise ValueError(f"ion {name}: no mechanism gives its VALENCE, which its "
                         "reversal potential needs (NEURON's USEION ... VALENCE z)")
    return float(z)


def kept_per_node(mechs) -> dict:
    """The ions of ``mechs`` that the engine keeps per node (some mechanism writes a
    concentration or reads the current), in order of first use -> charge."""
    valence = _valences(mechs)
    uses = [ion for m in mechs for ion in m.ions]
    out: dict[str, float] = {}
    for ion in uses:
        conc = set(concentration_names(ion.name))
        if ion.name in out or not (set(ion.write) & conc or f"i{ion.name}" in ion.read):
            continue
        if any((set(u.read) | set(u.write)) & conc for u in uses if u.name == ion.name):
            out[ion.name] = _charge(ion.name, valence)
        else:       # no concentration in use: the charge is never needed
            out[ion.name] = float(VALENCES.get(ion.name, valence.get(ion.name, 0.0)))
    return out


def ion_arrays(mechs, nodes: dict, data: dict, area: np.ndarray,
               celsius: float) -> dict:
    """The per-node arrays (:data:`ION_ROWS` × nodes) of the ions :func:`kept_per_node`,
    at ``finitialize`` before the INITIAL blocks: NEURON's defaults, the reversal
    potential from the instances that read it (the last in mechanism order on a node),
    the style bits of ``nrn_promote`` and the values ``ion_init`` sets (concentrations to
    their defaults, then the reversal potential by :func:`nernst` where ``einit``).

    ``nodes``: mechanism name -> node of each instance; ``data``: mechanism name ->
    fields × instances; ``area``: each node's area [um2]."""
    out = {}
    n = area.size
    for name, z in kept_per_node(mechs).items():
        ci_name, co_name = concentration_names(name)
        arr = np.zeros((len(ION_ROWS), n))
        arr[0] = default(f"e{name}", name)
        arr[1] = default(ci_name, name)
        arr[2] = default(co_name, name)
        arr[6] = area
        conc = np.zeros(n, dtype=np.int64)     # nrn_promote's conc: 0, 1 read, 3 written
        for m in mechs:
            for ion in m.ions:
                if ion.name != name or not nodes[m.name].size:
                    continue
                at = nodes[m.name]
                if set(ion.write) & {ci_name, co_name}:
                    conc[at] = 3
                elif set(ion.read) & {ci_name, co_name}:
                    conc[at] = np.maximum(conc[at], 1)
                if f"e{name}" in ion.read:
                    arr[0, at] = data[m.name][m.field_names.index(f"e{name}")]
        arr[4] = conc == 3                      # eadvance
        arr[5] = conc > 0                       # einit
        on = np.flatnonzero(conc > 0)
        if on.size:
            # the C library's log once per distinct pair of concentrations (NumPy's log
            # may differ from it in the last bit)
            ci, co = arr[1, on], arr[2, on]
            if (ci == ci[0]).all() and (co == co[0]).all():     # the defaults, usually
                arr[0, on] = nernst(ci[0], co[0], z, celsius)
            else:
                pairs, where = np.unique(arr[1:3, on], axis=1, return_inverse=True)
                e = np.array([nernst(a, b, z, celsius) for a, b in pairs.T])
                arr[0, on] = e[where.ravel()]
        out[name] = arr
    return out


def initialize_reversals(mechs, nodes: dict, data: dict, n_nodes: int,
                         celsius: float) -> None:
    """NEURON's ``ion_init`` over a layout for the ions not :func:`kept_per_node`: for each
    ion whose concentration some instance reads, the reversal potential read by every
    instance on the nodes of those readers becomes :func:`nernst` of the ion's
    concentrations, in ``data`` (mechanism name -> fields x instances) in place.
    ``nodes``: mechanism name -> node of each instance."""
    readers: dict[str, np.ndarray] = {}
    valence = _valences(mechs)
    kept = kept_per_node(mechs)
    for m in mechs:
        for ion in m.ions:
            if ion.name in kept:
                continue
            if set(ion.read) & set(concentration_names(ion.name)) and nodes[m.name].size:
                on = readers.setdefault(ion.name, np.zeros(n_nodes, dtype=bool))
                on[nodes[m.name]] = True
    for name, on in readers.items():
        z = _charge(name, valence)
        ci, co = (default(c, name) for c in concentration_names(name))
        e = nernst(ci, co, z, celsius)
        for m in mechs:
            for ion in m.ions:
                if ion.name == name and f"e{name}" in ion.read:
                    k = m.field_names.index(f"e{name}")
                    data[m.name][k, on[nodes[m.name]]] = e
