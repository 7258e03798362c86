"""NEURON's scoplib random numbers: the generator, their lowering, the stream of a run and
the backends that refuse it.

The generator's values are derived here from its definition (NEURON's ``scop_random``, a
32-bit linear congruential generator); the kernels must give the Python reference's bits.
Runs use ``tests/data/nmodl/noisyi.mod`` (normrand in BREAKPOINT and in the PROCEDURE it
SOLVEs) and ``expinit.mod`` (set_seed, exprand, poisrand, scop_random in INITIAL).
"""
from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("neuron.nmodl", reason="the NMODL parser comes with `pip install neuron`")

import hinesbatch as hb
from hinesbatch.mechanisms.codegen import (
    CodegenError,
    MechanismCode,
    drawing_functions,
    stream_blocks,
)
from hinesbatch.mechanisms.description import Mechanism, Variable
from hinesbatch.mechanisms.scoprand import ScopRandom, numba_source, seed_value
from hinesbatch.nmodl import NmodlError, translate, translate_text
from hinesbatch.sim import RandomStreamError

DATA = Path(__file__).parents[1] / "data" / "nmodl"

pytestmark = pytest.mark.usefixtures("builtins_only")


# ---- the generator -------------------------------------------------------------------------
def test_first_states_from_a_fresh_stream():
    """s = (2147437301 s + 453816981) mod 2**32 from s = 1, u = s / (2**32 - 1)."""
    r = ScopRandom()
    states = []
    for _ in range(3):
        u = r.scop_random()
        states.append(r.state)
        assert u == r.state / 4294967295.0
    assert states == [2601254282, 4148575143, 1390088040]


def test_normrand_is_the_polar_method_over_two_draws():
    u1, u2 = 2601254282 / 4294967295.0, 4148575143 / 4294967295.0
    v1, v2 = 2.0 * u1 - 1.0, 2.0 * u2 - 1.0
    w = v1 * v1 + v2 * v2
    assert w < 1.0                      # accepted at the first pair
    r = ScopRandom()
    assert r.normrand(3.0, 0.5) == v1 * math.sqrt(-2.0 * math.log(w) / w) * 0.5 + 3.0
    assert r.state == 4148575143


def test_normrand_rejects_pairs_outside_the_unit_disc():
    """A pair with v1² + v2² >= 1 is drawn again: find one and count the draws."""
    r = ScopRandom(seed=12345)
    probe = ScopRandom(seed=12345)
    for _ in range(50):
        v1, v2 = 2.0 * probe.scop_random() - 1.0, 2.0 * probe.scop_random() - 1.0
        used = 2
        while v1 * v1 + v2 * v2 >= 1.0:
            v1, v2 = 2.0 * probe.scop_random() - 1.0, 2.0 * probe.scop_random() - 1.0
            used += 2
        before = r.state
        r.normrand(0.0, 1.0)
        assert r.state == probe.state
        if used > 2:
            break
    else:
        pytest.fail("no rejected pair in 50 draws")
    assert before != r.state


def test_exprand_and_poisrand():
    r = ScopRandom()
    assert r.exprand(2.0) == -2.0 * math.log(2601254282 / 4294967295.0)
    r = ScopRandom()
    # poisrand(3): multiply draws while the product stays >= exp(-3)
    q, n, probe = 1.0, 0, ScopRandom()
    while q >= math.exp(-3.0):
        q *= probe.scop_random()
        n += 1
    assert r.poisrand(3.0) == float(n - 1)
    assert r.state == probe.state


@pytest.mark.parametrize("seed, state", [(7.9, 7), (-1, 4294967295), (-2.5, 4294967294),
                                         (2**32 + 3, 3), (0, 0)])
def test_seed_is_cast_as_c_casts_to_uint32(seed, state):
    assert seed_value(seed) == state
    assert ScopRandom(seed).state == state


@pytest.mark.parametrize("seed", [float("nan"), float("inf"), 2.0**63, True, "1"])
def test_bad_seeds_are_refused(seed):
    with pytest.raises(ValueError, match="seed must be a finite number"):
        seed_value(seed)


def test_kernel_functions_give_the_references_bits():
    import numba

    # the source's namespace; Numba caches functions of files only
    space = {"math": math, "njit": lambda cache=False, **kw: numba.njit(**kw)}
    exec(compile(numba_source(), "<scoprand>", "exec"), space)  # noqa: S102 - our source
    rs = np.array([seed_value(977)], dtype=np.int64)
    ref = ScopRandom(977)
    for k in range(300):
        assert space["_rand_normrand"](rs, 0.5, 2.0) == ref.normrand(0.5, 2.0)
        assert space["_rand_exprand"](rs, 3.0) == ref.exprand(3.0)
        assert space["_rand_poisrand"](rs, 4.0) == ref.poisrand(4.0)
        assert space["_rand_scop_random"](rs) == ref.scop_random()
        assert rs[0] == ref.state
    space["_rand_set_seed"](rs, -3.7)
    assert rs[0] == seed_value(-3.7)


# ---- lowering ------------------------------------------------------------------------------
def test_files_translate_with_their_calls_located():
    m = translate(DATA / "noisyi.mod").mechanism
    assert "normrand(0.0, 1.0)" in m.breakpoint
    assert "normrand" in next(p.body for p in m.procedures if p.name == "walk")
    assert m.state.strip() == "walk()"
    lines = (DATA / "noisyi.mod").read_text().splitlines()
    for call in m.stream_calls:
        path, line, what = call.split(":", 2)
        assert path.endswith("noisyi.mod")
        assert what.strip()[:-2] in lines[int(line) - 1]
    assert {c.split(":")[-1].strip() for c in m.stream_calls} == {"normrand()", "set_seed()"}
    assert stream_blocks(m) == ("breakpoint", "state")
    e = translate(DATA / "expinit.mod").mechanism
    assert stream_blocks(e) == ("initial",)
    assert "set_seed(seed)" in e.initial


BASE = """
NEURON {{ POINT_PROCESS p NONSPECIFIC_CURRENT i RANGE x }}
PARAMETER {{ s = 1 }}
ASSIGNED {{ v (mV) i (nA) x }}
STATE {{ y }}
{body}
"""


def refused(body: str) -> NmodlError:
    text = BASE.format(body=body)
    with pytest.raises(NmodlError) as err:
        translate_text(text, "r.mod")
    line = next(k + 1 for k, ln in enumerate(text.splitlines()) if "<-- here" in ln)
    assert err.value.line == line, str(err.value)
    return err.value


@pytest.mark.parametrize("body, words", [
    (("BREAKPOINT { i = f(v) }\nFUNCTION f(a) {\n TABLE FROM -100 TO 100 WITH 200\n"
      " f = a*normrand(0, 1) : <-- here\n}"), "FUNCTION f"),
    ("BREAKPOINT { i = 0 }\nNET_RECEIVE(w) { INITIAL { x = exprand(1) : <-- here\n} }",
     "NET_RECEIVE INITIAL"),
    (("BREAKPOINT { SOLVE d METHOD cnexp i = y }\n"
      "DERIVATIVE d { y' = -y + scop_random() : <-- here\n}"), "DERIVATIVE d"),
])
def test_draws_outside_initial_breakpoint_and_net_receive_are_refused(body, words):
    err = refused(body)
    assert "random numbers drawn in" in err.reason and words in err.reason


@pytest.mark.parametrize("callee, kind", [
    ("PROCEDURE kick() { x = normrand(0, 1) }", "PROCEDURE"),
    ("FUNCTION kick() { kick = exprand(1) }", "FUNCTION"),
    ("FUNCTION kick() { kick = g() }\nFUNCTION g() { g = exprand(1) }", "FUNCTION")])
def test_a_drawing_callee_called_from_a_derivative_block_is_refused(callee, kind):
    err = refused(f"BREAKPOINT {{ SOLVE d METHOD cnexp i = y }}\n{callee}\n"
                  "DERIVATIVE d { y' = -y + kick() : <-- here\n}"
                  if kind == "FUNCTION" else
                  f"BREAKPOINT {{ SOLVE d METHOD cnexp i = y }}\n{callee}\n"
                  "DERIVATIVE d {\n kick() : <-- here\n y' = -y }")
    assert f"a {kind} that draws random numbers" in err.reason


def test_draws_in_net_receive_and_functions_are_lowered():
    m = translate_text(BASE.format(body=(
        "BREAKPOINT { i = f(v) }\nFUNCTION f(a) { f = a*g() }\n"
        "FUNCTION g() { g = normrand(0, 1) }\n"
        "NET_RECEIVE(w) { x = exprand(1)\n x = x + f(2) }")), "r.mod").mechanism
    assert "exprand(1.0)" in m.net_receive
    assert stream_blocks(m) == ("breakpoint", "net_receive", "function")
    assert drawing_functions(m) == {"f", "g"}
    src = MechanismCode(m).module_functions()
    assert "def _F_p_g(_celsius, _RS):" in src
    assert "_F_p_g(_celsius, _RS)" in src.split("def _F_p_f")[1]
    assert "def _net_receive_p(_D_p, _j, _w, _t, _dt, _celsius, _flag, _RS, _S):" in src


def test_a_call_of_a_drawing_function_counts_as_a_draw():
    err = refused("BREAKPOINT { i = g() + normrand(0, 1) : <-- here\n}\n"
                  "FUNCTION g() { g = normrand(0, 1) }")
    assert "two random draws in one expression" in err.reason


def test_two_draws_in_one_expression_are_refused():
    err = refused("BREAKPOINT { i = normrand(0, 1) - 2*exprand(1) : <-- here\n}")
    assert "two random draws in one expression" in err.reason


def test_set_seed_as_a_value_and_other_generators_are_refused():
    assert "as a value" in refused("BREAKPOINT { i = set_seed(1) : <-- here\n}").reason
    assert "other than NEURON's scoplib" in refused(
        "BREAKPOINT { i = unirand() : <-- here\n}").reason
    assert "takes 2" in refused("BREAKPOINT { i = normrand(1) : <-- here\n}").reason


def test_codegen_refuses_draws_where_the_stream_is_not_passed():
    mech = Mechanism(name="rnr", kind="point", order=50, assigned=(Variable("x"),),
                     net_receive="x = 1.0", net_receive_args=("y",),
                     net_receive_initial="y = normrand(0.0, 1.0)")
    with pytest.raises(CodegenError, match="random numbers are drawn in INITIAL"):
        MechanismCode(mech).module_functions()


@pytest.mark.parametrize("name", ["noisyi.mod", "expinit.mod"])
def test_the_c_emitter_refuses_draws_with_the_backend_to_use(name):
    from hinesbatch.mechanisms.c_emitter import emit_c

    with pytest.raises(CodegenError, match="backend='serial'"):
        emit_c(translate(DATA / name).mechanism)


# ---- runs ----------------------------------------------------------------------------------
@pytest.fixture
def loaded():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hb.load_mechanisms(DATA / "noisyi.mod")
        hb.load_mechanisms(DATA / "expinit.mod")


def cells(soma, n=2, seeds=(5,)):
    out = []
    for k in range(n):
        c = hb.Cell(str(soma), nseg=1).insert("hh")
        c.insert("expinit", seed=seeds[k] if k < len(seeds) else -1)
        c.place("NoisyI", "soma[0](0.5)")
        out.append(c)
    return out


def run(sim, n, tstop=5.0):
    keys = [sim.record("v", cell=k) for k in range(n)]
    keys += [sim.record("g_expinit", cell=k) for k in range(n)]
    keys += [sim.record("k_expinit", cell=k) for k in range(n)]
    r = sim.run(tstop)
    return np.array([r[k] for k in keys])


def test_initial_draws_in_neurons_order(loaded, soma):
    """INITIAL runs mechanism by mechanism, instance by instance: expinit of cell 0 sets
    the seed and draws g, k, then cell 1 draws from where it left the stream."""
    sim = hb.Simulation(cells(soma, 3), backend="serial")
    out = run(sim, 3, tstop=0.1)
    ref = ScopRandom()
    ref.set_seed(5)
    for k in range(3):
        g = 0.0002 * ref.exprand(1.0)
        kk = ref.poisrand(3.0)
        kk = kk + ref.scop_random()
        assert out[3 + k, 0] == g and out[6 + k, 0] == kk


def test_runs_repeat_and_continue_the_stream(loaded, soma):
    a = hb.Simulation(cells(soma, seeds=()), backend="serial")
    assert a.random_state == 1
    first = run(a, 2)
    after_first = a.random_state
    assert after_first != 1
    b = hb.Simulation(cells(soma, seeds=()), backend="serial")
    np.testing.assert_array_equal(run(b, 2), first)        # a fresh stream: the same run
    second = run(a, 2)                                     # continues the stream
    assert not np.array_equal(second[:2], first[:2])
    c = hb.Simulation(cells(soma, seeds=()), backend="serial")
    c.set_random_seed(after_first)
    np.testing.assert_array_equal(run(c, 2), second)
    assert c.random_state == a.random_state


def test_set_random_seed_checks_its_value(loaded, soma):
    sim = hb.Simulation(cells(soma, 1))
    sim.set_random_seed(-1)
    assert sim.random_state == 4294967295
    with pytest.raises(ValueError, match="seed must be a finite number"):
        sim.set_random_seed(float("nan"))


def test_event_steps_draw_as_epochs_do(loaded, soma):
    """A NetCon of delay < dt/2 makes the engine step one step at a time (``advance``),
    all cells at once there too: a NetCon of weight 0 changes nothing, not even the
    stream's order."""
    def trial(with_netcon):
        cs = cells(soma, 3, seeds=())
        syns = [c.place("ExpSyn", "soma[0](0.5)") for c in cs]
        sim = hb.Simulation(cs, backend="serial")
        if with_netcon:
            sim.connect((0, "soma[0](0.5)"), syns[1], weight=0.0, delay=0.001)
        return run(sim, 3, tstop=3.0), sim.random_state

    assert all(np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b
               for a, b in zip(trial(False), trial(True)))


def test_parallel_backends_refuse_a_drawing_mechanism(loaded, soma):
    for backend in ("multicore", "gpu"):
        sim = hb.Simulation(cells(soma), backend=backend)
        with pytest.raises(RandomStreamError) as err:
            sim.run(1.0)
        e = err.value
        assert e.mechanism in ("expinit", "NoisyI") and e.backend == backend
        assert "backend='serial'" in str(e)
        assert any(c.split(":")[0].endswith(".mod") and c.split(":")[1].isdigit()
                   for c in e.calls), e.calls


def test_auto_runs_a_drawing_mechanism_serially(loaded, soma):
    sim = hb.Simulation(cells(soma))
    assert sim.backend == "multicore"
    out = run(sim, 2, tstop=1.0)
    assert sim.backend == "serial"
    np.testing.assert_array_equal(out, run(hb.Simulation(cells(soma), backend="serial"),
                                           2, tstop=1.0))


def test_mechanisms_without_draws_keep_their_kernels(soma):
    """A model without random numbers takes no stream argument and keeps its backend."""
    from hinesbatch.engine.kernels import generate_source

    src = generate_source([hb.mechanisms.get("hh")], tables=True, parallel=False)
    assert "_RS" not in src and "_rand_" not in src
    cs = [hb.Cell(str(soma), nseg=1).insert("hh") for _ in range(2)]
    sim = hb.Simulation(cs)
    sim.run(0.5)
    assert sim.backend == "multicore"
