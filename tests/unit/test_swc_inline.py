"""Inline SWC cases, one per rule or input form. The offending rows carry ``# <-- here`` and
the expected line numbers are computed from those markers."""
from __future__ import annotations

import io
import pickle
import re
import warnings

import numpy as np
import pytest

import hinesbatch.morphology as hm
from hinesbatch.morphology import Morphology, check_radii, read_swc

MARK = "<-- here"


def marked(text: str) -> tuple[int, ...]:
    """1-based numbers of the lines carrying the marker (any line-ending convention)."""
    return tuple(k for k, line in enumerate(re.split(r"\r\n|\r|\n", text), 1) if MARK in line)


def read_text(text: str, **kw) -> Morphology:
    return read_swc(io.StringIO(text, newline=""), name="inline.swc", **kw)


def quiet(text: str, **kw) -> Morphology:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hm.SWCWarning)
        return read_text(text, **kw)


def raises(cls, text: str, **kw):
    with pytest.raises(cls) as info:
        read_text(text, **kw)
    err = info.value
    assert err.lines == marked(text), str(err)
    assert str(err).startswith(f"inline.swc:{err.lines[0]}: {err.rule}: ")
    return err


def test_public_names():
    import hinesbatch.morphology as pkg
    for name in pkg.__all__:
        assert getattr(pkg, name) is not None
    assert issubclass(hm.SWCError, ValueError) and issubclass(hm.SWCWarning, UserWarning)
    errors = [getattr(hm, n) for n in pkg.__all__ if n.endswith("Error") and n != "SWCError"]
    warns = [getattr(hm, n) for n in pkg.__all__ if n.endswith("Warning") and n != "SWCWarning"]
    assert all(issubclass(c, hm.SWCError) for c in errors)
    assert all(issubclass(c, hm.SWCWarning) for c in warns)
    rules = [c.rule for c in errors + warns if c not in (hm.SWCStrictError, hm.SWCGeometryWarning)]
    assert len(set(rules)) == len(rules), "one rule name per class"


# --- tree errors ------------------------------------------------------------------------------

def test_self_parent_is_a_cycle():
    err = raises(hm.SWCCycleError, "1 1 0 0 0 5 -1\n2 3 0 0 1 1 2  # <-- here\n")
    assert "sample 2 (line 2) is its own parent" in str(err)


def test_loop_names_its_members_not_the_samples_hanging_from_it():
    text = ("# a loop 2 -> 4 -> 3 -> 2, and 5 hanging from it\n"
            "1 1 0 0 0 5 -1\n"
            "2 3 0 0 1 1 4  # <-- here\n"
            "3 3 0 0 2 1 2  # <-- here\n"
            "4 3 0 0 3 1 3  # <-- here\n"
            "5 3 0 0 3 1 2\n")
    err = raises(hm.SWCCycleError, text)
    assert "form a loop" in str(err)


def test_file_without_root_is_a_cycle():
    raises(hm.SWCCycleError, "1 1 0 0 0 5 2  # <-- here\n2 3 0 0 1 1 1  # <-- here\n")


def test_all_tree_errors_are_reported_together():
    text = ("1 1 0 0 0 5 -1  # <-- here\n"
            "2 3 0 0 1 1 1   # <-- here\n"
            "2 3 0 0 2 1 1   # <-- here\n"
            "3 3 0 0 3 1 -1  # <-- here\n"
            "4 3 0 0 4 1 99  # <-- here\n")
    with pytest.raises(hm.SWCDuplicateIdError) as info:
        read_text(text)
    err = info.value
    assert err.lines == (2, 3)
    assert [type(e) for e in err.also] == [hm.SWCMissingParentError, hm.SWCMultipleRootsError]
    assert err.also[0].lines == (5,) and err.also[1].lines == (1, 4)
    lines = set(err.lines).union(*(e.lines for e in err.also))
    assert tuple(sorted(lines)) == marked(text)
    assert "missing parent" in str(err) and "multiple roots" in str(err)


def test_negative_radius_is_an_error_reported_with_tree_errors():
    text = ("1 1 0 0 0 5 -1\n"
            "2 3 0 0 1 -0.5 1  # <-- here\n"
            "3 3 0 0 2 1 7\n")
    with pytest.raises(hm.SWCRadiusError) as info:
        read_text(text)
    err = info.value
    assert err.lines == marked(text) and err.rule == "negative radius"
    assert "sample 2 (line 2) has radius -0.5" in str(err)
    assert [type(e) for e in err.also] == [hm.SWCMissingParentError]


def test_long_lists_are_cut_in_the_message_but_complete_in_lines():
    text = "1 1 0 0 0 5 -1\n" + "".join(f"{k} 3 0 0 {k} 1 {k + 1000}  # <-- here\n"
                                        for k in range(2, 32))
    err = raises(hm.SWCMissingParentError, text)
    assert len(err.lines) == 30 and "... and 10 more" in str(err)


# --- syntax --------------------------------------------------------------------------------------

@pytest.mark.parametrize("row, problem", [
    ("2 3 0 0 nan 1 1", "z 'nan' is not a number"),
    ("2 3 0 0 inf 1 1", "z 'inf' is not a number"),
    ("2 3 0 0 1e999 1 1", "z '1e999' is out of range"),
    ("2 3 0 0 1_0 1 1", "z '1_0' is not a number"),
    ("2 3 0 0 \u0661 1 1", "is not a number"),               # an Arabic-Indic digit
    ("2 3 0 0 0x10 1 1", "z '0x10' is not a number"),
    ("2.5 3 0 0 1 1 1", "id '2.5' is not an integer"),
    ("-2 3 0 0 1 1 1", "id '-2' is out of range"),
    ("2 3.5 0 0 1 1 1", "type '3.5' is not an integer"),
    ("2 4294967296 0 0 1 1 1", "type '4294967296' is out of range"),
    ("2 3 0 0 1 1 one", "parent 'one' is not a number"),
    ("2 3 0 0 1 1", "6 fields ('2 3 0 0 1 1'), 7 needed"),
    ("2 3 0 0 1 1 1\x00", "parent '1\\x00' is not a number"),
])
def test_bad_field_is_a_syntax_error_naming_the_field(row, problem):
    text = f"1 1 0 0 0 5 -1\n{row}  # <-- here\n3 3 0 0 2 1 2\n"
    err = raises(hm.SWCSyntaxError, text)
    assert problem in str(err)
    assert "Reading stopped after this check" in str(err)


def test_every_bad_line_is_listed_not_just_the_first():
    text = "".join(["1 1 0 0 0 5 -1\n",
                    "2 3 0 0 1 1  # <-- here\n", "3 3 0 0 2 1 2\n",
                    "4 3 a b 3 1 3  # <-- here\n", "garbage  # <-- here\n"])
    err = raises(hm.SWCSyntaxError, text)
    assert "x 'a' is not a number; y 'b' is not a number" in str(err)


def test_fields_of_an_unreadable_line_are_not_judged():
    # a field is missing and one is stray: -0.5 may not be a radius at all, so no radius error
    err = raises(hm.SWCSyntaxError, "1 1 0 0 0 5 -1\n2 3 0 x 1 -0.5 1  # <-- here\n")
    assert err.also == () and "negative radius" not in str(err)


def test_integers_written_as_decimals_are_accepted():
    m = read_text("1.0 1 0 0 0 5 -1.0\n2 3.0 0 0 1 1 1e0\n")
    np.testing.assert_array_equal(m.ids, [1, 2])
    np.testing.assert_array_equal(m.types, [1, 3])
    np.testing.assert_array_equal(m.parents, [-1, 0])


def test_number_forms_parse_exactly():
    m = quiet("1 1 +0.5 -.25 5. 1e-1 -1\n2 3 1E+2 007 -0 0.1 1\n")
    np.testing.assert_array_equal(m.xyz, [[0.5, -0.25, 5.0], [100.0, 7.0, -0.0]])
    np.testing.assert_array_equal(m.radii, [0.1, 0.1])


@pytest.mark.parametrize("text, what", [
    ("", "is empty"),
    ("\n  \n\t\n", "has 3 lines, all comments or blank"),
    ("# only\n# comments", "has 2 lines, all comments or blank"),
])
def test_no_samples(text, what):
    with pytest.raises(hm.SWCEmptyError, match=what):
        read_text(text)


# --- line endings, comments, extra fields ----------------------------------------------------------

@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_line_numbers_are_right_with_any_line_ending(newline):
    rows = ["# header", "", "1 1 0 0 0 5 -1", "  # indented comment", "2 3 0 0 1 1 1 # trailing",
            "3 3 0 0 2 1 9  # <-- here"]
    text = newline.join(rows) + newline
    err = raises(hm.SWCMissingParentError, text)
    assert err.lines == (6,)
    data = text.encode()
    err = pytest.raises(hm.SWCMissingParentError, read_swc, io.BytesIO(data)).value
    assert err.lines == (6,) and str(err).startswith("<stream>:6: missing parent: ")


def test_comments_anywhere_and_irregular_spacing():
    text = ("#header one\n"
            "1\t1  0 0 0 5 -1# soma, no space before the hash\n"
            "\n"
            "   # between\n"
            "2 3 0 0 1 1 1    \t\n"
            "3 3 0 0 2 1 2 ## two hashes\n")
    m = quiet(text)
    np.testing.assert_array_equal(m.lines, [2, 5, 6])
    assert m.header == ("header one", " between")


def test_extra_fields_are_ignored_with_a_warning():
    text = "1 1 0 0 0 5 -1\n2 3 0 0 1 1 1 0.5 extra  # <-- here\n3 3 0 0 2 1 2\n"
    with pytest.warns(hm.SWCExtraFieldsWarning) as rec:
        m = read_text(text)
    w = [r.message for r in rec if r.category is hm.SWCExtraFieldsWarning][0]
    assert w.lines == marked(text) and str(w).startswith("inline.swc:2: extra fields: ")
    np.testing.assert_array_equal(m.parents, [-1, 0, 1])


# --- encodings and sources ----------------------------------------------------------------------

def test_undecodable_bytes_name_line_column_and_offset():
    data = b"1 1 0 0 0 5 -1\r\n# caf\xe9 au lait  # <-- here\r\n2 3 0 0 1 1 1\r\n\xff\r\n"
    with pytest.raises(hm.SWCEncodingError) as info:
        read_swc(io.BytesIO(data), name="latin.swc")
    err = info.value
    assert err.lines == (2, 4)
    e9, ff = data.index(b"\xe9"), data.index(b"\xff")
    assert f"line 2, column 6 (byte offset {e9} in the file): " + r"b'\xe9'" in str(err)
    assert f"line 4, column 1 (byte offset {ff} in the file)" in str(err)
    assert "encoding='latin-1'" in str(err) and str(err).startswith("latin.swc:2: undecodable ")


def test_other_encoding_and_byte_order_mark():
    m = read_swc(io.BytesIO("# café\n1 1 0 0 0 5 -1\n".encode("latin-1")), encoding="latin-1")
    assert m.header == (" café",)
    m = read_swc(io.BytesIO(b"\xef\xbb\xbf1 1 0 0 0 5 -1\n"))
    np.testing.assert_array_equal(m.ids, [1])


def test_paths_and_streams(tmp_path):
    text = "1 1 0 0 0 5 -1\n2 3 0 0 1 1 1\n"
    path = tmp_path / "cell.swc"
    path.write_text(text)
    for source, name in ((path, str(path)), (str(path), str(path)),
                         (io.StringIO(text), "<stream>"), (io.BytesIO(text.encode()), "<stream>")):
        m = read_swc(source)
        assert m.source == name and m.n_samples == 2
    with open(path) as fh:
        assert read_swc(fh).source == str(path)
    assert read_swc(io.StringIO(text), name="given.swc").source == "given.swc"


def test_wrong_sources():
    with pytest.raises(TypeError, match="io.StringIO"):
        read_swc("1 1 0 0 0 5 -1\n")
    with pytest.raises(TypeError, match="path or a readable stream"):
        read_swc(42)
    with pytest.raises(FileNotFoundError):
        read_swc("/nonexistent/cell.swc")


# --- order ----------------------------------------------------------------------------------------

def test_children_before_parents_with_smaller_ids_are_sorted_depth_first():
    text = ("10 1 0 0 0 5 -1\n"
            "5 3 0 0 2 1 7   # <-- here\n"
            "7 3 0 0 1 1 10  # <-- here\n")
    with pytest.warns(hm.SWCUnorderedWarning, match="depth first") as rec:
        m = read_text(text)
    assert rec[0].message.lines == marked(text)
    np.testing.assert_array_equal(m.ids, [10, 7, 5])
    np.testing.assert_array_equal(m.lines, [1, 3, 2])
    np.testing.assert_array_equal(m.parents, [-1, 0, 1])


def test_decreasing_ids_with_parents_first_keep_file_order():
    text = "1 1 0 0 0 5 -1\n3 3 0 0 1 1 1\n2 3 0 0 -1 1 1  # <-- here\n"
    with pytest.warns(hm.SWCUnorderedWarning, match="ids do not increase") as rec:
        m = read_text(text)
    assert rec[0].message.lines == marked(text)
    np.testing.assert_array_equal(m.ids, [1, 3, 2])


def test_strict_raises_every_convention_breach():
    text = ("1 0 0 0 0 5 -1  # <-- here\n"      # type 0 and no soma
            "2 3 0 0 1 1 1\n")
    with pytest.raises(hm.SWCStrictError) as info:
        read_text(text, strict=True)
    err = info.value
    assert err.category is hm.SWCNoSomaWarning and err.lines == marked(text)
    assert [e.category for e in err.also] == [hm.SWCUndefinedTypeWarning]
    assert str(err).startswith("inline.swc:1: no soma: ") and "undefined type" in str(err)
    assert read_text("1 1 0 0 0 5 -1\n2 3 0 0 6 1 1\n", strict=True).n_samples == 2


# --- radii, pickling, the model ---------------------------------------------------------------------

def test_check_radii_min_radius():
    m = read_text("1 1 0 0 0 5 -1\n2 3 0 0 1 0 1\n3 3 0 0 2 0.05 2\n4 3 0 0 3 0.5 3\n")
    with pytest.raises(hm.SWCRadiusError, match=r"1 of 4 samples have radius <= 0"):
        check_radii(m)
    with pytest.warns(hm.SWCRadiusClampedWarning, match="2 of 4 radii") as rec:
        out = check_radii(m, min_radius=0.1)
    assert rec[0].message.lines == (2, 3)
    np.testing.assert_array_equal(out.radii, [5, 0.1, 0.1, 0.5])
    np.testing.assert_array_equal(m.radii, [5, 0, 0.05, 0.5])          # input untouched
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_radii(out, min_radius=0.1) is out
    for bad in (0, -1, float("nan"), float("inf"), "1", True):
        with pytest.raises(ValueError, match="min_radius"):
            check_radii(m, min_radius=bad)


def test_errors_and_warnings_pickle():
    text = "1 1 0 0 0 5 -1\n2 3 0 0 1 1 1\n2 3 0 0 1 1 7\n"
    err = pytest.raises(hm.SWCDuplicateIdError, read_text, text).value
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is type(err) and str(back) == str(err)
    assert (back.lines, back.rule, back.path, len(back.also)) == (err.lines, err.rule, err.path, 1)
    w = hm.SWCNoSomaWarning("a.swc", [3], "detail")
    back = pickle.loads(pickle.dumps(w))
    assert str(back) == str(w) == "a.swc:3: no soma: detail" and back.lines == (3,)


def test_morphology_rejects_broken_invariants():
    good = dict(ids=[1, 2], types=[1, 3], xyz=np.zeros((2, 3)), radii=[1.0, 1.0],
                parents=[-1, 0], lines=[1, 2])
    Morphology(**good)
    for change in (dict(parents=[-1, 1]), dict(parents=[0, -1]), dict(parents=[-1, -1]),
                   dict(xyz=np.zeros((2, 2))), dict(lines=[1]), dict(radii=[1.0, np.nan])):
        with pytest.raises(ValueError):
            Morphology(**{**good, **change})
