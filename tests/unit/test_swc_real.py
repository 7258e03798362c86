"""Every real reconstruction reads, and reads exactly: each field of each sample is compared
with an independent line-by-line parse, and counts with the attribution table SOURCES.md."""
from __future__ import annotations

import io
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import hinesbatch.morphology as hm
from hinesbatch.morphology import Morphology, read_swc

DATA = Path(__file__).resolve().parents[1] / "data" / "morphologies"
REAL = sorted((DATA / "real").glob("*.swc"))

# Warnings each real file gives (thresholds in docs/swc.md). Measured once and checked by hand
# against separate scripts; pinned so a change of any rule shows up here.
REAL_WARNINGS = {
    "10-2012-02-09-001.CNG.swc": {hm.SWCDetachedNeuriteWarning},
    "1220882a.CNG.swc": {hm.SWCDetachedNeuriteWarning},
    "C010398B-P2.CNG.swc": {hm.SWCDetachedNeuriteWarning},
    "C220498B-I4.CNG.swc": {hm.SWCDetachedNeuriteWarning},
    "EC3-80604.CNG.swc": {hm.SWCDetachedNeuriteWarning},
    "Gad1-F-600000.CNG.swc": {hm.SWCNoSomaWarning},
    "barrionuevo_cell1zr.CNG.swc": {hm.SWCDetachedNeuriteWarning},
    "c91662.swc": set(),
    "eNGC-j140908b_cell1.swc": {hm.SWCDetachedNeuriteWarning},
    "h10.CNG.swc": {hm.SWCDetachedNeuriteWarning},
    "ko20x-07.CNG.swc": set(),
    "morph_ca1_n120.swc": {hm.SWCInterruptedSomaWarning, hm.SWCDetachedNeuriteWarning},
    "morph_l5pc_with_axon.swc": {hm.SWCZeroLengthWarning, hm.SWCDetachedNeuriteWarning},
    "mp_ma_40984_gc2.CNG.swc": set(),
    "pyramidal.swc": {hm.SWCFatEndWarning, hm.SWCDetachedNeuriteWarning},
    "tc200.CNG.swc": {hm.SWCInterruptedSomaWarning, hm.SWCSomaAttachmentWarning,
                      hm.SWCDetachedNeuriteWarning},
    "v_e_purk2.CNG.swc": set(),
}


def sources_table(heading: str) -> dict[str, list[str]]:
    """Rows of a SOURCES.md table under ``heading``, keyed by file name (cells as text)."""
    text = (DATA / "SOURCES.md").read_text(encoding="utf-8")
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 3 and cells[1].startswith("`"):
            rows[cells[1].strip("`")] = cells
    return rows


def plain_parse(path: Path):
    """Reference parse: bytes split at b'\\n', one sample per non-comment line, no checks."""
    rows, lines = [], []
    for k, raw in enumerate(path.read_bytes().split(b"\n"), start=1):
        body = raw.decode("utf-8").split("#")[0].split()
        if body:
            rows.append([float(t) for t in body[:7]])
            lines.append(k)
    return np.array(rows), np.array(lines)


def read_quiet(path) -> Morphology:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hm.SWCWarning)
        return read_swc(path)


def test_every_real_file_is_covered():
    assert {p.name for p in REAL} == set(REAL_WARNINGS)
    assert set(sources_table("## real/")) == set(REAL_WARNINGS)


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_real_file_fields_and_lines_match_plain_parse(path):
    m = read_quiet(path)
    ref, lines = plain_parse(path)
    # SOURCES.md: every real file lists parents first, so file order is kept.
    np.testing.assert_array_equal(m.lines, lines)
    np.testing.assert_array_equal(m.ids, ref[:, 0].astype(np.int64))
    np.testing.assert_array_equal(m.types, ref[:, 1].astype(np.int32))
    np.testing.assert_array_equal(m.xyz, ref[:, 2:5])
    np.testing.assert_array_equal(m.radii, ref[:, 5])
    parent_ids = np.where(m.parents >= 0, m.ids[np.maximum(m.parents, 0)], -1)
    np.testing.assert_array_equal(parent_ids, ref[:, 6].astype(np.int64))
    assert m.source == str(path)
    assert all(m.parents[1:] < np.arange(1, m.n_samples)) and m.parents[0] == -1


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_real_file_counts_match_sources_table(path):
    cells = sources_table("## real/")[path.name]
    points, branch_points, soma_points = (int(c) for c in cells[2:5])
    m = read_quiet(path)
    assert m.n_samples == points
    assert sum(k.size > 1 for k in m.children) == branch_points
    assert int(np.sum(m.types == 1)) == soma_points
    # sections partition the samples, each an unbranched parent-to-child run
    covered = np.sort(np.concatenate(m.sections))
    np.testing.assert_array_equal(covered, np.arange(m.n_samples))
    for run in m.sections:
        assert np.all(m.parents[run[1:]] == run[:-1])


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_real_file_warnings(path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        read_swc(path)
    got = [w for w in caught if issubclass(w.category, hm.SWCWarning)]
    assert {w.category for w in got} == REAL_WARNINGS[path.name]
    assert len(got) == len({w.category for w in got}), "one warning per rule"
    for w in got:
        assert str(w.message).startswith(f"{path}:{w.message.line}: {w.message.rule}: ")
        assert w.filename == __file__, "warnings point at the caller of read_swc"


def test_real_file_header_is_kept():
    m = read_quiet(DATA / "real" / "c91662.swc")
    raw = (DATA / "real" / "c91662.swc").read_text(encoding="ascii")
    expected = [line.rstrip("\r")[1:] for line in raw.split("\n") if line.startswith("#")]
    assert list(m.header) == expected and expected


@pytest.mark.parametrize("name", ["ko20x-07.CNG.swc", "EC3-80604.CNG.swc"])
def test_crlf_file_reads_the_same_from_streams(name):
    path = DATA / "real" / name
    data = path.read_bytes()
    assert b"\r\n" in data                       # SOURCES.md: CRLF line endings
    ref = read_quiet(path)
    for stream in (io.BytesIO(data), io.StringIO(data.decode("ascii"), newline="")):
        m = read_quiet(stream)
        assert m.source == "<stream>"
        for field in ("ids", "types", "xyz", "radii", "parents", "lines"):
            np.testing.assert_array_equal(getattr(m, field), getattr(ref, field))
    with open(path, "rb") as fh:
        assert read_quiet(fh).source == str(path)


def test_zero_radius_real_files_need_min_radius():
    # SOURCES.md: v_e_purk2 has a zero soma radius, EC3-80604 one zero radius.
    for name, n_zero in (("v_e_purk2.CNG.swc", 1), ("EC3-80604.CNG.swc", 1)):
        m = read_quiet(DATA / "real" / name)
        with pytest.raises(hm.SWCRadiusError) as err:
            hm.check_radii(m)
        assert len(err.value.lines) == n_zero
        assert all(re.search(rf"\(line {k}\)", str(err.value)) for k in err.value.lines)
    m = read_quiet(DATA / "real" / "c91662.swc")
    assert hm.check_radii(m) is m                # all radii positive: nothing to do
