"""LONGITUDINAL_DIFFUSION against NEURON 9.0.2 on a branched cell (:mod:`nmodl_diffusion`:
six sections, children at x = 1, at the root's x = 0 and in the middle of a section).

Protocol: hh and a cai-gated potassium current (tests/data/nmodl/kcai.mod) everywhere, the
calcium pool under test everywhere, a calcium influx (cainflux.mod) in ``dend`` from 1 to
6 ms and a current clamp at the soma; dt 0.025 ms, 20 ms. Recorded at every segment: v and
each diffusing state. Acceptance: max |ΔV| <= 1e-6 mV (the implicit methods' goal) and
each concentration within 1e-12 mM of NEURON's, while the same run without diffusion is
far from NEURON's (the protocol shows diffusion).

The same on a real cell (nmodl_compare's real-cell protocol) for cashell.mod, at four
points. Files: capool.mod (a scalar pool, ``LONGITUDINAL_DIFFUSION D*shell {cp}``) and
cashell.mod (three shells with a buffer: STATE arrays, the array form for ``ca`` and for
``buf cabuf``, a nonlinear scheme), both written for these tests.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("neuron.nmodl", reason="the NMODL parser comes with `pip install neuron`")

import nmodl_diffusion as nd

import hinesbatch as hb
from hinesbatch import mechanisms

pytestmark = pytest.mark.neuron

FILES = ("capool", "cashell")


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    from hinesbatch.bench._nmodl_model import compile_mods

    files = [nd.ROOT / "tests" / "data" / "nmodl" / f"{n}.mod" for n in FILES] \
        + [nd.INFLUX, nd.KCAI]
    lib = compile_mods(files)
    before = set(mechanisms._REGISTERED)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for f in files:
            hb.load_mechanisms(f)
    yield lib
    for name in set(mechanisms._REGISTERED) - before:
        mechanisms.unregister(name)


@pytest.mark.parametrize("name", FILES)
def test_diffusing_pool_on_a_branched_cell_matches_neuron(library, name):
    model = nd.diffusing_model(mechanisms.get(name))
    ref = nd.run_neuron(model, library)
    got = nd.run_hinesbatch(model)
    assert np.max(np.abs(ref[0] - got[0])) <= 1e-6
    for k, var in enumerate(model["record"][1:], start=1):
        assert np.max(np.abs(ref[k] - got[k])) <= 1e-12, var
    # the concentrations move, and differently along the cell
    assert np.ptp(ref[1]) > 1e-4
    assert np.ptp(ref[1][:, -1]) > 1e-5
    # without diffusion hinesbatch would be far from NEURON
    params = {"capool": {"D": 0.0}, "cashell": {"DCa": 0.0, "DBuf": 0.0}}[name]
    still = dict(model, insert=[m if m[0] != name else [name, params]
                                for m in model["insert"]])
    apart = nd.run_hinesbatch(still)
    assert np.max(np.abs(ref[1] - apart[1])) > 1e3 * max(np.max(np.abs(ref[1] - got[1])),
                                                        1e-12)
    assert np.max(np.abs(ref[0] - apart[0])) > 1e-3


def test_pool_in_part_of_the_cell_matches_neuron(library):
    """The pool in dend, its child b1 and mid only: dend's first instance has no parent
    (neither soma's x = 1 node, nor the soma, nor the soma's first segment has one), b1's
    first couples to dend's last across dend's x = 1 node."""
    where = ["dend", "b1", "mid"]
    model = {"insert": [["hh", {}], ["kcai", {"gbar": 0.002}]],
             "local": [[s, "capool", {}] for s in where]
             + [["dend", "cainflux", {"amp": 0.005}]],
             "record": ["v", "cp_capool"], "where": where}
    ref = nd.run_neuron(model, library)
    got = nd.run_hinesbatch(model)
    assert np.max(np.abs(ref[0] - got[0])) <= 1e-6
    assert np.max(np.abs(ref[1] - got[1])) <= 1e-12
    assert np.ptp(ref[1]) > 1e-4


def test_real_cell_with_a_diffusing_pool_matches_neuron(library):
    """nmodl_compare's real-cell protocol (ko20x-07, d_lambda 0.1, an SWC cell whose
    sections' L come from their 3-D points): hh, cashell, a calcium influx and kcai
    everywhere, a clamp at the soma; v and cai (cashell's ca[0], which it writes) at the
    soma and three dendritic points."""
    import nmodl_compare as nc

    where = [["soma[0]", 0.5], ["dend[3]", 0.5], ["apic[0]", 0.5], ["dend[0]", 0.9]]
    model = {"swc": str(nd.ROOT / "tests" / "data" / "morphologies" / "real"
                        / "ko20x-07.CNG.swc"),
             "nseg": None, "d_lambda": 0.1, "iclamp": [2.0, 10.0, 0.5], "tstop": 15.0,
             "insert": [["hh", {}], ["cashell", {}], ["cainflux", {"amp": 0.005}],
                        ["kcai", {"gbar": 0.002}]],
             "record": where + [[s, x, "cai"] for s, x in where]}
    ref = nc.run_neuron(model, library)
    got = nc.run_hinesbatch(dict(model, record=where + [[s, x, "cai_cashell"]
                                                        for s, x in where]))
    assert np.max(np.abs(ref[:4] - got[:4])) <= 1e-6
    assert np.max(np.abs(ref[4:] - got[4:])) <= 1e-12
    assert np.ptp(ref[4:]) > 1e-4


def test_multicore_gives_serials_numbers(library):
    model = nd.diffusing_model(mechanisms.get("cashell"))
    assert np.array_equal(nd.run_hinesbatch(model, backend="multicore"),
                          nd.run_hinesbatch(model))
