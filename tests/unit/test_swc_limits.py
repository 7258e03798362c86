"""Inputs at the edges of what SWC reading can hold: fields longer than any number, integers
beyond Python's digit limit, and coordinates or radii too large for finite geometry. Memory
and messages stay proportional to the file; every problem is a located SWCError. Offending
rows carry ``# <-- here`` and the expected line numbers are computed from those markers."""
from __future__ import annotations

import io
import re
import tracemalloc
import warnings

import numpy as np
import pytest

import hinesbatch.morphology as hm
from hinesbatch.discretize import discretize
from hinesbatch.morphology import read_swc
from hinesbatch.morphology.swc import MAX_FIELD, MAX_MAGNITUDE

MARK = "<-- here"


def marked(text: str) -> tuple[int, ...]:
    return tuple(k for k, line in enumerate(re.split(r"\r\n|\r|\n", text), 1) if MARK in line)


def read_text(text: str, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hm.SWCWarning)
        return read_swc(io.StringIO(text, newline=""), name="edge.swc", **kw)


def raises(cls, text: str):
    with pytest.raises(cls) as info:
        read_text(text)
    err = info.value
    assert err.lines == marked(text), str(err)
    assert str(err).startswith(f"edge.swc:{err.lines[0]}: {err.rule}: ")
    return err


def chain(n: int) -> list[str]:
    """Rows of an unbranched cell of ``n`` samples, 1 µm apart."""
    return ["1 1 0 0 0 5 -1"] + [f"{k} 3 0 0 {k} 1 {k - 1}" for k in range(2, n + 1)]


# --- long fields --------------------------------------------------------------------------------

def test_one_long_number_keeps_memory_proportional_to_the_file():
    rows = chain(1000)
    rows[500] = f"501 3 0 0 {'1' * 20_000} 1 500  # <-- here"
    text = "\n".join(rows) + "\n"
    tracemalloc.start()
    try:
        err = raises(hm.SWCSyntaxError, text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 40 * len(text), f"{peak} bytes traced for {len(text)} characters of text"
    assert "z (field 5) '11111111111111111111'... (20000 characters) is longer than" in str(err)


@pytest.mark.parametrize("field", [0, 1, 6])
def test_integer_beyond_pythons_digit_limit_is_a_located_syntax_error(field):
    row = ["2", "3", "0", "0", "1", "1", "1"]
    row[field] = "7" * 5000                    # int() refuses more than 4300 digits
    text = f"1 1 0 0 0 5 -1\n{' '.join(row)}  # <-- here\n"
    err = raises(hm.SWCSyntaxError, text)
    name = ("id", "type", "x", "y", "z", "radius", "parent")[field]
    assert f"{name} (field {field + 1}) '77777777777777777777'... (5000 characters)" in str(err)


def test_messages_quote_only_the_start_of_a_long_field():
    text = ("1 1 0 0 0 5 -1\n"
            f"2 3 0 0 {'9' * 200_000} 1 1  # <-- here\n"
            f"3 3 {'8' * 100_000} 1  # <-- here\n")
    err = raises(hm.SWCSyntaxError, text)
    assert len(str(err)) < 1000, len(str(err))
    assert "(200000 characters)" in str(err)
    assert "4 fields ('3 3 8888888888888888'... (100006 characters)), 7 needed" in str(err)


@pytest.mark.parametrize("separator", [" ", "\u00a0"])     # bulk parse, line-by-line parse
def test_a_number_may_have_max_field_characters_and_no_more(separator):
    fits = "0" * (MAX_FIELD - 3) + "1.5"
    m = read_text(separator.join(["1", "1", "0", "0", fits, "5", "-1"]) + "\n")
    assert m.xyz[0, 2] == 1.5
    text = separator.join(["1", "1", "0", "0", "0" + fits, "5", "-1"]) + "  # <-- here\n"
    err = raises(hm.SWCSyntaxError, text)
    assert f"({MAX_FIELD + 1} characters) is longer than any number" in str(err)


def test_bulk_and_line_by_line_parses_agree(monkeypatch):
    text = ("# header\r\n1\t1 0.5 -.25 5. 1e-1 -1 # soma\r\n\r\n  # note\r\n"
            "2 3 1E+2 007 -0 0.1 1\r\n3 3 1 0 1 2.0 2.0\r\n4 3 1 0 2 3 3 extra\r\n")
    bulk = read_text(text.replace(" extra", ""))                 # one loadtxt on the lines
    tokenized = read_text(text)                                  # split first, then loadtxt
    spaced = read_text(text.replace(" extra", "").replace("2 3 1E+2", "2\u00a03 1E+2"))
    monkeypatch.setattr(hm.swc, "_bulk_values", lambda data: None)
    slow = read_text(text)                                       # field by field
    for m in (tokenized, spaced, slow):
        for name in ("ids", "types", "xyz", "radii", "parents", "lines"):
            np.testing.assert_array_equal(getattr(m, name), getattr(bulk, name))
        assert m.header == (" header", " note")


def test_ids_beyond_float_precision_are_exact():
    big = 2**53 + 1                            # not a float64: read as an integer
    m = read_text(f"{big} 1 0 0 0 5 -1\n{big + 2} 3 0 0 1 1 {big}\n")
    assert m.ids.tolist() == [big, big + 2]


# --- values too large for geometry ------------------------------------------------------------

@pytest.mark.parametrize("field", ["x", "y", "z", "radius"])
@pytest.mark.parametrize("value", ["1e38", "-1e200", "1.7e308"])
def test_coordinate_or_radius_beyond_float32_is_a_range_error(field, value):
    row = dict(zip(["x", "y", "z", "radius"], ["0", "0", "1", "1"]))
    row[field] = value.lstrip("-") if field == "radius" else value   # not a negative radius
    text = f"1 1 0 0 0 5 -1\n2 3 {' '.join(row.values())} 1  # <-- here\n3 3 0 0 2 1 2\n"
    err = raises(hm.SWCRangeError, text)
    assert err.rule == "value out of range"
    assert f"sample 2 (line 2) has {field} {float(row[field]):g}" in str(err)


def test_largest_accepted_values_give_finite_geometry():
    just_below = float(np.nextafter(MAX_MAGNITUDE, 0))
    m = read_text(f"1 1 0 0 0 5 -1\n2 3 0 0 {-just_below!r} 1 1\n3 3 0 0 {just_below!r} "
                  f"{just_below!r} 2\n")
    g = discretize(m)
    assert np.isfinite(g.area_um2).all() and np.isfinite(g.ri_megohm[1:]).all()


def test_range_errors_are_reported_with_tree_errors():
    text = ("1 1 0 0 0 5 -1\n"
            "2 3 0 1e300 1 1 1  # <-- here\n"
            "3 3 0 0 2 1 9\n")
    err = raises(hm.SWCRangeError, text)
    assert [type(e) for e in err.also] == [hm.SWCMissingParentError]


def test_discretize_names_the_line_of_a_huge_value_without_numpy_warnings(tmp_path):
    path = tmp_path / "huge.swc"
    text = "1 1 0 0 0 5 -1\n2 3 0 0 1 1 1\n3 3 0 0 2e200 1 2  # <-- here\n"
    path.write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("error")         # a NumPy overflow warning would fail here
        with pytest.raises(hm.SWCRangeError) as info:
            discretize(path)
    assert info.value.lines == marked(text)
    assert str(info.value).startswith(f"{path}:3: value out of range: ")
