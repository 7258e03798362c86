"""The C emitter prints the same code blocks as C; compiled (no FMA contraction) they give
NEURON's numbers, the same as the Numba code."""
from __future__ import annotations

import shutil
import subprocess

import pytest

import hinesbatch as hb
from hinesbatch.mechanisms.c_emitter import C_PRELUDE, emit_c

CC = shutil.which("cc") or shutil.which("gcc")

DRIVER = r"""
#include <stdio.h>
int main(void) {
    double out[6], table[6*201];
    hh_rates_exact(-65.0, 6.3, 0.025, out);
    for (int k = 0; k < 6; ++k) printf("%.17g\n", out[k]);
    hh_rates_build(6.3, 0.025, table);
    hh_rates_lookup(-64.3, table, out);
    printf("%.17g\n%.17g\n", out[0], out[3]);
    /* Exp2Syn: fields tau1 tau2 e A B i g factor, one instance */
    double D[8] = {0.5, 5.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    Exp2Syn_initial(D, 1, 0, -65.0, 0.0, 0.025, 6.3, 0);
    printf("%.17g\n", D[7]);
    /* hh: initial, one current evaluation and one state update at -64 mV */
    double H[20] = {0.12, 0.036, 0.0003, -54.3, 50.0, 0.0, -77.0, 0.0};
    hh_initial(H, 1, 0, -65.0, 0.0, 0.025, 6.3, table);
    printf("%.17g\n", hh_current(H, 1, 0, -65.0, 0.0125, 0.025, 6.3, table));
    hh_state(H, 1, 0, -64.0, 0.025, 0.025, 6.3, table);
    printf("%.17g\n%.17g\n%.17g\n", H[8], H[9], H[10]);
    return 0;
}
"""


def test_c_source_has_every_block():
    src = emit_c(hb.mechanisms.get("hh"))
    for name in ("hh_vtrap", "hh_rates_exact", "hh_rates_build", "hh_rates_lookup",
                 "hh_initial", "hh_current", "hh_state"):
        assert f" {name}(" in src
    assert "hoc_Exp(" in src and "exp(" not in src.replace("hoc_Exp(", "")
    # every division of the description goes through hb_div, which a build may redefine
    assert "hb_div(" in src and "/" not in src.split("*/")[-1].replace("hb_div(", "")
    syn = emit_c(hb.mechanisms.get("ExpSyn"))
    assert "ExpSyn_net_receive" in syn and "D[2*n + j] = (D[2*n + j] + weight);" in syn
    assert "del" not in emit_c(hb.mechanisms.get("IClamp")).replace("D[", "")


@pytest.mark.skipif(CC is None, reason="no C compiler")
def test_compiled_c_gives_neuron_numbers(tmp_path):
    src = C_PRELUDE + "\n".join(emit_c(hb.mechanisms.get(m)) for m in ("Exp2Syn", "hh"))
    (tmp_path / "mech.c").write_text(src + DRIVER)
    exe = tmp_path / "mech"
    subprocess.run([CC, "-O2", "-ffp-contract=off", "-fno-fast-math", str(tmp_path / "mech.c"),
                    "-o", str(exe), "-lm"], check=True)
    values = [float(x) for x in subprocess.run([str(exe)], check=True, capture_output=True,
                                               text=True).stdout.split()]
    assert values[:6] == [0.05293248525724958, 0.2367668786856876, 0.5961207535084603,
                          8.516010764406575, 0.3176769140606974, 5.458584687514421]
    assert values[6:8] == [0.05754013588372681, 8.450055239828691]
    assert values[8] == 1.435055183349871
    # the same steps through the Numba code
    import numpy as np

    from hinesbatch.engine.kernels import kernel_module

    mod = kernel_module([hb.mechanisms.get("hh")], tables=True, parallel=False).module
    table = mod._build_hh_rates(6.3, 0.025)
    mech = hb.mechanisms.get("hh")
    D = np.array([[f.default] for f in mech.fields])
    mod._initial_hh(D, np.zeros(1, dtype=np.int64), np.full(1, -65.0), 0.0, 0.025, 6.3, table)
    minf, mtau = D[mech.field_names.index("minf"), 0], D[mech.field_names.index("mtau"), 0]
    m0 = D[mech.field_names.index("m"), 0]
    assert m0 == values[0]
    # one cnexp step of m at -64 mV, as nocmodl writes it
    lk = mod._L_hh_rates(-64.0, table)
    k = (-1.0) / lk[1]
    m1 = m0 + (1.0 - mod._hoc_exp(0.025 * k)) * (-(lk[0] / lk[1]) / k - m0)
    assert values[10] == m1
    assert (minf, mtau) == (values[0], values[1])
