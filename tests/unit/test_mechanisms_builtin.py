"""Mechanism descriptions and their code generator: NEURON's numbers for hh's rates (exact
and TABLE) and Exp2Syn's factor (NEURON-COMPAT-ACTIVE §12), and the statement language."""
from __future__ import annotations

import math

import numpy as np
import pytest

import hinesbatch as hb
from hinesbatch.engine.kernels import kernel_module
from hinesbatch.mechanisms.codegen import CodegenError, MechanismCode
from hinesbatch.mechanisms.description import Mechanism, Variable

RATES_65 = {"minf": 0.05293248525724958, "mtau": 0.2367668786856876,
            "hinf": 0.5961207535084603, "htau": 8.516010764406575,
            "ninf": 0.3176769140606974, "ntau": 5.458584687514421}


@pytest.fixture(scope="module")
def hh_module():
    return kernel_module([hb.mechanisms.get("hh")], tables=True, parallel=False).module


def test_names_and_descriptions():
    assert hb.mechanisms.names() == ["pas", "IClamp", "SEClamp", "ExpSyn", "Exp2Syn", "hh",
                                     "NetStim", "VecStim"]
    hh = hb.mechanisms.get("hh")
    assert [(p.name, p.default, p.unit) for p in hh.parameters] == [
        ("gnabar", 0.12, "S/cm2"), ("gkbar", 0.036, "S/cm2"), ("gl", 0.0003, "S/cm2"),
        ("el", -54.3, "mV")]
    assert [s.name for s in hh.states] == ["m", "h", "n"]
    assert hh.parameter_names[-2:] == ("ena", "ek")
    assert {v.name: v.default for v in hh.ion_variables}["ena"] == 50.0
    with pytest.raises(ValueError, match="unknown mechanism 'kdr'; valid names: pas"):
        hb.mechanisms.get("kdr")


def test_hh_rates_exact_at_minus_65(hh_module):
    out = hh_module._P_hh_rates(-65.0, 6.3, 0.025)
    names = ("minf", "mtau", "hinf", "htau", "ninf", "ntau")
    assert dict(zip(names, out)) == RATES_65


def test_hh_table_at_minus_65_and_minus_64_3(hh_module):
    table = hh_module._build_hh_rates(6.3, 0.025)
    assert table.shape == (6, 201)
    assert np.array_equal(table[:, 35], hh_module._P_hh_rates(-65.0, 6.3, 0.025))
    # the lookup as nocmodl writes it: integer mV rows agree with the exact rates
    minf, _, _, htau, _, _ = hh_module._L_hh_rates(-65.0, table)
    assert (minf, htau) == (RATES_65["minf"], RATES_65["htau"])
    minf, _, _, htau, _, _ = hh_module._L_hh_rates(-64.3, table)
    assert (minf, htau) == (0.05754013588372681, 8.450055239828691)
    exact = hh_module._P_hh_rates(-64.3, 6.3, 0.025)
    assert (exact[0], exact[3]) == (0.057467082514940315, 8.454321431595629)
    # outside the table: its end rows; NaN gives NaN
    assert hh_module._L_hh_rates(-150.0, table) == tuple(table[:, 0])
    assert hh_module._L_hh_rates(150.0, table) == tuple(table[:, 200])
    assert all(math.isnan(x) for x in hh_module._L_hh_rates(math.nan, table))


def test_hh_q10_follows_celsius(hh_module):
    cold, warm = hh_module._P_hh_rates(-65.0, 6.3, 0.025), hh_module._P_hh_rates(-65.0, 16.3, 0.025)
    assert warm[0] == cold[0]                      # minf does not depend on celsius
    assert warm[1] == pytest.approx(cold[1] / 3.0, rel=1e-15)


def test_vtrap_series_branch(hh_module):
    # at v = -40, x/y = 0: vtrap takes the series branch y·(1 - x/y/2) = 10
    assert hh_module._F_hh_vtrap(0.0, 10.0, 6.3) == 10.0
    assert hh_module._F_hh_vtrap(-1e-6, 10.0, 6.3) == 10.0 * (1.0 - -1e-6 / 10.0 / 2.0)


def test_hoc_exp_cuts_at_700(hh_module):
    assert hh_module._hoc_exp(-700.5) == 0.0
    assert hh_module._hoc_exp(800.0) == math.exp(700.0)
    assert hh_module._hoc_exp(1.5) == math.exp(1.5)


@pytest.mark.parametrize("tau1, tau2, factor", [(0.5, 5.0, 1.435055183349871),
                                                (0.1, 10.0, 1.0581977300905705)])
def test_exp2syn_factor(tau1, tau2, factor):
    module = kernel_module([hb.mechanisms.get("Exp2Syn")], tables=True, parallel=False).module
    mech = hb.mechanisms.get("Exp2Syn")
    data = np.array([[f.default] for f in mech.fields])
    data[mech.field_names.index("tau1"), 0] = tau1
    data[mech.field_names.index("tau2"), 0] = tau2
    module._initial_Exp2Syn(data, np.zeros(1, dtype=np.int64), np.full(1, -65.0), 0.0,
                            0.025, 6.3)
    assert data[mech.field_names.index("factor"), 0] == factor


def _toy(**blocks) -> Mechanism:
    return Mechanism(name="toy", kind="density", order=50,
                     parameters=(Variable("g", 1.0),), assigned=(Variable("i"),),
                     currents=("i",), **blocks)


@pytest.mark.parametrize("code, why", [
    ("i = [g]", "not in the statement language"),
    ("for k in range(3):\n    i = g", "only assignments"),
    ("i, g = 1, 2", "one name at a time"),
    ("i = foo(v)", "not in the statement language"),
    ("rates(v)", "unknown procedure"),
    ("i = g +", "invalid syntax"),
])
def test_statement_language_refuses_other_python(code, why):
    with pytest.raises(CodegenError, match=why):
        MechanismCode(_toy(breakpoint=code)).current_loop(1)


def test_keyword_names_take_an_underscore():
    code = MechanismCode(hb.mechanisms.get("IClamp")).current_loop(1)
    assert "_c_del" in code and "del_" not in code


def test_generated_source_is_cached_by_content(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    from hinesbatch.engine import kernels

    monkeypatch.setattr(kernels, "_LOADED", {})
    monkeypatch.setattr(kernels, "_MODULES", {})
    km = kernels.kernel_module([hb.mechanisms.get("pas")], tables=True, parallel=False)
    files = list((tmp_path / "hinesbatch" / "kernels").glob("hb_kernel_*.py"))
    assert len(files) == 1 and files[0].read_text().startswith("# Generated by hinesbatch")
    assert km.module.__name__ == files[0].stem
