"""hinesbatch.discretize against NEURON 9.0.2: same sections, same nodes, same area and ri.

For each cell, NEURON builds it with Import3d (``neuron_build.build_neuron_cell``) and
hinesbatch with ``discretize``, with the same nseg (or d_lambda rule), Ra and cm. Per section
we require the same name, parent section and parentx, nseg and L; per segment the same
``area()``, ``ri()`` and ``diam`` (``diam`` to NEURON's own 1e-9 µm update threshold); and
the same ``ri`` at x = 1 (the end node), at x = 0 (the node the section hangs on) and at a
few interior x (``CellGeometry.node``'s location mapping).

Acceptance: relative error <= 1e-9 everywhere (observed: 0 for area, ri and L on every
file, i.e. bit-identical; see docs/geometry.md).

Cells: every file of tests/data/morphologies/real (one-point, NeuroMorpho three-point,
multi-point and no soma) at nseg 1, 2, 3 and d_lambda 0.1; the two files with a zero radius
are compared with ``min_radius=0.1`` against NEURON reading the same file with those radii
written as 0.1. The inline rule cases of tests/unit/test_discretize_import3d.py. Seeded
random small trees that exercise Import3d's corner rules (soma runs, wires,
connect-to-proximal, deleted sections, odd types).
"""
from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest

from hinesbatch.discretize import discretize
from hinesbatch.discretize.import3d import import3d_sections
from hinesbatch.morphology import SWCRadiusClampedWarning, SWCRadiusError, read_swc
from neuron_build import build_neuron_cell, geom_nseg, segment_table

pytestmark = [pytest.mark.validation, pytest.mark.neuron]

REAL = Path(__file__).resolve().parents[1] / "data" / "morphologies" / "real"
FILES = sorted(REAL.glob("*.swc"))
NSEGS = (1, 2, 3)
RTOL = 1e-9
CLAMP_UM = 0.1  # min_radius used for the files with zero radii


def rel_err(ours, ref) -> float:
    """Largest relative error; entries where both are exactly 0 count as equal."""
    ours, ref = np.asarray(ours, float), np.asarray(ref, float)
    diff = np.abs(ours - ref)
    scale = np.abs(ref)
    with np.errstate(divide="ignore", invalid="ignore"):
        err = np.where(diff == 0, 0.0, diff / scale)
    return float(np.max(err, initial=0.0))


def compare(geometry, table, *, diam: bool = True) -> float:
    """Assert structure equality with NEURON; return the largest relative error of the numbers."""
    assert sorted(geometry.section_names) == sorted(table)
    worst = 0.0
    for k, name in enumerate(geometry.section_names):
        t = table[name]
        p = int(geometry.section_parent[k])
        assert (None if p < 0 else geometry.section_names[p]) == t["parent"], name
        if p >= 0:
            assert geometry.section_parent_x[k] == t["parent_x"], name
        assert geometry.nseg[k] == t["nseg"], name
        segs = np.flatnonzero((geometry.section == k) & geometry.has_membrane)
        end = geometry.node(name, 1.0)
        start = geometry.node(name, 0.0)
        ri0 = np.inf if t["ri0"] >= 1e30 else t["ri0"]
        errs = [rel_err(geometry.length_um[k], t["L"]),
                rel_err(geometry.area_um2[segs], t["area"]),
                rel_err(geometry.ri_megohm[segs], t["ri"]),
                rel_err(geometry.ri_megohm[end], t["ri1"]),
                0.0 if geometry.ri_megohm[start] == ri0
                else rel_err(geometry.ri_megohm[start], ri0)]
        errs += [rel_err(geometry.ri_megohm[geometry.node(name, x)], ri)
                 for x, ri in t["ri_at"].items()]
        worst = max(worst, *errs)
        assert max(errs) <= RTOL, (name, errs)
        if diam:
            # NEURON rewrites seg.diam only when it changes by more than 1e-9 µm, so after an
            # nseg change it may keep a value computed for the previous nseg
            np.testing.assert_allclose(geometry.diam_um[segs], t["diam"], rtol=RTOL,
                                       atol=1e-9, err_msg=name)
    return worst


def zero_radius_lines(path: Path) -> tuple:
    """Lines with a zero radius (empty for files without), from discretize's own error."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            discretize(path)
    except SWCRadiusError as err:
        return err.lines
    return ()


def with_radius(path: Path, lines, radius_text: str, tmp_path: Path) -> Path:
    """A copy of ``path`` with the radius field of ``lines`` (1-based) replaced."""
    raw = path.read_bytes().splitlines(keepends=True)
    for line in lines:
        body = raw[line - 1].rstrip(b"\r\n")
        fields = body.split()
        fields[5] = radius_text.encode()
        raw[line - 1] = b" ".join(fields) + raw[line - 1][len(body):]
    out = tmp_path / path.name
    out.write_bytes(b"".join(raw))
    return out


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_real_cell_matches_neuron(path, tmp_path):
    lines = zero_radius_lines(path)
    min_radius = CLAMP_UM if lines else None
    neuron_path = with_radius(path, lines, repr(CLAMP_UM), tmp_path) if lines else path
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        morph = read_swc(path)
    h, sections = build_neuron_cell(neuron_path, nseg=1, ra=35.4, cm=1.0)
    for nseg in NSEGS:
        for sec in sections.values():
            sec.nseg = nseg
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SWCRadiusClampedWarning)
            geometry = discretize(morph, nseg=nseg, min_radius=min_radius)
        compare(geometry, segment_table(sections))
    for sec in sections.values():
        sec.Ra, sec.cm = 100.0, 2.0
    geom_nseg(0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SWCRadiusClampedWarning)
        geometry = discretize(morph, d_lambda=0.1, ra=100.0, cm=2.0, min_radius=min_radius)
    assert geometry.nseg.max() > 1  # the rule did something
    compare(geometry, segment_table(sections))


def _inline_cases() -> dict:
    """The inline cells of tests/unit/test_discretize_import3d.py (its CASES dict)."""
    path = Path(__file__).resolve().parents[1] / "unit" / "test_discretize_import3d.py"
    spec = importlib.util.spec_from_file_location("_discretize_import3d_cases", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CASES


INLINE = _inline_cases()


@pytest.mark.parametrize("case", sorted(INLINE))
def test_inline_rule_case_matches_neuron(case, tmp_path):
    path = tmp_path / f"{case}.swc"
    path.write_text(INLINE[case].replace(" / ", "\n") + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        morph = read_swc(path)
    h, sections = build_neuron_cell(path, nseg=1)
    secs = import3d_sections(morph)
    for k, name in enumerate(secs.names):  # the pt3d points themselves
        a, b = secs.pt_offsets[k], secs.pt_offsets[k + 1]
        sec = sections[name]
        ref = [[sec.x3d(i), sec.y3d(i), sec.z3d(i), sec.diam3d(i)] for i in range(sec.n3d())]
        np.testing.assert_array_equal(np.column_stack([secs.xyz[a:b], secs.diam[a:b]]), ref)
    for nseg in NSEGS:
        for sec in sections.values():
            sec.nseg = nseg
        compare(discretize(morph, nseg=nseg), segment_table(sections))


# -- random small trees: Import3d's corner rules ---------------------------------------------

def random_swc(rng: np.random.Generator) -> str:
    """A small random tree; the first samples follow one of the soma conventions."""
    kind = rng.choice(["one", "three", "multi", "none", "any"])
    rows, types = [], []

    def add(t, xyz, r, p):
        types.append(t)
        rows.append(f"{len(rows) + 1} {t} {xyz[0]:g} {xyz[1]:g} {xyz[2]:g} {r:g} "
                    f"{p + 1 if p >= 0 else -1}")

    r0 = float(rng.choice([1.5, 2.5, 5.0]))
    c = rng.integers(-3, 4, size=3) * 2.5
    if kind == "three":
        axis = np.eye(3)[rng.integers(3)] * r0
        add(1, c, r0, -1), add(1, c + axis, r0, 0), add(1, c - axis, r0, 0)
    elif kind == "multi":
        for i in range(int(rng.integers(2, 5))):
            add(1, c + [0, 2.5 * i, 0], r0, i - 1)
    else:
        add(1 if kind != "none" else int(rng.choice([2, 3])), c, r0, -1)
    for i in range(len(rows), int(rng.integers(len(rows) + 1, 22))):
        p = i - 1 if rng.random() < 0.6 else int(rng.integers(0, i))
        if kind == "three" and p in (1, 2) and rng.random() < 0.8:
            p = 0  # keep the NeuroMorpho.Org 3-point soma valid most of the time
        t = types[p] if rng.random() < 0.7 else int(rng.choice([1, 2, 3, 4, 0, 7, -2]))
        if kind in ("none", "three") and t == 1:
            t = 3
        add(t, rng.integers(-3, 4, size=3) * 2.5, float(rng.choice([0.25, 0.5, 1.0, 3.0])), p)
    return "\n".join(rows) + "\n"


def test_random_trees_match_neuron(tmp_path):
    rng = np.random.default_rng(20261121)
    seen = {"soma": set(), "wire": 0, "x0": 0, "x05": 0}
    for trial in range(250):
        path = tmp_path / f"tree{trial}.swc"
        path.write_text(random_swc(rng))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            morph = read_swc(path)
        secs = import3d_sections(morph)
        seen["soma"].add(secs.soma)
        seen["wire"] += int(secs.wire.any())
        seen["x0"] += int(np.any(secs.parent_x[1:] == 0))
        seen["x05"] += int(np.any(secs.parent_x[1:] == 0.5))
        h, sections = build_neuron_cell(path, nseg=1)
        for nseg in NSEGS:
            for sec in sections.values():
                sec.nseg = nseg
            # seg.diam of a zero-length section is NaN here and NEURON's untouched 500
            compare(discretize(morph, nseg=nseg), segment_table(sections), diam=False)
    assert seen["soma"] == {"one-point", "three-point", "multi-point", "none"}
    assert min(seen["wire"], seen["x0"], seen["x05"]) >= 10, seen
