"""The vectorized copy of the C library's exp (NEURON's hoc_Exp) in the CPU kernels."""
import math

import numpy as np
import pytest

import hinesbatch as hb
from hinesbatch.engine.kernels import generate_source
from hinesbatch.mechanisms import libm_exp


def test_range_predicate_edges():
    inside = [2.0**-54, -2.0**-54, 1.0, -745.0 / 2, 511.99999, -511.99999]
    outside = [0.0, 2.0**-55, 512.0, -512.0, 700.0, -701.0, math.inf, -math.inf, math.nan]
    assert all(libm_exp.exp_in_range(x) for x in inside)
    assert not any(libm_exp.exp_in_range(x) for x in outside)


needs_glibc = pytest.mark.skipif(not libm_exp.matches_libm(),
                                 reason="the C library is not glibc's FMA exp")


@needs_glibc
def test_hoc_exp_gives_the_c_library_bits_everywhere():
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.uniform(-40.0, 40.0, 200_000), rng.uniform(-0.1, 0.0, 200_000),
                        rng.uniform(-750.0, -500.0, 50_000), rng.uniform(500.0, 750.0, 50_000),
                        rng.uniform(-2.0**-50, 2.0**-50, 1000)])
    out = np.full_like(x, np.nan)
    libm_exp.hoc_exp_all(x, out)
    ref = np.array([libm_exp.hoc_exp_reference(v) for v in x.tolist()])
    assert np.array_equal(out.view(np.uint64), ref.view(np.uint64))


def test_hoc_exp_limits_and_nan():
    """hoc_Exp's clamps hold whatever the C library: 0 below -700, exp(700) above."""
    out = np.full(5, -1.0)
    libm_exp.hoc_exp_all(np.array([-700.5, -1e300, 700.5, math.inf, math.nan]), out)
    assert out[0] == 0.0 and out[1] == 0.0
    assert out[2] == math.exp(700.0) and out[3] == math.exp(700.0)
    assert math.isnan(out[4])


@needs_glibc
def test_common_path_equals_the_whole_copy_in_its_range():
    rng = np.random.default_rng(8)
    x = rng.uniform(-511.0, 511.0, 100_000)
    whole = np.empty_like(x)
    libm_exp.hoc_exp_all(x, whole)
    assert all(libm_exp.exp_in_range(v) for v in x[:1000])
    common = np.array([libm_exp.exp_fast(v) for v in x[:20_000]])
    assert np.array_equal(common.view(np.uint64), whole[:20_000].view(np.uint64))


def test_vector_exp_can_be_turned_off(monkeypatch, tmp_path):
    monkeypatch.setattr(libm_exp, "_ENABLED", None)
    monkeypatch.setenv("HINESBATCH_VECTOR_EXP", "0")
    assert libm_exp.vector_exp_enabled() is False
    monkeypatch.setenv("HINESBATCH_VECTOR_EXP", "1")
    assert libm_exp.vector_exp_enabled() is libm_exp.matches_libm()
    monkeypatch.setattr(libm_exp, "_ENABLED", None)
    monkeypatch.setenv("HINESBATCH_VECTOR_EXP", "0")
    assert libm_exp.vector_exp_enabled(tmp_path) is False


def test_cnexp_pass_falls_back_to_hoc_exp_out_of_range():
    hh = hb.mechanisms.get("hh")
    on = generate_source([hh], tables=True, parallel=False, vector_exp=True)
    off = generate_source([hh], tables=True, parallel=False, vector_exp=False)
    # one pass in the single step and one in the many-step loop of a cell
    assert on.count("_exp_fast(_xv_hh_") == 6 and on.count("_exp_in_range(_xv_hh_") == 6
    assert "else:\n        for _j in range(_n_hh):\n            _xv_hh_0[_j] = _hoc_exp(" in on
    assert "_exp_fast" not in off and off.count("= _hoc_exp(_xv_hh_") == 6
    assert on.count("= _hoc_exp(_xv_hh_") == 6


def test_hoc_exp_takes_the_fast_path_only_when_asked():
    from hinesbatch.mechanisms.codegen import hoc_exp_source

    assert "_hoc_exp_vector(x)" in hoc_exp_source(True)
    assert "_hoc_exp_vector" not in hoc_exp_source(False)
    assert "math.exp(x)" in hoc_exp_source(False)


def test_the_check_is_remembered_per_machine(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(libm_exp, "matches_libm", lambda: calls.append(1) or True)
    assert libm_exp._cached_check(tmp_path) is True
    assert libm_exp._cached_check(tmp_path) is True
    assert calls == [1]
    (saved,) = tmp_path.glob("libm_exp_*.txt")
    saved.write_text("0\n")  # the stored answer is the one used
    assert libm_exp._cached_check(tmp_path) is False
    saved.write_text("garbage")  # an unreadable answer is checked again
    assert libm_exp._cached_check(tmp_path) is True and calls == [1, 1]


def test_bench_commands_run_with_bytecode_caching(monkeypatch):
    """The whole-command timing runs the commands as installed: bytecode may be cached."""
    import subprocess

    from hinesbatch.bench import sim as bench_sim

    seen = {}
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setattr(subprocess, "run", lambda argv, **kw: seen.update(kw) or
                        subprocess.CompletedProcess(argv, 0, "", ""))
    bench_sim.time_command(["true"])
    assert "PYTHONDONTWRITEBYTECODE" not in seen["env"]


def test_generated_module_names_the_exp_version(monkeypatch):
    """A changed libm_exp gives another kernel source (another module, another cache)."""
    from hinesbatch.engine import kernels

    hh = hb.mechanisms.get("hh")
    first = generate_source([hh], tables=True, parallel=False, vector_exp=True)
    monkeypatch.setattr(kernels, "_libm_exp_digest", lambda: "0123456789abcdef")
    second = generate_source([hh], tables=True, parallel=False, vector_exp=True)
    assert first != second and "# libm_exp 0123456789abcdef" in second


def _parsed_if(text: str):
    import ast

    return ast.parse(text).body[0]


def test_only_value_picking_if_else_becomes_selects():
    from hinesbatch.mechanisms.codegen import _selectable

    assert _selectable(_parsed_if("if fabs(x/y) < 1e-6:\n r = y*2\nelse:\n r = x/(exp(x/y) - 1)"))
    assert _selectable(_parsed_if("if a:\n p = 1\n q = 2\nelse:\n q = 3\n p = b"))
    rejected = ["if a:\n x = 1",                                    # no else
                "if a:\n x = 1\nelse:\n y = 2",                     # other names
                "if a:\n x = 1\n x = 2\nelse:\n x = 3",             # twice
                "if a:\n x = 1\n y = x\nelse:\n x = 2\n y = 3",     # reads a picked name
                "if a:\n x = f(1)\nelse:\n x = 2",                  # a FUNCTION: may write
                "if a:\n x = 1\nelse:\n x = normrand(0, 1)",        # a random draw
                "if f(a):\n x = 1\nelse:\n x = 2",
                "if a:\n x = 1\nelse:\n if b:\n  x = 2\n else:\n  x = 3"]
    for text in rejected:
        assert not _selectable(_parsed_if(text)), text


def test_vectorized_module_picks_vtrap_and_gathers_v():
    hh = hb.mechanisms.get("hh")
    on = generate_source([hh], tables=False, parallel=False, vector_exp=True)
    off = generate_source([hh], tables=False, parallel=False, vector_exp=False)
    assert "_l_vtrap = _s1a0 if _s1 else _s1b0" in on and "    if (math.fabs(" not in on
    assert "    if (math.fabs((_a_x / _a_y)) < 1e-06):" in off
    assert on.count("_xv_hh_0[_j] = v[_nv_hh[_j]]") == 2      # the step and the cell loop
    assert "_xv_hh_0[_j] = v[" not in off


@needs_glibc
@pytest.mark.parametrize("tables", [False, True])
def test_vectorized_and_called_exp_give_the_same_run(monkeypatch, tables):
    """The module with the vectorized hoc_Exp, selects and gathered v steps the same bits
    as the one that calls the C library (hh exact and tabled, a spiking real cell)."""
    from pathlib import Path

    path = Path(__file__).parents[1] / "data/morphologies/real/mp_ma_40984_gc2.CNG.swc"
    traces = []
    for flag in ("1", "0"):
        monkeypatch.setenv("HINESBATCH_VECTOR_EXP", flag)
        cell = hb.Cell(hb.read_swc(path), d_lambda=0.1, ra=100.0)
        cell.insert("hh")
        cell.place("IClamp", "soma[0](0.5)", delay=1.0, dur=20.0, amp=1.0)
        sim = hb.Simulation([cell], dt=0.025, tables=tables)
        v = sim.record("v", cell=0, location="soma[0](0.5)")
        m = sim.record("m_hh", cell=0, location="soma[0](0.5)")
        res = sim.run(20.0)
        traces.append((np.array(res[v], copy=True), np.array(res[m], copy=True)))
    (v1, m1), (v0, m0) = traces
    assert v1.max() > 0.0                                      # it fires
    assert np.array_equal(v1.view(np.uint64), v0.view(np.uint64))
    assert np.array_equal(m1.view(np.uint64), m0.view(np.uint64))
