"""STATE arrays in KINETIC schemes and LONGITUDINAL_DIFFUSION: the translation
(tests/data/nmodl/capool.mod and cashell.mod), the refusals, the tree of instances
(NEURON's parents and coefficients), and the engine's diffusion step against a dense
backward-Euler solve, the conservation of the amount, and a loop over single cells.
``tests/validation/test_nmodl_diffusion_neuron.py`` compares the files with NEURON."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("neuron.nmodl", reason="the NMODL parser comes with `pip install neuron`")

from nmodl_files import run_states

import hinesbatch as hb
from hinesbatch import mechanisms
from hinesbatch.engine.diffusion import diffusion_arrays
from hinesbatch.engine.gpu.devices import EMULATION_ENV
from hinesbatch.engine.layout import Layout
from hinesbatch.mechanisms import Diffusion, Mechanism, Variable
from hinesbatch.model.sections import SectionCell
from hinesbatch.nmodl import NmodlError, translate, translate_text

DATA = Path(__file__).parents[1] / "data" / "nmodl"
DT = 0.025      # [ms]

pytestmark = pytest.mark.usefixtures("builtins_only")


# ---- translation ----------------------------------------------------------------------------
def test_state_arrays_and_the_array_form_become_one_diffusion_per_element():
    tr = translate(DATA / "cashell.mod")
    mech = tr.mechanism
    assert [s.name for s in mech.states] == [f"{n}__{k}" for n in ("ca", "buf", "cabuf")
                                             for k in range(3)]
    assert {f"frat__{k}" for k in range(3)} <= set(mech.field_names)
    # NEURON's order: statements, species, elements; each element's own index
    assert [d.state for d in mech.diffusion] == [s.name for s in mech.states]
    assert mech.diffusion[1] == Diffusion("ca__1", "(((DCa * diam) * diam) * vrat__1)",
                                          "((diam * diam) * vrat__1)")
    assert mech.diffusion[5].coefficient == "(((DBuf * diam) * diam) * vrat__2)"
    # a written GLOBAL array: its elements per instance, located at the declaration
    assert all(n.startswith(f"{DATA / 'cashell.mod'}:11: GLOBAL vrat__") for n in tr.notices)


def test_scalar_form_uses_the_compartment_volume():
    mech = translate(DATA / "capool.mod").mechanism
    assert mech.diffusion == (Diffusion("cp", "(D * shell)", "shell"),)
    assert "diam" in mech.geometry


POOL = """
NEURON { SUFFIX %s USEION ca READ ica WRITE cai }
UNITS { (mM) = (milli/liter) FARADAY = (faraday) (coulomb) }
PARAMETER { D = 0.6 }
ASSIGNED { diam ica cai }
STATE { %s }
BREAKPOINT { SOLVE pool METHOD sparse }
KINETIC pool {
    %s
}
"""


@pytest.mark.parametrize("states, body, construct, line", [
    # the ion concentration itself as the diffusing species
    ("cai c", "COMPARTMENT diam {cai c}\nLONGITUDINAL_DIFFUSION D {cai}\n~ c << (-ica)",
     "LONGITUDINAL_DIFFUSION {cai}", 10),
    # no COMPARTMENT volume for the species
    ("c", "LONGITUDINAL_DIFFUSION D {c}\n~ c << (-ica)\ncai = c",
     "LONGITUDINAL_DIFFUSION {c}", 9),
    # a species that is not a STATE
    ("c", "COMPARTMENT diam {c}\nLONGITUDINAL_DIFFUSION D {D}\n~ c << (-ica)\ncai = c",
     "LONGITUDINAL_DIFFUSION {D}", 10),
    # inside an IF
    ("c", "COMPARTMENT diam {c}\nif (D > 0) { LONGITUDINAL_DIFFUSION D {c} }\n~ c << (-ica)",
     "LONGITUDINAL_DIFFUSION", 10),
    # an element index outside the array, and one known only at run time
    ("c[2]", "~ c[0] <-> c[2] (1, 1)\ncai = c[0]", "c[]", 9),
    ("c[2]", "FROM i = 0 TO ica { ~ c[i] <-> c[i+1] (1, 1) }\ncai = c[0]", "c[]", 9),
])
def test_refusals_name_the_construct_and_line(states, body, construct, line):
    with pytest.raises(NmodlError) as err:
        translate_text(POOL % ("bad", states, body), "bad.mod")
    assert err.value.construct == construct
    assert err.value.line == line


def test_diffusion_in_a_point_process_or_only_at_steady_state_is_refused():
    point = """
NEURON { POINT_PROCESS pp USEION ca READ ica }
PARAMETER { D = 0.6 }
ASSIGNED { ica }
STATE { c }
BREAKPOINT { SOLVE pool METHOD sparse }
KINETIC pool {
    COMPARTMENT 2 {c}
    LONGITUDINAL_DIFFUSION D {c}
    ~ c << (-ica)
}
"""
    with pytest.raises(NmodlError, match="POINT_PROCESS"):
        translate_text(point, "pp.mod")
    body = "COMPARTMENT diam {c}\nLONGITUDINAL_DIFFUSION D {c}\n~ c <-> cai2 (1, 1)"
    steady = (POOL % ("ss", "c", body)).replace(
        "BREAKPOINT { SOLVE pool METHOD sparse }",
        "STATE { cai2 }\nINITIAL { SOLVE pool STEADYSTATE sparse }\nBREAKPOINT { cai = c }")
    with pytest.raises(NmodlError, match="does not SOLVE"):
        translate_text(steady, "ss.mod")


def test_derivatives_of_state_arrays_stay_refused():
    text = ("NEURON { SUFFIX darr }\nSTATE { x[3] }\nBREAKPOINT { SOLVE s METHOD cnexp }\n"
            "DERIVATIVE s { FROM i = 0 TO 2 { x'[i] = -x[i] } }\n")
    with pytest.raises(NmodlError) as err:
        translate_text(text, "darr.mod")
    assert err.value.line == 4


def test_array_elements_in_from_loops_take_the_backward_euler_step(tmp_path):
    """x[0] <-> x[1] <-> x[2] (a, b) written as a FROM loop with an indexed COMPARTMENT:
    the traces of the three elements are the backward-Euler steps of the chain with the
    volumes 1, 2, 3."""
    text = """
NEURON { SUFFIX chain }
PARAMETER { a = 0.4 b = 0.1 }
ASSIGNED { vol[3] }
STATE { x[3] }
INITIAL { FROM i = 0 TO 2 { vol[i] = i + 1 }  x[0] = 1 }
BREAKPOINT { SOLVE kin METHOD sparse }
KINETIC kin {
    COMPARTMENT i, vol[i] {x}
    FROM i = 0 TO 1 { ~ x[i] <-> x[i+1] (a, b) }
}
"""
    tr = run_states(tmp_path, text, "chain", ("x__0", "x__1", "x__2"))
    a, b, vol = 0.4, 0.1, np.array([1.0, 2.0, 3.0])
    rate = np.array([[-a, b, 0.0], [a, -a - b, b], [0.0, a, -b]])
    m = np.diag(vol / DT) - rate
    x = np.array([1.0, 0.0, 0.0])
    want = [x]
    for _ in range(8):
        x = np.linalg.solve(m, vol / DT * x)
        want.append(x)
    got = np.array([tr["x__0"], tr["x__1"], tr["x__2"]]).T
    np.testing.assert_allclose(got, np.array(want), rtol=1e-12, atol=1e-15)


# ---- the tree of instances -----------------------------------------------------------------
def _branched_cell(**kw):
    """soma (L 10, 1 segment); dend (L 100, 2 segments) at soma(1); side (L 30, 3
    segments) at soma(0); mid (L 40, 1 segment) at dend(0.5)."""
    return SectionCell(["soma[0]", "dend[0]", "side[0]", "mid[0]"], [-1, 0, 0, 1],
                       [10.0, 100.0, 30.0, 40.0], [10.0, 2.0, 1.0, 0.5], nseg=[1, 2, 3, 1],
                       parent_x=[1.0, 1.0, 0.0, 0.5], **kw)


def _pool(d=0.6, c0=None):
    """A hand-written description: a state ``c`` that only diffuses (``vol`` = diam²,
    coefficient D·diam²), starting at ``c0`` (a parameter set per region)."""
    return Mechanism(
        name="difpool", kind="density", order=1000,
        parameters=(Variable("D", d, "um2/ms"), Variable("c0", 1.0, "mM")),
        states=(Variable("c", 0.0, "mM"),), assigned=(Variable("diam", 0.0, "um"),),
        initial="c = c0", geometry=("diam",),
        diffusion=(Diffusion("c", "(D * diam) * diam", "diam * diam"),))


def test_a_description_diffusing_what_is_not_its_state_is_refused():
    with pytest.raises(ValueError, match="diffusion of 'c0', which is not one of its states"):
        Mechanism(name="bad", kind="density", order=1, states=(Variable("c"),),
                  parameters=(Variable("c0"),), diffusion=(Diffusion("c0", "1.0", "1.0"),))
    with pytest.raises(ValueError, match="needs a density mechanism"):
        Mechanism(name="bad", kind="point", order=1, states=(Variable("c"),),
                  diffusion=(Diffusion("c", "1.0", "1.0"),))


def test_instances_couple_to_neurons_parents_with_its_coefficients():
    mechanisms.register(_pool())
    cell = _branched_cell().insert("difpool")
    lay = Layout([cell], dt=DT)
    parent, coef = diffusion_arrays(lay, "difpool")
    cl = lay.cells[0]
    geo = cl.geometry
    where = [cl.location_of(int(n)) for n in lay.nodes["difpool"]]
    index = {w: j for j, w in enumerate(where)}
    expect = {   # child: (parent, dx of the child, dx of the parent)
        "dend[0](0.25)": ("soma[0](0.5)", 50.0, 10.0),     # through soma's x = 1 node
        "dend[0](0.75)": ("dend[0](0.25)", 50.0, 50.0),
        "side[0](0.166667)": ("soma[0](0.5)", 10.0, 10.0),  # at the root's x = 0 node
        "side[0](0.5)": ("side[0](0.166667)", 10.0, 10.0),
        "mid[0](0.5)": ("dend[0](0.75)", 40.0, 50.0),       # NEURON's node of dend(0.5)
    }
    assert parent[index["soma[0](0.5)"]] == -1
    for child, (par, dxc, dxp) in expect.items():
        j = index[child]
        assert parent[j] == index[par], child
        assert coef[0, j] == 2.0 * 1.0 / dxp / (dxc + dxp)
        assert coef[1, j] == 2.0 / dxc / (dxc + dxp)
    assert all(parent[j] < j for j in range(parent.size))
    assert geo.n_sections == 4


def _dense_step(lay, c, d_um2_ms, dt):
    """One backward-Euler diffusion step of ``c`` over the instances, assembled as a dense
    matrix from the tree and solved with numpy."""
    parent, coef = diffusion_arrays(lay, "difpool")
    diam = lay.diam[lay.nodes["difpool"]]
    vol, dc = diam * diam, d_um2_ms * diam * diam
    n = c.size
    m = np.diag(np.full(n, 1.0 / dt))
    for i, p in enumerate(parent):
        if p < 0:
            continue
        g = (dc[i] + dc[p]) / 2.0
        m[i, i] += coef[1, i] * g / vol[i]
        m[i, p] -= coef[1, i] * g / vol[i]
        m[p, p] += coef[0, i] * g / vol[p]
        m[p, i] -= coef[0, i] * g / vol[p]
    return np.linalg.solve(m, c / dt)


@pytest.mark.parametrize("backend", ["serial", "multicore"])
def test_diffusion_step_equals_a_dense_solve_and_keeps_the_amount(backend):
    mechanisms.register(_pool(d=5.0))
    cell = _branched_cell().insert("difpool")
    cell.set("c0_difpool", 3.0, region="side")
    cell.set("c0_difpool", 0.5, region="mid")
    sim = hb.Simulation(cell, dt=DT, backend=backend)
    lay = Layout([cell], dt=DT)
    where = [lay.cells[0].location_of(int(n)) for n in lay.nodes["difpool"]]
    keys = [sim.record("c_difpool", location=w) for w in where]
    res = sim.run(10 * DT)
    got = np.array([np.asarray(res[k]).ravel() for k in keys])
    c = got[:, 0]
    geo = lay.cells[0].geometry
    old = lay.cells[0].perm[lay.nodes["difpool"] - lay.cells[0].start]
    dx = (geo.length_um / geo.nseg)[geo.section[old]]
    diam = lay.diam[lay.nodes["difpool"]]
    amount0 = np.sum(c * diam * diam * dx)
    for k in range(1, 11):
        c = _dense_step(lay, c, 5.0, DT)
        np.testing.assert_allclose(got[:, k], c, rtol=1e-12)
        amount = np.sum(got[:, k] * diam * diam * dx)
        assert amount == pytest.approx(amount0, rel=1e-13)
    assert np.max(np.abs(got[:, -1] - got[:, 0])) > 0.5     # it did diffuse


def test_cells_in_one_batch_diffuse_as_each_alone():
    mechanisms.register(_pool(d=2.0))
    cells = []
    for k in range(5):
        cell = _branched_cell().insert("difpool")
        cell.set("c0_difpool", 1.0 + k, region="side")
        cells.append(cell)

    def run(batch, backend):
        sim = hb.Simulation(batch, dt=DT, backend=backend)
        keys = [sim.record("c_difpool", cell=j, location=loc) for j in range(len(batch))
                for loc in ("side[0](0.5)", "mid[0](0.5)")]
        res = sim.run(20 * DT)
        return np.array([np.asarray(res[k]).ravel() for k in keys])

    alone = np.concatenate([run([c], "serial") for c in cells])
    assert np.array_equal(run(cells, "serial"), alone)
    assert np.array_equal(run(cells, "multicore"), alone)


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                    reason="the host build of the GPU kernel needs g++")
def test_state_arrays_without_diffusion_run_on_the_gpu_engine(tmp_path, monkeypatch):
    """A KINETIC chain of STATE array elements (no diffusion) whose last element gates a
    current: the GPU engine's host build gives the serial engine's numbers."""
    monkeypatch.setenv(EMULATION_ENV, "1")
    text = """
NEURON { SUFFIX gchain NONSPECIFIC_CURRENT i RANGE g }
PARAMETER { a = 0.4 (/ms) b = 0.1 (/ms) g = 0.001 (S/cm2) }
ASSIGNED { v (mV) i (mA/cm2) vol[3] }
STATE { x[3] }
INITIAL { FROM i = 0 TO 2 { vol[i] = i + 1 }  x[0] = 1 }
BREAKPOINT { SOLVE kin METHOD sparse  i = g*x[2]*(v + 20) }
KINETIC kin {
    COMPARTMENT i, vol[i] {x}
    FROM i = 0 TO 1 { ~ x[i] <-> x[i+1] (a*exp(v/50), b) }
}
"""
    (tmp_path / "gchain.mod").write_text(text)
    hb.load_mechanisms(tmp_path / "gchain.mod")
    swc = tmp_path / "soma.swc"
    swc.write_text("1 1 0 0 0 10 -1\n")

    def run(backend):
        cell = hb.Cell(str(swc), nseg=1).insert("hh").insert("gchain")
        cell.place("IClamp", "soma[0](0.5)", delay=1.0, dur=5.0, amp=0.3)
        sim = hb.Simulation(cell, dt=DT, backend=backend)
        keys = [sim.record("v"), sim.record("x__2_gchain")]
        res = sim.run(10.0)
        return [np.asarray(res[k]) for k in keys]

    serial, gpu = run("serial"), run("gpu")
    assert all(np.array_equal(a, b) for a, b in zip(serial, gpu))
    assert np.ptp(serial[1]) > 0.05


def test_the_gpu_backend_refuses_diffusion_before_the_run(monkeypatch):
    monkeypatch.setenv(EMULATION_ENV, "1")
    mechanisms.register(_pool())
    sim = hb.Simulation(_branched_cell().insert("difpool"), dt=DT, backend="gpu")
    with pytest.raises(ValueError, match=r"difpool: longitudinal diffusion .* gpu backend"):
        sim.run(1.0)
