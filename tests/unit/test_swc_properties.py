"""Property-based tests: random valid trees written as SWC (in random layouts) read back as the
same tree; random corruptions of a file never raise anything but SWCError."""
from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import hinesbatch.morphology as hm
from hinesbatch.morphology import read_swc
from hinesbatch.morphology.swc import MAX_MAGNITUDE

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
HUGE = MAX_MAGNITUDE     # coordinates and radii must stay below it (SWCRangeError)
finite = st.one_of(st.floats(min_value=-1e4, max_value=1e4),
                   st.floats(min_value=-HUGE, max_value=HUGE, exclude_min=True,
                             exclude_max=True))
radius = st.one_of(st.just(0.0), st.floats(min_value=0.0, max_value=1e3),
                   st.floats(min_value=0.0, max_value=HUGE, exclude_max=True))


@st.composite
def trees(draw):
    """A random rooted tree: unique ids, a parent for each sample but the first."""
    n = draw(st.integers(1, 40))
    parents = [-1] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    ids = draw(st.lists(st.integers(0, 10**9), min_size=n, max_size=n, unique=True))
    types = draw(st.lists(st.integers(0, 12), min_size=n, max_size=n))
    xyz = draw(st.lists(st.tuples(finite, finite, finite), min_size=n, max_size=n))
    radii = draw(st.lists(radius, min_size=n, max_size=n))
    return dict(ids=ids, parents=parents, types=types, xyz=xyz, radii=radii)


@st.composite
def layouts(draw, tree):
    """SWC text of ``tree``: line order, line ending, comments, spacing and number format
    drawn at random. Returns the text and the line number of each sample."""
    n = len(tree["ids"])
    shuffle = draw(st.booleans())
    order = draw(st.permutations(range(n))) if shuffle else list(range(n))
    newline = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    space = st.sampled_from([" ", "  ", "\t", " \t "])
    out, line_of = [], {}
    for _ in range(draw(st.integers(0, 3))):
        out.append("#" + draw(st.text(st.characters(blacklist_categories=["Cs", "Cc"],
                                                    blacklist_characters="\r\n\x85\u2028\u2029"),
                                      max_size=20)))
    for i in order:
        if draw(st.integers(0, 9)) == 0:
            out.append(draw(st.sampled_from(["", "   ", "# comment", "\t# indented"])))
        parent = -1 if tree["parents"][i] < 0 else tree["ids"][tree["parents"][i]]
        fields = [str(tree["ids"][i]), str(tree["types"][i]),
                  *(repr(float(v)) for v in tree["xyz"][i]), repr(float(tree["radii"][i])),
                  str(parent)]
        row = draw(space).join(fields)
        if draw(st.integers(0, 4)) == 0:
            row = draw(space) + row + draw(st.sampled_from([" ", " # note", "#x", "\t"]))
        out.append(row)
        line_of[tree["ids"][i]] = len(out)
    text = newline.join(out) + (newline if draw(st.booleans()) else "")
    return text, line_of


@pytest.mark.slow
@SETTINGS
@given(data=st.data())
def test_random_tree_round_trip(data):
    tree = data.draw(trees())
    text, line_of = data.draw(layouts(tree))
    with warnings.catch_warnings():
        warnings.simplefilter("error")                  # no NumPy overflow warnings either
        warnings.simplefilter("ignore", hm.SWCWarning)
        m = read_swc(io.StringIO(text, newline=""))
        m_bytes = read_swc(io.BytesIO(text.encode("utf-8")))
    n = len(tree["ids"])
    assert m.n_samples == n
    assert m.parents[0] == -1 and np.all(m.parents[1:] < np.arange(1, n))
    index = {int(i): k for k, i in enumerate(tree["ids"])}
    for k in range(n):
        src = index[int(m.ids[k])]
        parent = tree["parents"][src]
        want_parent = -1 if parent < 0 else tree["ids"][parent]
        got_parent = -1 if m.parents[k] < 0 else int(m.ids[m.parents[k]])
        assert got_parent == want_parent
        assert m.types[k] == tree["types"][src]
        assert tuple(m.xyz[k]) == tuple(float(v) for v in tree["xyz"][src])
        assert m.radii[k] == tree["radii"][src]
        assert m.lines[k] == line_of[int(m.ids[k])]
    for field in ("ids", "types", "xyz", "radii", "parents", "lines"):
        np.testing.assert_array_equal(getattr(m_bytes, field), getattr(m, field))


@SETTINGS
@given(data=st.data())
def test_file_order_is_kept_when_parents_come_first(data):
    tree = data.draw(trees())
    rows = [f"{tree['ids'][i]} 1 0 0 {i} 1 "
            f"{-1 if tree['parents'][i] < 0 else tree['ids'][tree['parents'][i]]}"
            for i in range(len(tree["ids"]))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hm.SWCWarning)
        m = read_swc(io.StringIO("\n".join(rows)))
    np.testing.assert_array_equal(m.ids, tree["ids"])
    np.testing.assert_array_equal(m.parents, tree["parents"])
    np.testing.assert_array_equal(m.lines, np.arange(1, len(rows) + 1))


BASE = (b"# a small cell\n1 1 0 0 0 5 -1\n2 3 0 0 5 1 1\n3 3 0 5 10 0.5 2\n"
        b"4 3 0 -5 10 0.5 2\n5 2 0 0 -5 1 1\n6 2 0 0 -9 0 5\n")
noise = st.sampled_from([b"0", b"7", b"-", b"+", b".", b"e", b"#", b" ", b"\t", b"\n", b"\r",
                         b"x", b"\x00", b"\xff", b"\xc3", "\u00e9".encode(), b"nan", b"-1",
                         b"1e999", b"1e308", b"99999999999999999999"])


@st.composite
def corrupted(draw):
    data = bytearray(BASE)
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.integers(0, 5))
        at = draw(st.integers(0, len(data)))
        if kind == 0 and data:
            del data[min(at, len(data) - 1)]
        elif kind == 1:
            data[at:at] = draw(noise)
        elif kind == 2:                         # duplicate or drop a whole line
            lines = bytes(data).split(b"\n")
            k = draw(st.integers(0, len(lines) - 1))
            lines.insert(k, lines[k]) if draw(st.booleans()) else lines.pop(k)
            data = bytearray(b"\n".join(lines))
        elif kind == 3:                         # swap two lines
            lines = bytes(data).split(b"\n")
            a, b = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            lines[a], lines[b] = lines[b], lines[a]
            data = bytearray(b"\n".join(lines))
        elif kind == 4:
            data[at:at + draw(st.integers(1, 4))] = draw(noise)
        else:                                   # re-link: a new id or parent id on one line
            lines = bytes(data).split(b"\n")
            k = draw(st.integers(0, len(lines) - 1))
            fields = lines[k].split(b" ")
            if len(fields) >= 7:
                fields[draw(st.sampled_from([0, 6]))] = str(draw(st.integers(-2, 8))).encode()
                lines[k] = b" ".join(fields)
            data = bytearray(b"\n".join(lines))
    return bytes(data)


@settings(max_examples=600, deadline=None)
@given(data=corrupted(), strict=st.booleans())
def test_corruption_raises_only_swc_errors(data, strict):
    assume(data != BASE)
    n_lines = len(data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n"))
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m = read_swc(io.BytesIO(data), name="bad.swc", strict=strict)
    except hm.SWCError as err:
        assert str(err).startswith(f"bad.swc:{err.line}: {err.rule}: ")
        assert 1 <= err.line <= n_lines and all(1 <= k <= n_lines for k in err.lines)
        return
    assert all(issubclass(w.category, hm.SWCWarning) for w in caught)
    assert not (strict and caught)
    assert m.parents[0] == -1 and np.all(m.parents[1:] < np.arange(1, m.n_samples))
    assert np.all((1 <= m.lines) & (m.lines <= n_lines))
    for w in caught:
        assert str(w.message).startswith(f"bad.swc:{w.message.line}: ")
    try:
        hm.check_radii(m)
    except hm.SWCRadiusError:
        pass
