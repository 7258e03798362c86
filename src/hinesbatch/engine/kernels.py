"""Generate, cache and import the Numba module that steps a model.

One module per combination of mechanisms (in NEURON's type order), TABLE use and backend:
its source is written to ``$XDG_CACHE_HOME/hinesbatch/kernels`` (or ``~/.cache/...``)
under a name keyed by the hash of that source, then imported, so Numba's ``cache=True``
reuses the machine code across processes.

The module holds:

- ``advance(n_max, step, t, t_event, phase, dt, celsius, n_cells, <sources>,
  <recordings>, bad, <model arrays>)``: up to ``n_max`` fixed steps (NEURON's order,
  docs/simulator.md), returning ``(steps, step, t, status, info)``. It stops *before* a
  step when a spike source crossed its threshold (status 1, ``info`` sources in
  ``fired``) or an event is due (``t_event <= t + dt/2``, status 2), and *after* a step
  that left a non-finite voltage (status 3, ``info`` the cell). ``phase`` 0 checks the
  thresholds before each step; 1 first stops (status 2) for an event due by ``t`` itself,
  which NEURON delivers before the check at ``t``; 2 is 1 with the check at the first
  ``t`` already done (WATCH conditions, :mod:`.watch`, need these phases).
- ``advance_epoch(n_steps, ..., chunk_off, node_ord, ...)``: exactly ``n_steps`` steps of
  every chunk of cells ``[chunk_off[k], chunk_off[k+1])`` independently, each chunk
  solved in the order ``node_ord`` gives (:func:`chunk_order`; ``prange`` over chunks
  for multicore), for a stretch in which no spike of the stretch can act: threshold
  crossings are kept per source in ``spike_t``/``spike_n`` instead of stopping; the
  events the host collected for the stretch (:data:`EVENT_ARGS`, NET_RECEIVE of the
  mechanisms :func:`kernel_receivers` names) act at the start of their steps; a chunk
  that becomes non-finite stops and sets ``bad_step[c]`` of its non-finite cells. A
  chunk's loops run
  over all its cells' nodes and instances at once (the roots of its later cells, whose
  parent is -1, are skipped where a node meets its parent), so small cells make long
  loops (:func:`chunks`). Sources and recordings are grouped by cell (``src_off``,
  ``rec_off``).
- ``assemble_all`` (finitialize's assembly), ``_initial_<m>``, ``_net_receive_<m>``,
  ``_build_<m>_<proc>`` (TABLEs).

Model arrays (one cell after another, NEURON's node order within each):
``v, d, rhs, a, b, parent, capd, node_off`` and per mechanism ``_D_<m>`` (fields ×
instances), ``_N_<m>`` (node of each instance), ``_O_<m>`` (instances of cell c are
``_O[c]:_O[c+1]``), ``_S_<m>`` (``1e2/area`` for point processes), ``_X_<m>``, ``_B_<m>`` (scratch of the
cnexp passes: ``max(1, n_cnexp) × instances``), ``_R_<m>`` (scratch of the currents:
``2 × instances``), for a mechanism with longitudinal diffusion ``_LP_<m>``, ``_LC_<m>``
(:mod:`.diffusion`); then per ion kept per node (:func:`.ions.kept_per_node`) ``_I_<ion>``
(:data:`.ions.ION_ROWS` × nodes); then the TABLEs; then, where a mechanism draws random
numbers (:mod:`hinesbatch.mechanisms.scoprand`), ``_RS``, the stream's state (one int64);
then, per mechanism whose blocks read a POINTER, ``_PT_<m>`` (int64, three rows per
POINTER × instances: the target as ``_value``'s ``m, f, i``,
:mod:`hinesbatch.mechanisms.codegen`).

A module whose mechanisms draw random numbers steps all cells as one chunk
(``assemble_all`` and ``advance`` too, and the caller gives ``advance_epoch`` one chunk):
each step then draws in NEURON's order, mechanisms in type order and, within one, the
instances in cell order, and never from two threads. The serial module's
``assemble_all`` and ``advance`` also take all cells as one chunk (the same operations on
every node, one call per step).

A module whose mechanisms read POINTERs runs ``assemble_all`` and ``advance`` with all
cells as one chunk too, and the caller makes every chunk of ``advance_epoch`` hold the
cells a POINTER links (:func:`join_linked`): a block reading a value of another cell
then sees it at the same phase of the same step as NEURON's.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from pathlib import Path

import numpy as np

from .._numba import light_cache_loads_in
from ..mechanisms.codegen import MechanismCode, hoc_exp_source, nernst_source
from ..mechanisms.ions import kept_per_node
from ..mechanisms.libm_exp import vector_exp_enabled
from ..mechanisms.scoprand import numba_source as scoprand_source

__all__ = ["CHUNK_NODES", "COMMON_ARRAYS", "EVENT_ARGS", "KernelModule", "chunk_order",
           "chunks", "join_linked", "kernel_module", "kernel_receivers", "mechanism_arrays",
           "mechanism_codes"]

COMMON_ARRAYS = ("v", "d", "rhs", "a", "b", "parent", "capd", "node_off")
#: The events ``advance_epoch`` delivers, chunk after chunk (``ev_off``: the events of
#: chunk ``k`` are ``ev_off[k]:ev_off[k+1]``), each in delivery order: the step at whose
#: start it acts, the mechanism's index in the module, the instance, its time and flag,
#: and its row of ``ev_w`` (its NetCon's weight vector); ``ev_S`` the scratch rows of
#: NET_RECEIVE.
EVENT_ARGS = "ev_step, ev_mech, ev_inst, ev_te, ev_flag, ev_row, ev_w, ev_S"
_FORMAT_VERSION = "3"


def kernel_receivers(codes) -> set:
    """Indices (in ``codes``) of the mechanisms whose NET_RECEIVE ``advance_epoch`` runs:
    those that send nothing (no ``net_send``, ``net_event`` or WATCH), draw no random
    numbers and loop over no NetCons; each event then changes its own instance and its
    NetCon's weight vector only, so the kernel may run it at its step."""
    return {k for k, c in enumerate(codes) if c.mech.net_receive and not c.receive_sends
            and not c.receive_stream and not c.receive_netcons}


def mechanism_arrays(name: str, diffusion: bool = False) -> tuple:
    """The kernel arguments of mechanism ``name`` (with ``diffusion``, also ``_LP_<m>``
    and ``_LC_<m>`` of its longitudinal diffusion)."""
    return (f"_D_{name}", f"_N_{name}", f"_O_{name}", f"_S_{name}", f"_X_{name}",
            f"_B_{name}", f"_R_{name}") + ((f"_LP_{name}", f"_LC_{name}") if diffusion
                                           else ())


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hinesbatch" / "kernels"


class KernelModule:
    """The imported module and the argument names its functions take."""

    def __init__(self, module, codes: list, tables: bool, kept: dict):
        self.module = module
        self.codes = codes
        self.tables = tables
        self.kept = kept
        self.mech_args = [a for c in codes
                          for a in mechanism_arrays(c.mech.name, bool(c.mech.diffusion))]
        self.ion_args = [f"_I_{ion}" for ion in kept]
        self.table_args = [a for c in codes for a in c.table_args()]
        #: whether the model takes the random-number stream ``_RS`` (after the tables)
        self.stream = any(c.stream for c in codes)
        #: the POINTERs' target arrays, the model's last arguments
        self.pointer_args = [f"_PT_{c.mech.name}" for c in codes if c.pointers]

    def __getattr__(self, name):
        return getattr(self.module, name)


def _libm_exp_digest() -> str:
    """Hash of the source of :mod:`.libm_exp`, which the generated modules import."""
    from ..mechanisms import libm_exp

    return hashlib.sha256(Path(libm_exp.__file__).read_bytes()).hexdigest()[:16]


def mechanism_codes(mechs: list, *, tables: bool, vector_exp: bool = False) -> list:
    """One :class:`.MechanismCode` per mechanism of ``mechs``, as the module holds them."""
    kept = kept_per_node(mechs)
    peers = [m.name for m in mechs]
    return [MechanismCode(m, tables=tables, vector_exp=vector_exp, kept=kept, peers=peers)
            for m in mechs]


def generate_source(mechs: list, *, tables: bool, parallel: bool,
                    vector_exp: bool = False, codes: list | None = None) -> str:
    """The module's source for ``mechs`` (descriptions, in NEURON's type order);
    ``vector_exp``: see :class:`.MechanismCode`; ``codes``: :func:`mechanism_codes` of
    the same arguments, where the caller has them."""
    kept = kept_per_node(mechs)
    if codes is None:
        codes = mechanism_codes(mechs, tables=tables, vector_exp=vector_exp)
    mech_args = [a for c in codes
                 for a in mechanism_arrays(c.mech.name, bool(c.mech.diffusion))]
    table_args = [a for c in codes for a in c.table_args()]
    stream = any(c.stream for c in codes)
    pointer_args = [f"_PT_{c.mech.name}" for c in codes if c.pointers]
    model = ", ".join(list(COMMON_ARRAYS) + mech_args + [f"_I_{ion}" for ion in kept]
                      + table_args + (["_RS"] if stream else []) + pointer_args)
    parts = [("# Generated by hinesbatch.engine.kernels; do not edit.\n"
              "import math\n\nimport numpy as np\nfrom numba import njit, prange\n"
              + (f"\n# libm_exp {_libm_exp_digest()}: a new version makes a new module, so\n"
                 "# Numba's cache of this one is not reused with it\n"
                 "from hinesbatch.mechanisms.libm_exp import exp_fast as _exp_fast\n"
                 "from hinesbatch.mechanisms.libm_exp import exp_in_range as _exp_in_range\n"
                 "from hinesbatch.mechanisms.libm_exp import hoc_exp as _hoc_exp_vector\n"
                 if vector_exp else "") + "\n\n"),
             hoc_exp_source(vector_exp)]
    if kept:
        parts.append("\n\n" + nernst_source())
    if stream:
        parts.append("\n\n" + scoprand_source())
    for c in codes:
        parts.append("\n\n" + c.module_functions())
    dargs = ", ".join(f"_D_{c.mech.name}" for c in codes)

    def prelude(indent):
        pad = "    " * indent
        return (f"{pad}n0 = node_off[c0]\n{pad}n1 = node_off[c1]\n"
                + "".join(c.prelude(indent) for c in codes))

    def assembly(indent):
        pad = "    " * indent
        src = (f"{pad}for i in range(n0, n1):\n{pad}    rhs[i] = 0.0\n{pad}    d[i] = 0.0\n")
        for ion, z in kept.items():
            # NEURON's ion_cur: the current from zero; the reversal potential where a
            # concentration is written (eadvance)
            src += (f"{pad}for i in range(n0, n1):\n"
                    f"{pad}    _I_{ion}[3, i] = 0.0\n"
                    f"{pad}    if _I_{ion}[4, i] != 0.0:\n"
                    f"{pad}        _I_{ion}[0, i] = _nernst(_I_{ion}[1, i], _I_{ion}[2, i], "
                    f"{z!r}, _celsius)\n")
        for c in codes:
            if c.mech.kind in ("density", "point") and c.mech.currents:
                src += c.current_loop(indent)
        # the capacitance joins the axial loop: a node's d gets capd, then its own -b,
        # then its children's -a (children follow their parent), NEURON's order
        src += (f"{pad}d[n0] += capd[n0]\n"
                f"{pad}for i in range(n0 + 1, n1):\n"
                f"{pad}    d[i] += capd[i]\n"
                f"{pad}    p = parent[i]\n"
                f"{pad}    if p >= 0:\n"
                f"{pad}        dv = v[p] - v[i]\n"
                f"{pad}        rhs[i] -= b[i]*dv\n"
                f"{pad}        rhs[p] += a[i]*dv\n"
                f"{pad}        d[i] -= b[i]\n"
                f"{pad}        d[p] -= a[i]\n")
        return src

    def solve(indent, ordered):
        """Eliminate and substitute (with the voltage update and the sum s of v for the
        finite check in the same pass: the update reads only the node's own solved
        rhs), in node order or in the chunk's order ``_ord`` (:func:`chunk_order`)."""
        pad = "    " * indent
        down, up = ("_k in range(n1 - n0 - 1, 0, -1)", "_k in range(1, n1 - n0)") \
            if ordered else ("i in range(n1 - 1, n0, -1)", "i in range(n0 + 1, n1)")
        node = f"{pad}    i = _ord[_k]\n" if ordered else ""
        return (f"{pad}for {down}:\n" + node +
                f"{pad}    p = parent[i]\n"
                f"{pad}    if p >= 0:\n"
                f"{pad}        pp = a[i]/d[i]\n"
                f"{pad}        d[p] -= pp*b[i]\n"
                f"{pad}        rhs[p] -= pp*rhs[i]\n"
                f"{pad}rhs[n0] /= d[n0]\n"
                f"{pad}v[n0] += rhs[n0]\n"
                f"{pad}s = v[n0]\n"
                f"{pad}for {up}:\n" + node +
                f"{pad}    p = parent[i]\n"
                f"{pad}    if p >= 0:\n"
                f"{pad}        rhs[i] -= b[i]*rhs[p]\n"
                f"{pad}    rhs[i] /= d[i]\n"
                f"{pad}    v[i] += rhs[i]\n"
                f"{pad}    s += v[i]\n")

    def step(indent, ordered=False):
        """Assemble at _t, solve, update v (sum in s), advance states at _tn. ``ordered``:
        a chunk of several cells is solved in the order ``_ord`` (one cell's own level
        order needs no index)."""
        pad = "    " * indent
        src = assembly(indent)
        if ordered:
            src += (f"{pad}if c1 - c0 == 1:\n" + solve(indent + 1, False)
                    + f"{pad}else:\n" + solve(indent + 1, True))
        else:
            src += solve(indent, False)
        src += f"{pad}_t = _tn\n"
        for c in codes:
            if c.has_state_loop():
                src += c.state_loop(indent)
        # NEURON's long_difus_solve: after every mechanism's states
        for c in codes:
            if c.mech.diffusion:
                src += c.diffusion_loop(indent)
        return src

    def event_delivery(indent):
        """NET_RECEIVE of the events the host collected for this step (``ev_step == st``,
        in delivery order), at the step's start: :func:`kernel_receivers`."""
        pad = "    " * indent
        calls = [(k, c.mech.name) for k, c in enumerate(codes) if k in receivers]
        if not calls:
            return ""
        src = (f"{pad}while _e < e1 and ev_step[_e] == st:\n"
               f"{pad}    _m = ev_mech[_e]\n")
        for n, (k, m) in enumerate(calls):
            src += (f"{pad}    {'if' if n == 0 else 'elif'} _m == {k}:\n"
                    f"{pad}        _net_receive_{m}(_D_{m}, ev_inst[_e], ev_w[ev_row[_e]], "
                    f"ev_te[_e], _dt, _celsius, ev_flag[_e], ev_S)\n")
        return src + f"{pad}    _e += 1\n"

    receivers = kernel_receivers(codes)
    parts.append(f"\n\n@njit(cache=True, error_model='numpy')\n"
                 f"def _assemble(c0, c1, _t, _dt, _celsius, {model}):\n"
                 + prelude(1) + assembly(1))
    parts.append(f"\n\n@njit(cache=True, error_model='numpy')\n"
                 f"def _cell_step(c0, c1, _t, _tn, _dt, _celsius, {model}):\n"
                 + prelude(1) + step(1) + "    return not math.isfinite(s)\n")
    # recorded value
    rec = [(f"\n\n@njit(cache=True, error_model='numpy')\n"
            f"def _value(m, f, i, v{', ' if dargs else ''}{dargs}):\n"
            f"    if m < 0:\n        return v[i]\n")]
    for k, c in enumerate(codes):
        rec.append(f"    if m == {k}:\n        return _D_{c.mech.name}[f, i]\n")
    rec.append("    return np.nan\n")
    parts.append("".join(rec))
    # many steps of one cell: the views are made once
    parts.append(
        f"\n\n@njit(cache=True, error_model='numpy')\n"
        f"def _cell_run(c0, c1, node_ord, n_steps, step0, t0, _dt, _celsius, src_node,\n"
        f"              src_thr, src_flag, src_off, spike_t, spike_n, rec_m, rec_f, rec_i,\n"
        f"              rec_every, rec_off, rec_buf, e0, e1, {EVENT_ARGS}, {model}):\n"
        + prelude(1) +
        "    _ord = node_ord[n0:n1]\n"
        "    t = t0\n"
        "    st = step0\n"
        "    _e = e0\n"
        "    for k in range(n_steps):\n"
        "        for q in range(src_off[c0], src_off[c1]):\n"
        "            if v[src_node[q]] - src_thr[q] > 0.0:\n"
        "                if src_flag[q] == 0:\n"
        "                    src_flag[q] = 1\n"
        "                    spike_t[q, spike_n[q]] = t + 1e-10\n"
        "                    spike_n[q] += 1\n"
        "            else:\n"
        "                src_flag[q] = 0\n"
        + event_delivery(2) +
        "        _t = t + 0.5*_dt\n"
        "        _tn = _t + 0.5*_dt\n"
        + step(2, ordered=True) +
        f"        t = _tn\n"
        f"        st += 1\n"
        f"        for r in range(rec_off[c0], rec_off[c1]):\n"
        f"            e = rec_every[r]\n"
        f"            if st % e == 0:\n"
        f"                rec_buf[r, st // e] = _value(rec_m[r], rec_f[r], rec_i[r], v"
        f"{', ' if dargs else ''}{dargs})\n"
        f"        if not math.isfinite(s):\n"
        f"            return st\n"
        f"    return 0\n")
    loop = "prange" if parallel else "range"
    # all cells at once: in NEURON's order of draws and POINTER reads, and for serial
    # stepping one call per step instead of one per cell (whose views cost more than a
    # small cell's step)
    if stream or pointer_args or not parallel:
        assemble = f"    _assemble(0, n_cells, _t, _dt, _celsius, {model})\n"
        cell_steps = (
            f"        if _cell_step(0, n_cells, tm, tn, _dt, _celsius, {model}):\n"
            f"            for c in range(n_cells):\n"
            f"                for i in range(node_off[c], node_off[c + 1]):\n"
            f"                    if not math.isfinite(v[i]):\n"
            f"                        bad[c] = True\n")
    else:
        assemble = (f"    for c in range(n_cells):\n"
                    f"        _assemble(c, c + 1, _t, _dt, _celsius, {model})\n")
        cell_steps = (f"        for c in {loop}(n_cells):\n"
                      f"            bad[c] = _cell_step(c, c + 1, tm, tn, _dt, _celsius, "
                      f"{model})\n")
    parts.append(
        f"\n\n@njit(cache=True, error_model='numpy')\n"
        f"def assemble_all(n_cells, _t, _dt, _celsius, {model}):\n"
        + assemble +
        f"\n\n@njit(cache=True, error_model='numpy'{', parallel=True' if parallel else ''})\n"
        f"def advance(n_max, step, t, t_event, phase, _dt, _celsius, n_cells, src_node,\n"
        f"            src_thr, src_flag, fired, rec_m, rec_f, rec_i, rec_every, rec_buf, bad,\n"
        f"            {model}):\n"
        f"    k = 0\n"
        f"    while k < n_max:\n"
        f"        if phase == 1 and t_event <= t:\n"
        f"            return k, step, t, 2, 0\n"
        f"        if phase != 2:\n"
        f"            nf = 0\n"
        f"            for s in range(src_node.size):\n"
        f"                if v[src_node[s]] - src_thr[s] > 0.0:\n"
        f"                    if src_flag[s] == 0:\n"
        f"                        src_flag[s] = 1\n"
        f"                        fired[nf] = s\n"
        f"                        nf += 1\n"
        f"                else:\n"
        f"                    src_flag[s] = 0\n"
        f"            if nf > 0:\n"
        f"                return k, step, t, 1, nf\n"
        f"        else:\n"
        f"            phase = 1\n"
        f"        tm = t + 0.5*_dt\n"
        f"        if t_event <= tm:\n"
        f"            return k, step, t, 2, 0\n"
        f"        tn = tm + 0.5*_dt\n"
        + cell_steps +
        f"        t = tn\n"
        f"        step += 1\n"
        f"        k += 1\n"
        f"        for r in range(rec_m.size):\n"
        f"            e = rec_every[r]\n"
        f"            if step % e == 0:\n"
        f"                rec_buf[r, step // e] = _value(rec_m[r], rec_f[r], rec_i[r], v"
        f"{', ' if dargs else ''}{dargs})\n"
        f"        for c in range(n_cells):\n"
        f"            if bad[c]:\n"
        f"                return k, step, t, 3, c\n"
        f"    return k, step, t, 0, 0\n"
        f"\n\n@njit(cache=True, error_model='numpy'{', parallel=True' if parallel else ''})\n"
        f"def advance_epoch(n_steps, step0, t0, _dt, _celsius, chunk_off, node_ord, src_node,\n"
        f"                  src_thr, src_flag, src_off, spike_t, spike_n, rec_m, rec_f, rec_i,\n"
        f"                  rec_every, rec_off, rec_buf, bad_step, ev_off, {EVENT_ARGS},\n"
        f"                  {model}):\n"
        f"    for k in {loop}(chunk_off.size - 1):\n"
        f"        c0 = chunk_off[k]\n"
        f"        c1 = chunk_off[k + 1]\n"
        f"        st = _cell_run(c0, c1, node_ord, n_steps, step0, t0, _dt, _celsius, src_node,\n"
        f"                       src_thr, src_flag, src_off, spike_t, spike_n, rec_m, rec_f,\n"
        f"                       rec_i, rec_every, rec_off, rec_buf, ev_off[k], ev_off[k + 1],\n"
        f"                       {EVENT_ARGS}, {model})\n"
        f"        if st:\n"
        f"            for c in range(c0, c1):\n"
        f"                for i in range(node_off[c], node_off[c + 1]):\n"
        f"                    if not math.isfinite(v[i]):\n"
        f"                        bad_step[c] = st\n")
    return "".join(parts)


#: Nodes a chunk of consecutive cells reaches before the next starts (:func:`chunks`).
CHUNK_NODES = 512


def chunks(node_off, target: int = CHUNK_NODES):
    """Cell boundaries of the chunks ``advance_epoch`` runs: consecutive cells grouped
    until a chunk has at least ``target`` nodes (a larger cell alone). int64 array
    ``[0, ..., n_cells]``.

    Examples
    --------
    >>> chunks(np.array([0, 300, 600, 700, 2000, 2100]), 512).tolist()
    [0, 2, 4, 5]
    """
    bounds, start = [0], int(node_off[0])
    for c in range(1, len(node_off)):
        if int(node_off[c]) - start >= target or c == len(node_off) - 1:
            bounds.append(c)
            start = int(node_off[c])
    return np.array(bounds, dtype=np.int64)


def join_linked(chunk_off, links) -> np.ndarray:
    """``chunk_off`` without the boundaries that would split cells ``links`` joins: for
    each pair ``(c, d)`` of cells (a POINTER of a mechanism of one reads a value of the
    other), no boundary falls between ``min(c, d)`` and ``max(c, d)``, so both are
    stepped by one chunk (with the cells between them).

    Examples
    --------
    >>> join_linked(np.array([0, 2, 4, 5, 7]), [(1, 4), (6, 6)]).tolist()
    [0, 5, 7]
    """
    chunk_off = np.asarray(chunk_off, dtype=np.int64)
    keep = np.ones(chunk_off.size, dtype=bool)
    for c, d in links:
        lo, hi = min(int(c), int(d)), max(int(c), int(d))
        keep[(chunk_off > lo) & (chunk_off <= hi)] = False
    keep[[0, -1]] = True
    return chunk_off[keep]


def chunk_order(node_off, depth, chunk_off) -> np.ndarray:
    """The order in which ``advance_epoch`` eliminates and substitutes each chunk's nodes:
    by depth from the cell's root, then by node (int64, a permutation of all nodes that
    keeps every chunk's nodes in its own range).

    One cell's level order (:func:`.layout.level_order`) already puts a level's nodes
    side by side; a chunk of small cells, taken cell after cell, would still be one short
    chain of dependent divisions per cell. By depth across the chunk, neighbours in the
    loop belong to different cells, so the processor overlaps the chains. A node still
    follows its parent and siblings keep their order, so every node sees the same
    operations in the same order as in NEURON's order.

    Examples
    --------
    >>> chunk_order(np.array([0, 3, 5]), np.array([0, 1, 2, 0, 1]),
    ...             np.array([0, 2])).tolist()
    [0, 3, 1, 4, 2]
    """
    node_off = np.asarray(node_off, dtype=np.int64)
    if np.all(np.diff(chunk_off) == 1):   # one cell a chunk: its own order already
        return np.arange(int(node_off[-1] - node_off[0]), dtype=np.int64)
    chunk_of_node = np.repeat(np.arange(chunk_off.size - 1),
                              np.diff(node_off[np.asarray(chunk_off, dtype=np.int64)]))
    key = chunk_of_node * (int(depth.max(initial=0)) + 1) + depth
    return np.argsort(key, kind="stable").astype(np.int64)


_LOADED: dict = {}


def kernel_module(mechs: list, *, tables: bool, parallel: bool,
                  vector_exp: bool | None = None) -> KernelModule:
    """Generate (or reuse) and import the module for ``mechs``.

    ``vector_exp`` None: :func:`.libm_exp.vector_exp_enabled` (on where the vectorized
    exp gives this C library's bits, unless ``HINESBATCH_VECTOR_EXP=0``; the check's
    answer is kept in :func:`cache_dir`)."""
    if vector_exp is None:
        vector_exp = vector_exp_enabled(cache_dir())
    # the descriptions are immutable and held by the entry, so their ids stay theirs
    key = (tuple(id(m) for m in mechs), tables, parallel, vector_exp)
    if key not in _MODULES:
        codes = mechanism_codes(mechs, tables=tables, vector_exp=vector_exp)
        source = generate_source(mechs, tables=tables, parallel=parallel,
                                 vector_exp=vector_exp, codes=codes)
        _MODULES[key] = (tuple(mechs), KernelModule(load_source(source), codes, tables,
                                                    kept_per_node(mechs)))
    return _MODULES[key][1]


#: :func:`kernel_module`'s answers in this process: a run of a model already run makes
#: no source again (a few milliseconds, a tenth of a short run of a small cell).
_MODULES: dict = {}


def load_source(source: str):
    """Import generated ``source`` as a module, written once per content to
    :func:`cache_dir` (so that Numba caches its compiled functions beside it)."""
    digest = hashlib.sha256((_FORMAT_VERSION + source).encode()).hexdigest()[:20]
    name = f"hb_kernel_{digest}"
    if name not in _LOADED:
        folder = cache_dir()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name}.py"
        if not path.exists() or path.read_text() != source:
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(source)
            os.replace(tmp, path)
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        light_cache_loads_in(module)
        _LOADED[name] = module
    return _LOADED[name]
