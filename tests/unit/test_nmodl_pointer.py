"""NMODL POINTERs (read-only) on the CPU engines: translation and refusals, the targets
``Simulation.set_pointer`` names, its errors, when a block reads the target (start-of-step
v in the BREAKPOINT, the new values in the state update), cells a POINTER links stepped
in one chunk, and the GPU backend's refusal (its host emulation)."""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("neuron", reason="NMODL files are read with neuron.nmodl")

import hinesbatch as hb  # noqa: E402
from hinesbatch import mechanisms  # noqa: E402
from hinesbatch.engine import simulation  # noqa: E402
from hinesbatch.engine.gpu.devices import EMULATION_ENV  # noqa: E402
from hinesbatch.engine.kernels import join_linked  # noqa: E402
from hinesbatch.mechanisms.codegen import pointers_read  # noqa: E402
from hinesbatch.nmodl import NmodlError, translate_text  # noqa: E402
from hinesbatch.sim import PointerError  # noqa: E402

DATA = Path(__file__).parents[1] / "data" / "nmodl"
FILES = ("ptgap.mod", "ptdgap.mod", "ptrel.mod", "ptsyn.mod")


@pytest.fixture(autouse=True)
def loaded():
    """The POINTER files of tests/data/nmodl, unregistered afterwards."""
    names = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for f in FILES:
            names += hb.load_mechanisms(DATA / f)
    yield names
    for n in names:
        mechanisms.unregister(n)


@pytest.fixture(scope="module")
def swc(tmp_path_factory):
    path = tmp_path_factory.mktemp("pointer") / "soma.swc"
    path.write_text("1 1 0 0 0 10 -1\n")
    return str(path)


def _cells(swc, n=2):
    cells = [hb.Cell(swc, nseg=1).insert("hh") for _ in range(n)]
    cells[0].place("IClamp", "soma[0](0.5)", delay=1.0, dur=20.0, amp=0.3)
    return cells


GAP = """
NEURON {{ POINT_PROCESS pgap POINTER vgap NONSPECIFIC_CURRENT i RANGE g }}
PARAMETER {{ g = 0.001 (uS) }}
ASSIGNED {{ v (mV) vgap (mV) i (nA) }}
{body}
"""


# ---- translation ------------------------------------------------------------------------
def test_a_pointer_is_read_but_is_no_field():
    mech = mechanisms.get("ptgap")
    assert mech.pointers == ("vgap",)
    assert "vgap" not in mech.field_names
    assert pointers_read(mech) == ("vgap",)
    # a FUNCTION reading the POINTER gets it as an argument at its calls
    syn = mechanisms.get("ptsyn")
    assert syn.functions[0].args == ("C", "kd")
    assert "occupancy(C, kd)" in syn.breakpoint


def test_a_pointer_only_declared_needs_no_target(swc):
    text = GAP.format(body="BREAKPOINT { i = g*(v + 65) }")
    mech = translate_text(text, "pgap.mod").mechanism
    assert mech.pointers == ("vgap",) and pointers_read(mech) == ()
    mechanisms.register(mech)
    try:
        cell = hb.Cell(swc, nseg=1).insert("hh")
        cell.place("pgap", "soma[0](0.5)")
        sim = hb.Simulation(cell)
        key = sim.record("v")
        v = sim.run(2.0)[key]        # no set_pointer: nothing reads it
        assert np.isfinite(v).all() and v[-1] > -65.0    # i = g*(v + 65) depolarizes
    finally:
        mechanisms.unregister("pgap")


@pytest.mark.parametrize("body, construct, line", [
    ("BREAKPOINT { vgap = v  i = g*(v - vgap) }", "POINTER vgap", 5),
    ("NET_RECEIVE (w) { i = vgap }\nBREAKPOINT { i = g*v }", "POINTER vgap", 5),
    ("NET_RECEIVE (w, a) { INITIAL { a = vgap } }\nBREAKPOINT { i = g*v }", "POINTER vgap",
     5),
])
def test_writing_a_pointer_or_reading_it_in_net_receive_is_refused(body, construct, line):
    with pytest.raises(NmodlError) as err:
        translate_text(GAP.format(body=body), "pgap.mod")
    assert err.value.construct == construct and err.value.line == line


def test_a_table_depending_on_a_pointer_is_refused():
    text = GAP.format(body="BREAKPOINT { i = g*f(v) }\nFUNCTION f(x) {\n"
                           " TABLE FROM -100 TO 100 WITH 200\n f = x - vgap\n}")
    with pytest.raises(NmodlError, match="TABLE: FUNCTION f depends on vgap"):
        translate_text(text, "pgap.mod")


def test_a_pointer_declared_as_a_state_and_bbcorepointer_are_refused():
    with pytest.raises(NmodlError, match="POINTER vgap: declared as a STATE"):
        translate_text(GAP.replace("ASSIGNED {{ v (mV) vgap (mV) i (nA) }}",
                                   "ASSIGNED {{ v (mV) i (nA) }} STATE {{ vgap }}")
                       .format(body="BREAKPOINT { i = g*(v - vgap) }"), "pgap.mod")
    with pytest.raises(NmodlError, match="BBCOREPOINTER"):
        translate_text(GAP.replace("POINTER vgap", "BBCOREPOINTER vgap")
                       .format(body="BREAKPOINT { i = g*v }"), "pgap.mod")


# ---- set_pointer and its errors ---------------------------------------------------------
def test_unknown_pointer_names_and_targets_raise_typed_errors(swc):
    cells = _cells(swc)
    g = cells[0].place("ptgap", "soma[0](0.5)")
    sim = hb.Simulation(cells)
    with pytest.raises(PointerError, match=r"ptgap\[0\] of cell 0: ptgap has no POINTER "
                                           r"'vx'; its POINTERs: vgap") as err:
        sim.set_pointer(g, "vx", "v", cell=1)
    assert err.value.mechanism == "ptgap" and err.value.pointer == "vx"
    with pytest.raises(PointerError, match=r"POINTER vgap: unknown variable 'w'; range "
                                           r"variables: v, "):
        sim.set_pointer(g, "vgap", "w", cell=1)
    with pytest.raises(PointerError, match="ptgap has no variable 'q'; variables: g, i"):
        sim.set_pointer(g, "vgap", "q", target=g)
    with pytest.raises(PointerError, match="'ptgap' is not a density mechanism; for a "
                                           "point process pass the PointProcess"):
        sim.set_pointer((0, "soma[0](0.5)", "ptgap"), "vgap")
    with pytest.raises(TypeError, match="owner must be a PointProcess"):
        sim.set_pointer("ptgap", "vgap")


def test_an_unset_pointer_is_refused_before_the_run(swc):
    cells = _cells(swc, 3)
    g0 = cells[0].place("ptgap", "soma[0](0.5)")
    cells[2].place("ptgap", "soma[0](0.5)")
    sim = hb.Simulation(cells)
    sim.set_pointer(g0, "vgap", "v", cell=1)
    with pytest.raises(PointerError, match=r"POINTER vgap of ptgap is not set for 1 "
                                           r"instance\(s\), the first at soma\[0\]\(0.5\) "
                                           r"of cell 2") as err:
        sim.run(1.0)
    assert err.value.mechanism == "ptgap" and err.value.pointer == "vgap"


def test_a_density_pointer_where_the_mechanism_is_not_inserted(swc):
    cells = _cells(swc)
    cells[1].insert("ptdgap")
    sim = hb.Simulation(cells)
    sim.set_pointer((1, "soma[0](0.5)", "ptdgap"), "vgap", "v", cell=0)
    sim.set_pointer((0, "soma[0](0.5)", "ptdgap"), "vgap", "v", cell=1)
    with pytest.raises(PointerError, match=r"ptdgap at soma\[0\]\(0.5\) of cell 0: ptdgap "
                                           "is not inserted there"):
        sim.run(1.0)


def test_a_target_mechanism_missing_at_its_location_is_refused(swc):
    cells = _cells(swc)
    s = cells[1].place("ptsyn", "soma[0](0.5)")
    sim = hb.Simulation(cells)
    sim.set_pointer(s, "C", "T_ptrel", cell=0)     # ptrel is inserted nowhere
    with pytest.raises(PointerError, match=r"POINTER C: its target: ptrel is not inserted "
                                           "there"):
        sim.run(1.0)


# ---- when the blocks read -----------------------------------------------------------------
def test_breakpoint_reads_start_of_step_v_of_another_cell(swc):
    cells = _cells(swc)
    g0 = cells[0].place("ptgap", "soma[0](0.5)")
    g1 = cells[1].place("ptgap", "soma[0](0.5)")
    sim = hb.Simulation(cells, backend="serial")
    sim.set_pointer(g0, "vgap", "v", cell=1)
    sim.set_pointer(g1, "vgap", "v", cell=0)
    keys = [sim.record("v", cell=0), sim.record("v", cell=1),
            sim.record("i", target=g0), sim.record("i", target=g1)]
    r = sim.run(20.0)
    v0, v1, i0, i1 = (r[k] for k in keys)
    g = mechanisms.get("ptgap").parameters[0].default
    # i of step k is computed from the v both cells had at its start (step k - 1's end)
    np.testing.assert_array_equal(i0[1:], g * (v0[:-1] - v1[:-1]))
    np.testing.assert_array_equal(i1[1:], g * (v1[:-1] - v0[:-1]))
    assert np.max(np.abs(v1 + 65.0)) > 1.0        # cell 1 is driven through the junction


def test_state_update_reads_the_new_value_of_an_earlier_mechanism(swc):
    cells = _cells(swc)
    s = cells[1].place("ptsyn", "soma[0](0.5)")
    sim = hb.Simulation(cells, backend="serial")
    sim.set_pointer(s, "C", "m_hh", cell=0)       # hh's m, updated before ptsyn's states
    km, kr = sim.record("m_hh", cell=0), sim.record("R", target=s)
    r = sim.run(10.0)
    m, rr = r[km], r[kr]
    syn = {p.name: p.default for p in mechanisms.get("ptsyn").parameters}
    a, b = -(syn["alpha"] * m[1:] + syn["beta"]), syn["alpha"] * m[1:]
    expected = rr[:-1] + (1.0 - np.exp(0.025 * a)) * (-b / a - rr[:-1])
    np.testing.assert_allclose(rr[1:], expected, rtol=0, atol=1e-15)
    # INITIAL read m_hh after hh's INITIAL
    assert rr[0] == syn["alpha"] * m[0] / (syn["alpha"] * m[0] + syn["beta"])


# ---- chunks ------------------------------------------------------------------------------
def test_join_linked_removes_boundaries_inside_links():
    assert join_linked(np.array([0, 2, 4, 5, 7]), [(1, 4), (6, 6)]).tolist() == [0, 5, 7]
    assert join_linked(np.array([0, 1, 2, 3]), [(2, 0)]).tolist() == [0, 3]
    assert join_linked(np.array([0, 1, 2, 3]), []).tolist() == [0, 1, 2, 3]


def _linked_network(swc, n=12):
    cells = _cells(swc, n)
    for c in cells[1:]:
        c.place("IClamp", "soma[0](0.5)", delay=2.0, dur=5.0, amp=0.05)
    gaps = [c.place("ptgap", "soma[0](0.5)", g=0.01) for c in cells]
    return cells, gaps


@pytest.mark.parametrize("backend", ["serial", "multicore"])
def test_linked_cells_share_a_chunk_and_match_one_chunk(swc, backend, monkeypatch):
    """A ring of gap junctions 0 -> 11 -> 10 ... -> 1 -> 0 (each reads the next cell's v):
    whatever the chunking asked for, the run equals the one of all cells in one chunk,
    which steps every cell each step before the next."""
    cells, gaps = _linked_network(swc)
    runs = []
    for chunk_nodes in (1, 10 ** 6):
        sim = hb.Simulation(cells, backend=backend, threads=2 if backend == "multicore"
                            else None)
        for k, g in enumerate(gaps):
            sim.set_pointer(g, "vgap", "v", cell=(k - 1) % len(cells))
        keys = [sim.record("v", cell=k) for k in range(len(cells))]
        monkeypatch.setattr(simulation, "CHUNK_NODES", chunk_nodes)
        r = sim.run(15.0)
        runs.append(np.array([r[k] for k in keys]))
        if chunk_nodes == 1:
            # the ring links cell 0 with cell 11: one chunk
            assert sim._chunk_off.tolist() == [0, len(cells)]
    np.testing.assert_array_equal(runs[0], runs[1])
    assert np.ptp(runs[0][5]) > 1.0


def test_unlinked_cells_keep_their_own_chunks(swc, monkeypatch):
    cells, gaps = _linked_network(swc, 6)
    sim = hb.Simulation(cells, backend="serial")
    for a, b in ((0, 1), (1, 0), (2, 3), (3, 2), (4, 5), (5, 4)):
        sim.set_pointer(gaps[a], "vgap", "v", cell=b)
    monkeypatch.setattr(simulation, "CHUNK_NODES", 1)
    sim.run(1.0)
    assert sim._chunk_off.tolist() == [0, 2, 4, 6]


# ---- the GPU backend ---------------------------------------------------------------------
def test_gpu_backend_refuses_pointers_before_the_run(swc, monkeypatch):
    monkeypatch.setenv(EMULATION_ENV, "2")
    cells = _cells(swc)
    g0 = cells[0].place("ptgap", "soma[0](0.5)")
    g1 = cells[1].place("ptgap", "soma[0](0.5)")
    sim = hb.Simulation(cells, backend="gpu")
    sim.set_pointer(g0, "vgap", "v", cell=1)
    sim.set_pointer(g1, "vgap", "v", cell=0)
    with pytest.raises(PointerError, match="mechanism ptgap reads POINTER vgap: the gpu "
                                           "backend does not run POINTERs") as err:
        sim.run(1.0)
    assert err.value.mechanism == "ptgap"
    assert not hasattr(sim, "_gpu")



def test_the_stepping_with_short_delays_steps_linked_cells_together(swc):
    """A NetCon delay below dt/2 makes the engine stop at every threshold crossing
    (``advance``); it steps the linked cells as one chunk too, so a NetCon of weight 0
    changes nothing."""
    traces = []
    for delay in (None, 0.01):
        cells = _cells(swc)
        g0 = cells[0].place("ptgap", "soma[0](0.5)", g=0.01)
        g1 = cells[1].place("ptgap", "soma[0](0.5)", g=0.01)
        syn = cells[1].place("ExpSyn", "soma[0](0.5)")
        sim = hb.Simulation(cells, backend="serial")
        sim.set_pointer(g0, "vgap", "v", cell=1)
        sim.set_pointer(g1, "vgap", "v", cell=0)
        if delay is not None:
            sim.connect((0, "soma[0](0.5)"), syn, weight=0.0, delay=delay)
        keys = [sim.record("v", cell=k) for k in (0, 1)]
        r = sim.run(15.0)
        traces.append(np.array([r[k] for k in keys]))
    np.testing.assert_array_equal(traces[0], traces[1])
