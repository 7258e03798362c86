"""Ions as NEURON 9.0.2 keeps them where no mechanism writes a concentration.

NEURON gives each segment one value per ion of the reversal potential (``ena``), the inside
and outside concentrations (``nai``, ``nao``, in mM) and the current; the engine gives each
mechanism instance its own copy of what it reads, with NEURON's defaults (``membdef.h``).
Concentrations stay constant, as in NEURON when no mechanism of the segment writes them.

One rule of NEURON's reaches across mechanisms (``nrn_promote`` and ``ion_init`` in
``eion.cpp``): where any mechanism of a segment reads an ion's concentration, the ion's
reversal potential is computed at ``finitialize`` from the concentrations by
:func:`nernst`, and every mechanism there that reads the reversal potential sees that value,
not its default or a value set on the mechanism. :func:`initialize_reversals` applies it.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["CONCENTRATIONS", "ION_DEFAULTS", "VALENCES", "concentration_names",
           "default", "initialize_reversals", "nernst"]

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


def initialize_reversals(mechs, nodes: dict, data: dict, n_nodes: int,
                         celsius: float) -> None:
    """NEURON's ``ion_init`` over a layout: for each ion whose concentration some instance
    reads, the reversal potential read by every instance on the nodes of those readers
    becomes :func:`nernst` of the ion's concentrations, in ``data`` (mechanism name ->
    fields x instances) in place. ``nodes``: mechanism name -> node of each instance."""
    readers: dict[str, np.ndarray] = {}
    valence: dict[str, float] = {}
    for m in mechs:
        for ion in m.ions:
            if ion.valence is not None:
                valence.setdefault(ion.name, float(ion.valence))
            if set(ion.read) & set(concentration_names(ion.name)) and nodes[m.name].size:
                on = readers.setdefault(ion.name, np.zeros(n_nodes, dtype=bool))
                on[nodes[m.name]] = True
    for name, on in readers.items():
        z = VALENCES.get(name, valence.get(name))
        if z is None:
            raise ValueError(f"ion {name}: no mechanism gives its VALENCE, which its "
                             "reversal potential needs (NEURON's USEION ... VALENCE z)")
        ci, co = (default(c, name) for c in concentration_names(name))
        e = nernst(ci, co, z, celsius)
        for m in mechs:
            for ion in m.ions:
                if ion.name == name and f"e{name}" in ion.read:
                    k = m.field_names.index(f"e{name}")
                    data[m.name][k, on[nodes[m.name]]] = e
