"""NEURON's POINTERs on the CPU engine: where each instance's POINTERs read.

A mechanism's ``POINTER`` (:attr:`hinesbatch.mechanisms.Mechanism.pointers`) is set per
instance with :meth:`hinesbatch.Simulation.set_pointer`. Before a run the settings become,
per mechanism whose blocks read a POINTER, the int64 array ``_PT_<m>`` of the generated
kernels (:mod:`.kernels`): for the ``k``-th POINTER of instance ``j``, rows ``3k, 3k + 1,
3k + 2`` of column ``j`` hold the target as the kernels' ``_value`` reads it (the
mechanism's place in the layout or -1 for the membrane potential, the field, the instance
or node). Worked example: a gap junction ``gap`` with ``POINTER vgap`` on the somas of
cells 0 and 1 (nodes 0 and 5), each reading the other's ``v``::

    _PT_gap = [[-1, -1],      # m: the membrane potential
               [ 0,  0],      # f: (unused for v)
               [ 5,  0]]      # i: the node read by instance 0, by instance 1

Cells that a POINTER links (the instance in one, the target in another) are returned as
pairs, which the engine keeps in one chunk (:func:`.kernels.join_linked`).
"""
from __future__ import annotations

import numpy as np

from ..sim.errors import PointerError

__all__ = ["UNSET", "pointer_targets", "refuse_on_gpu"]

#: ``m`` of a POINTER not set (refused before a run where the blocks read it).
UNSET = -2


def pointer_targets(codes, lay, settings: dict, resolve) -> tuple[dict, list]:
    """The ``_PT_<m>`` arrays of a run and the pairs of cells the POINTERs link.

    Parameters
    ----------
    codes : list of MechanismCode
        The run's mechanisms (``pointers``: the POINTERs each one's blocks read).
    lay : Layout
        The run's layout.
    settings : dict
        ``(owner key, POINTER) -> (owner gid, label, what, where, variable)``, as
        :meth:`hinesbatch.Simulation.set_pointer` keeps them; the owner key is
        ``("pp", point process)`` or ``("range", gid, section, x, mechanism)``.
    resolve : callable
        ``resolve(lay, what, where, variable) -> (m, f, i, gid)``: the target in the
        layout (raises ValueError where it is not there).

    Returns
    -------
    arrays : dict of str to ndarray
        Mechanism name -> ``_PT_<m>`` (int64, ``3·len(pointers) × instances``).
    links : list of (int, int)
        ``(owner cell, target cell)`` of every POINTER reading another cell's value.

    Raises
    ------
    PointerError
        A density mechanism's owner is not inserted at its location, a target is not in
        the model, or a POINTER the blocks read is not set for an instance (the message
        names the mechanism, the cell and the location).
    """
    arrays, links = {}, []
    for code in codes:
        if code.pointers:
            m = code.mech.name
            arrays[m] = np.full((3 * len(code.mech.pointers), lay.nodes[m].size), UNSET,
                                dtype=np.int64)
    for (key, name), (gid, label, what, where, var) in settings.items():
        if key[0] == "pp":
            m, j = lay.pp_index[id(key[1])]
        else:
            _, _, sec, x, m = key
            cl = lay.cells[gid]
            j = lay.instance_at(m, cl.global_node(cl.geometry.node(sec, x)))
            if j < 0:
                raise PointerError(f"{label}: {m} is not inserted there, so its POINTER "
                                   f"{name} cannot be set", mechanism=m, pointer=name)
        if m not in arrays:         # a POINTER no block reads
            continue
        try:
            target = resolve(lay, what, where, var)
        except ValueError as err:
            raise PointerError(f"{label}: POINTER {name}: its target: {err}", mechanism=m,
                               pointer=name) from None
        k = 3 * _mechanism(codes, m).pointers.index(name)
        arrays[m][k:k + 3, j] = target[:3]
        if target[3] != gid:
            links.append((gid, target[3]))
    for code in codes:
        for name in code.pointers:
            m = code.mech.name
            k = 3 * code.mech.pointers.index(name)
            unset = np.flatnonzero(arrays[m][k] == UNSET)
            if unset.size:
                j = int(unset[0])
                gid = int(np.searchsorted(lay.offsets[m], j, side="right")) - 1
                where = lay.cells[gid].location_of(int(lay.nodes[m][j]))
                raise PointerError(
                    f"POINTER {name} of {m} is not set for {unset.size} instance(s), the "
                    f"first at {where} of cell {gid}: set it with Simulation.set_pointer "
                    "before the run (NEURON would read whatever its pointer holds)",
                    mechanism=m, pointer=name)
    return arrays, links


def refuse_on_gpu(codes) -> None:
    """Refuse, before any GPU work, a mechanism whose blocks read a POINTER: the GPU
    engine steps each cell on its own, and has no reads of other instances' values.

    Raises
    ------
    PointerError
    """
    for code in codes:
        if code.pointers:
            m = code.mech.name
            raise PointerError(f"mechanism {m} reads POINTER {', '.join(code.pointers)}: "
                               "the gpu backend does not run POINTERs; use backend "
                               "'serial' or 'multicore'", mechanism=m,
                               pointer=code.pointers[0])


def _mechanism(codes, name: str):
    return next(c.mech for c in codes if c.mech.name == name)

