"""The vectorized copy of the C library's exp used by the cnexp state updates."""
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


@pytest.mark.skipif(not libm_exp.matches_libm(), reason="the C library is not glibc's FMA exp")
def test_fast_exp_gives_the_c_library_bits():
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.uniform(-40.0, 40.0, 200_000), rng.uniform(-0.1, 0.0, 200_000)])
    out = np.empty_like(x)
    libm_exp._fast_all(x, out)
    ref = np.array([math.exp(v) for v in x.tolist()])
    assert np.array_equal(out.view(np.uint64), ref.view(np.uint64))


def test_vector_exp_can_be_turned_off(monkeypatch, tmp_path):
    monkeypatch.setattr(libm_exp, "_ENABLED", None)
    monkeypatch.setenv("HINESBATCH_VECTOR_EXP", "0")
    assert libm_exp.vector_exp_enabled() is False
    monkeypatch.setenv("HINESBATCH_VECTOR_EXP", "1")
    assert libm_exp.vector_exp_enabled() is libm_exp.matches_libm()
    monkeypatch.setattr(libm_exp, "_ENABLED", None)
    monkeypatch.setenv("HINESBATCH_VECTOR_EXP", "0")
    assert libm_exp.vector_exp_enabled(tmp_path) is False


def test_cnexp_pass_falls_back_to_calls_out_of_range():
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

    assert "_exp_fast(x)" in hoc_exp_source(True)
    assert "_exp_fast" not in hoc_exp_source(False)


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
