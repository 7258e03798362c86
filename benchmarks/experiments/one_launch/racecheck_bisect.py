#!/usr/bin/env python3
"""Which part of ``hines_tiled_classes`` draws compute-sanitizer's racecheck reports?

``racecheck_bisect.py VARIANT`` solves the one-launch case of scripts/racecheck.py (three
classes, 2 SMs' worth of blocks) with the kernel's text edited, and checks the solution
against the serial CPU solver. Run each variant under

    compute-sanitizer --tool racecheck --racecheck-report hazard python3 racecheck_bisect.py V

Variants: base (as committed); local (each thread reads its class from global memory into
its own registers: no shared class state written by thread 0); local_nostagger (local, and
no staggered start: groups do not wait for the group before them); width8, width16, width32
(as committed, but every class solved with that many lanes, so that the block runs one
instantiation of hb_tiled_groups, with its barriers at one place, instead of two). With
HB_LINEINFO set, the kernels are compiled with -lineinfo, so that each report names the lines
of the write and of the read.
"""
import re
import sys
import warnings
from pathlib import Path

import cupy
import numpy as np

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "src"))

import hinesbatch  # noqa: E402
from hinesbatch.bench._multi_cases import values  # noqa: E402
from hinesbatch.solvers.gpu import compile as hb_compile, layout_solver  # noqa: E402
from hinesbatch.tree import random_trees as rt  # noqa: E402
from hinesbatch.tree.structure import HinesStructure  # noqa: E402

LOCAL = r"""
    extern __shared__ __align__(16) unsigned char hb_smem_tc[];
    __shared__ int next_class;
    for (int k = home[blockIdx.x]; k >= 0; k = next_class) {
        const long long* f = classes + static_cast<long long>(k) * HB_CLASS_FIELDS;
        const hb_tiles<T> c{jp + f[0], lu + f[0], node + f[0], stage + f[1], members + f[2],
                            f[3], static_cast<int>(f[4]), static_cast<int>(f[5]),
                            static_cast<int>(f[6]), static_cast<int>(f[7]),
                            static_cast<int>(f[8]), static_cast<int>(f[9]), 1,
                            static_cast<int>(f[11])};
        const int lanes = static_cast<int>(f[10]);
"""


def edit(text: str, variant: str) -> str:
    if variant == "base" or variant.startswith("width"):
        return text
    start = text.index("    extern __shared__ __align__(16) unsigned char hb_smem_tc[];")
    end = text.index("        auto run = [&](auto kb) {", start)
    text = text[:start] + LOCAL + text[end:]
    if variant.endswith("nostagger"):
        text = text.replace("if (GROUPS && g > 0 && tile < n_tiles) {",
                            "if (false && GROUPS && g > 0 && tile < n_tiles) {")
    return text


def main(variant: str) -> int:
    original = hb_compile.source_text
    text = edit(original("hines_tiled.cu"), variant)
    assert variant == "base" or variant.startswith("width") or text != original("hines_tiled.cu")
    width = {"lanes": int(variant[5:]), "batch": int(variant[5:])} if variant.startswith(
        "width") else {}
    hb_compile.source_text = lambda source: text if source == "hines_tiled.cu" else original(source)
    if "HB_LINEINFO" in __import__("os").environ:  # reports name the source line
        hb_compile._OPTIONS = (*hb_compile._OPTIONS, "-lineinfo")
    hb_compile._module.cache_clear()
    hb_compile._KERNEL_CACHE.clear()
    rng = np.random.default_rng(110)
    structure = HinesStructure.concatenate(
        [[rt.random_tree(1000, rng=4, branch_probability=0.5), rt.chain(40, rng=2),
          rt.random_tree(120, rng=3)][k] for k in rng.integers(0, 3, 90)])
    d, rhs = values(structure, seed=210)
    ref = hinesbatch.plan(structure, backend="serial").solve(d, rhs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = hinesbatch.plan(structure, backend="gpu", strategy="grouped", one_launch=True,
                               **width)
    impl = layout_solver(plan, np.float64)._parts[0].strategy
    impl.props = {**impl.props, "sm_count": 2}
    worst = 0.0
    for _ in range(3):
        x = plan.solve(cupy.asarray(d), cupy.asarray(rhs)).get()
        worst = max(worst, float(np.max(np.abs(x - ref)) / np.max(np.abs(ref))))
    print(f"{variant}: error {worst:.2e}  {plan.describe()}", flush=True)
    return 0 if worst <= 1e-12 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
