"""Each file in tests/data/morphologies/malformed/ behaves as its severity in SOURCES.md says:
an error raises its typed SWCError naming the rule and every line involved; a warning is
issued with its own class (an error with strict=True); an edge case parses; an "error (for
simulation)" parses but fails the radius check."""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import hinesbatch.morphology as hm
from hinesbatch.morphology import check_radii, read_swc

from test_swc_real import sources_table

MALFORMED = Path(__file__).resolve().parents[1] / "data" / "morphologies" / "malformed"

# file: (error class, lines involved, errors of other rules carried in .also as (class, lines))
ERRORS = {
    "disconnected_neurite.swc": (hm.SWCMultipleRootsError, (1, 10), ()),
    "multiple_soma.swc": (hm.SWCMultipleRootsError, (2, 11), ()),
    "bad_syntax.swc": (hm.SWCSyntaxError, (6,), ()),
    "two_somas.swc": (hm.SWCMultipleRootsError, (1, 3), ()),
    "single_section_missing_segment.swc": (hm.SWCMissingParentError, (1,), ()),
    "repeated_id.swc": (hm.SWCDuplicateIdError, (5, 6), ()),
    "Neuron_missing_ids.swc": (hm.SWCMissingParentError, (42, 43), ()),
    "Neuron_disconnected_components.swc": (hm.SWCMultipleRootsError, (36, 40, 250, 460, 670),
                                           ()),
    "missing_fields.swc": (hm.SWCSyntaxError, (9, 10), ()),
    "orphan_node.swc": (hm.SWCMissingParentError, (12,), ()),
    "wrong_id_type.swc": (hm.SWCSyntaxError, (11, 12), ()),
    "wrong_numeric_fields.swc": (hm.SWCSyntaxError, (11,), ((hm.SWCRadiusError, (12,)),)),
    "header_only.swc": (hm.SWCEmptyError, (5,), ()),
    "empty.swc": (hm.SWCEmptyError, (1,), ()),
    "morph_multiple_roots.swc": (hm.SWCDuplicateIdError, (7, 9),
                                 ((hm.SWCMultipleRootsError, (5, 7)),)),
}

# file: (the warning for the defect SOURCES.md describes, its lines, every warning class issued)
WARNINGS = {
    "neurite_wrong_root_point.swc": (hm.SWCSomaAttachmentWarning, (4, 6),
                                     {hm.SWCSomaAttachmentWarning}),
    "no_soma.swc": (hm.SWCNoSomaWarning, (1,), {hm.SWCNoSomaWarning}),
    "soma_cylinders.swc": (hm.SWCSomaAttachmentWarning, (7,),
                           {hm.SWCSomaAttachmentWarning, hm.SWCZeroLengthWarning}),
    "single_section_unordered.swc": (hm.SWCUnorderedWarning, (1, 2, 3, 4, 5),
                                     {hm.SWCUnorderedWarning}),
    "Neuron_zero_length_segments.swc": (
        hm.SWCZeroLengthWarning, (33, 36, 37, 247, 248, 458, 459, 669, 670),
        {hm.SWCZeroLengthWarning}),
    "non_increasing_trunk_off_1_16pt.swc": (hm.SWCUnorderedWarning, (36, 37, 42, 43),
                                            {hm.SWCUnorderedWarning}),
    "fat_end.swc": (hm.SWCFatEndWarning, (14,), {hm.SWCFatEndWarning, hm.SWCZeroLengthWarning}),
    "undefined_type.swc": (hm.SWCUndefinedTypeWarning, (6, 7, 8, 9),
                           {hm.SWCUndefinedTypeWarning, hm.SWCZeroLengthWarning}),
    "dangling_axon.swc": (hm.SWCDetachedNeuriteWarning, (22,),
                          {hm.SWCDetachedNeuriteWarning, hm.SWCZeroLengthWarning}),
    "root_node_jump.swc": (hm.SWCDetachedNeuriteWarning, (6,),
                           {hm.SWCDetachedNeuriteWarning, hm.SWCZeroLengthWarning}),
    "sample_doublet_point.swc": (hm.SWCZeroLengthWarning, (3, 4, 35, 56),
                                 {hm.SWCZeroLengthWarning, hm.SWCInterruptedSomaWarning}),
    "morph_interrupted_soma.swc": (hm.SWCInterruptedSomaWarning, (7, 8, 11, 12),
                                   {hm.SWCInterruptedSomaWarning,
                                    hm.SWCDetachedNeuriteWarning}),
}

# Valid files: the warnings they still give (true facts, see docs/swc.md).
EDGE = {"simple-trailing-space.swc": {hm.SWCNoSomaWarning}}

# Parse, but radii <= 0 make the cable equation ill-defined: lines the radius check names.
FOR_SIMULATION = {
    "soma_zero_radius.swc": (23, 24, 25, 26, 27, 30, 31),
    "morph_retina_20161028_1.swc": tuple(range(1, 7214)),
}

SEVERITY = {**{f: "error" for f in ERRORS}, **{f: "warning" for f in WARNINGS},
            **{f: "edge (valid)" for f in EDGE},
            **{f: "error (for simulation)" for f in FOR_SIMULATION}}


def names_every_line(message: str, path: str, lines) -> bool:
    """Each line appears as ``path:N:``, ``line N`` or in a list ``lines 5 and N``,
    ``lines 3, 4 and N`` or a run ``lines N-M`` / ``lines M-N``."""
    return all(re.search(rf"{re.escape(path)}:{k}:|\blines? (?:\d+(?:, | and |-))*{k}\b"
                         rf"|\blines {k}-", message) for k in lines)


def test_every_malformed_file_has_a_case_matching_sources_severity():
    table = sources_table("## malformed/")
    assert {p.name for p in MALFORMED.glob("*.swc")} == set(SEVERITY)
    for name, expected in SEVERITY.items():
        assert table[name][4] == expected, name


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_error_file_raises_its_typed_error(name):
    cls, lines, also = ERRORS[name]
    path = str(MALFORMED / name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")              # an error file must not warn first
        with pytest.raises(cls) as info:
            read_swc(path)
    err = info.value
    assert isinstance(err, hm.SWCError) and isinstance(err, ValueError)
    assert err.lines == lines and err.line == lines[0] and err.path == path
    assert str(err).startswith(f"{path}:{lines[0]}: {err.rule}: ")
    assert names_every_line(str(err), path, lines)
    assert [(type(a), a.lines) for a in err.also] == list(also)
    for other, other_lines in also:
        assert other.rule in str(err) and names_every_line(str(err), path, other_lines)


def test_syntax_errors_say_reading_stopped_and_name_the_bad_field():
    err = pytest.raises(hm.SWCSyntaxError, read_swc, MALFORMED / "wrong_numeric_fields.swc").value
    assert "y 'boom' is not a number" in str(err)
    assert "Reading stopped after this check" in str(err)
    assert "sample 7 (line 12) has radius -1" in str(err)
    err = pytest.raises(hm.SWCSyntaxError, read_swc, MALFORMED / "wrong_id_type.swc").value
    assert "id '6.14' is not an integer" in str(err) and "id 'stuff' is not a number" in str(err)


def test_missing_parent_message_is_compiler_like():
    path = str(MALFORMED / "Neuron_missing_ids.swc")
    err = pytest.raises(hm.SWCMissingParentError, read_swc, path).value
    assert str(err) == (f"{path}:42: missing parent: sample 8 (line 42) and sample 9 (line 43) "
                        "refer to parent 7, which no line defines")


@pytest.mark.parametrize("name", sorted(WARNINGS))
def test_warning_file_warns_with_its_class(name):
    cls, lines, classes = WARNINGS[name]
    path = str(MALFORMED / name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = read_swc(path)
    assert isinstance(m, hm.Morphology)
    got = {w.category: w.message for w in caught}
    assert set(got) == classes and len(caught) == len(classes)
    w = got[cls]
    assert w.lines == lines and w.path == path
    assert str(w).startswith(f"{path}:{lines[0]}: {w.rule}: ")
    assert names_every_line(str(w), path, lines)


@pytest.mark.parametrize("name", sorted(WARNINGS))
def test_warning_file_is_an_error_when_strict(name):
    cls, lines, classes = WARNINGS[name]
    with pytest.raises(hm.SWCStrictError) as info:
        read_swc(MALFORMED / name, strict=True)
    err = info.value
    found = {err.category: err} | {a.category: a for a in err.also}
    assert set(found) == classes
    assert found[cls].lines == lines and found[cls].rule == cls.rule


def test_unordered_file_is_resorted_parent_first_keeping_lines():
    with pytest.warns(hm.SWCUnorderedWarning, match="re-sorted by id"):
        m = read_swc(MALFORMED / "single_section_unordered.swc")
    np.testing.assert_array_equal(m.ids, [1, 2, 3, 4, 5])
    np.testing.assert_array_equal(m.lines, [4, 2, 5, 3, 1])
    np.testing.assert_array_equal(m.parents, [-1, 0, 1, 2, 3])
    np.testing.assert_array_equal(m.xyz[:, 2], [0, 1, 2, 3, 4])


def test_non_increasing_ids_file_keeps_every_sample():
    with pytest.warns(hm.SWCUnorderedWarning):
        m = read_swc(MALFORMED / "non_increasing_trunk_off_1_16pt.swc")
    np.testing.assert_array_equal(m.ids, [1, 2, 3, 4, 6, 7, *range(8, 12), 12, 13, *range(14, 18)])
    assert m.n_samples == 16 and m.parents[4] == 3           # 6 hangs on 4 (id 5 is absent)


@pytest.mark.parametrize("name", sorted(EDGE))
def test_edge_file_parses(name):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = read_swc(MALFORMED / name)
    assert {w.category for w in caught} == EDGE[name]
    np.testing.assert_array_equal(m.ids, [1, 2, 3])
    np.testing.assert_array_equal(m.lines, [2, 4, 5])
    np.testing.assert_array_equal(m.xyz, [[0, 0, 0], [1, 1, 1], [2, 2, 2]])
    np.testing.assert_array_equal(m.radii, [3, 3, 3])


@pytest.mark.parametrize("name", sorted(FOR_SIMULATION))
def test_for_simulation_file_parses_but_radius_check_raises(name):
    lines = FOR_SIMULATION[name]
    path = str(MALFORMED / name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hm.SWCWarning)
        m = read_swc(path)
    with pytest.raises(hm.SWCRadiusError) as info:
        check_radii(m)
    err = info.value
    assert err.lines == lines and err.rule == "non-positive radius"
    assert str(err).startswith(f"{path}:{lines[0]}: non-positive radius: {len(lines)} of ")
    assert "min_radius" in str(err)
    with pytest.warns(hm.SWCRadiusClampedWarning, match=f"{len(lines)} of {m.n_samples} radii"):
        fixed = check_radii(m, min_radius=0.1)
    assert fixed is not m and np.all(fixed.radii >= 0.1)
    changed = np.flatnonzero(fixed.radii != m.radii)
    np.testing.assert_array_equal(m.lines[changed], lines)
    assert check_radii(fixed) is fixed
