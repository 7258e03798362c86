"""Reading SWC files into a :class:`~hinesbatch.morphology.model.Morphology`.

An SWC file has one sample per line, ``id type x y z radius parent`` (µm), and ``#``
comments (whole lines, or the rest of a line after data). The reader checks, in order:

1. encoding (undecodable bytes: :class:`SWCEncodingError`, reading stops);
2. fields of every line (:class:`SWCSyntaxError`, reading stops after this check; a field
   longer than :data:`MAX_FIELD` characters is one, never converted); no samples at all:
   :class:`SWCEmptyError`; negative radii (:class:`SWCRadiusError`) and coordinates or radii
   too large for float32 geometry (:class:`SWCRangeError`);
3. the tree (:class:`SWCDuplicateIdError`, :class:`SWCMissingParentError`,
   :class:`SWCMultipleRootsError`, :class:`SWCCycleError`), all rules reported together;
4. the order (children listed before parents are re-sorted with an
   :class:`SWCUnorderedWarning`) and the conventions (:mod:`.conventions`).

Each error lists every line of its rule; ``docs/swc.md`` is the catalogue.

Memory and time grow with the file's size, whatever its content: files of plain 7-field
lines are parsed in bulk (:func:`numpy.loadtxt` on the lines without comments); other files
are split into fields first and parsed in blocks of rows, field by field only in a block
that fails; no field is converted or quoted whole when it is longer than any number.
"""
from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass
from typing import IO, Union

import numpy as np

from .conventions import convention_warnings
from .errors import (SWCCycleError, SWCDuplicateIdError, SWCEmptyError, SWCEncodingError,
                     SWCError, SWCExtraFieldsWarning, SWCMissingParentError,
                     SWCMultipleRootsError, SWCRadiusError, SWCRangeError, SWCStrictError,
                     SWCSyntaxError, SWCUnorderedWarning, SWCWarning, listing, quote)
from .model import Morphology

__all__ = ["read_swc"]

Source = Union[str, "os.PathLike[str]", IO[str], IO[bytes]]

FIELDS = ("id", "type", "x", "y", "z", "radius", "parent")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")             # universal newlines, as editors count
_PLAIN_BYTES = b"0123456789+-.eE \t\n"              # all the bulk parser may see
_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INT_COLS = [0, 1, 6]
_INT_LIMITS = {"id": (0, 2**63 - 1), "type": (-2**31, 2**31 - 1), "parent": (-2**63, 2**63 - 1)}
_STOP_SYNTAX = "the tree (ids, parents, roots, cycles) was not checked."
_BLOCK = 4096           # rows per bulk attempt in _parse_slow: a bad line costs its block

#: Longest field read as a number [characters]. A double needs at most 17 significant
#: digits, so 64 leaves room for any padding a writer uses; longer fields are syntax errors.
MAX_FIELD = 64

#: Coordinates and radii must be smaller than this in magnitude [µm]: NEURON stores points
#: as float32 (largest 3.4e38), where a diameter or a difference of two coordinates of
#: this size still fits (see :class:`SWCRangeError`).
MAX_MAGNITUDE = 1e38


def read_swc(source: Source, *, strict: bool = False, encoding: str = "utf-8",
             name: str | None = None) -> Morphology:
    """Read an SWC morphology.

    Parameters
    ----------
    source : str, os.PathLike, or a text or binary stream
        Path of an SWC file, or an open stream (anything with ``read()``). A ``str`` is
        always a path; wrap SWC text in :class:`io.StringIO`.
    strict : bool, keyword-only
        Raise :class:`~hinesbatch.morphology.errors.SWCStrictError` for the first convention
        breach instead of issuing :class:`~hinesbatch.morphology.errors.SWCWarning` s.
    encoding : str, keyword-only
        Encoding of files and binary streams (``"utf-8"``; a byte-order mark is skipped).
        Text streams are already decoded.
    name : str, keyword-only
        Name to use in messages and ``Morphology.source`` instead of the path or the
        stream's ``name`` (``"<stream>"`` when it has none).

    Returns
    -------
    Morphology
        Samples in file order when every parent precedes its children, otherwise in a
        parent-first order (with a warning); ``lines`` gives each sample's 1-based line.
        Coordinates and radii in µm, as written. Radii may be zero: call
        :func:`~hinesbatch.morphology.check_radii` before simulating.

    Raises
    ------
    SWCError
        One subclass per rule, message ``path:line: rule: ...`` listing every line involved.
    TypeError
        ``source`` is neither a path nor a readable stream.

    Warns
    -----
    SWCWarning
        One warning per convention rule broken, listing every line involved.
    """
    text, path = _read_text(source, encoding=encoding, name=name)
    lines = _LINE_BREAK.split(text)
    del text
    table, values = _parse_bulk(lines)
    if values is None:
        table = _tokenize(lines)
    del lines
    (ids, types, xyz, radii, pids), errors = _parse_fields(table, path, values)
    parent_index, tree_errors = _link(ids, pids, table.numbers, path)
    errors += tree_errors
    if errors:
        raise _combine(errors)
    order, found = _parent_first(ids, parent_index, table.numbers, path)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    par = parent_index[order]
    morph = Morphology(ids=ids[order], types=types[order], xyz=xyz[order], radii=radii[order],
                       parents=np.where(par >= 0, rank[np.maximum(par, 0)], -1),
                       lines=table.numbers[order], source=path, header=tuple(table.header))
    if table.extra:
        found.insert(0, _extra_fields(table.extra, path))
    _emit(found + convention_warnings(morph), strict=strict)
    return morph


def _extra_fields(lines: list[int], path: str) -> SWCExtraFieldsWarning:
    return SWCExtraFieldsWarning(
        path, lines, f"{_count(len(lines), 'line', 'has')} more than 7 fields; the fields after "
        f"the 7th are ignored (as NEURON does): line{'s' if len(lines) > 1 else ''} "
        + listing([str(k) for k in lines]))


def _read_text(source: Source, *, encoding: str, name: str | None) -> tuple[str, str]:
    """The decoded text and the name used in messages."""
    if isinstance(source, str) and ("\n" in source or "\r" in source):
        raise TypeError("read_swc got a str with line breaks; a str is a path. Pass SWC "
                        "text as io.StringIO(text).")
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        with open(path, "rb") as fh:
            data = fh.read()
    elif hasattr(source, "read"):
        path = getattr(source, "name", None)
        path = path if isinstance(path, str) else "<stream>"
        data = source.read()
    else:
        raise TypeError(f"read_swc needs a path or a readable stream, got {type(source).__name__}")
    path = path if name is None else str(name)
    if isinstance(data, str):
        return data, path
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"{path}: read() returned {type(data).__name__}, not str or bytes")
    return _decode(bytes(data), encoding, path), path


def _decode(data: bytes, encoding: str, path: str) -> str:
    """Decode, or raise SWCEncodingError naming every line with undecodable bytes."""
    codec = "utf-8-sig" if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else encoding
    try:
        return data.decode(codec)
    except UnicodeDecodeError as first:
        bad, start = [], 0
        for k, raw in enumerate(re.split(rb"\r\n|\r|\n", data), start=1):
            try:
                raw.decode(codec if k == 1 else encoding)
            except UnicodeDecodeError as err:
                bad.append((k, err.start, start + err.start, raw[err.start:err.end]))
            start += len(raw) + (2 if data[start + len(raw):start + len(raw) + 2] == b"\r\n"
                                 else 1)
        if not bad:                      # not an ASCII-compatible encoding: locate by offset
            k = len(re.findall(rb"\r\n|\r|\n", data[:first.start])) + 1
            bad = [(k, None, first.start, data[first.start:first.end])]
        items = [f"line {k}" + ("" if col is None else f", column {col + 1}")
                 + f" (byte offset {off} in the file): {chunk!r}" for k, col, off, chunk in bad]
        raise SWCEncodingError(
            path, [b[0] for b in bad],
            f"{_count(len(bad), 'line', 'has')} bytes that are not valid {encoding}: "
            + listing(items, sep="; ") + f". If the file uses another encoding, pass it, e.g. "
            f"read_swc(..., encoding='latin-1').", stopped="nothing else was checked.") from None


@dataclass
class _Table:
    rows: list | None   # the first 7 fields of each data line (None after a bulk parse)
    numbers: np.ndarray  # int64, 1-based line number of each row
    short: list         # (line, fields) of data lines with fewer than 7 fields
    extra: list         # lines with more than 7 fields
    header: list        # comment lines, without the '#'
    n_lines: int


def _tokenize(lines: list[str]) -> _Table:
    rows, numbers, short, extra, header = [], [], [], [], []
    for k, line in enumerate(lines, start=1):
        body, hash_, comment = line.partition("#")
        tok = body.split()
        if len(tok) == 7:
            rows.append(tok)
            numbers.append(k)
        elif len(tok) > 7:
            rows.append(tok[:7])
            numbers.append(k)
            extra.append(k)
        elif tok:
            short.append((k, tok))
        elif hash_:
            header.append(comment)
    n_lines = len(lines) - (lines[-1] == "")
    return _Table(rows, np.asarray(numbers, dtype=np.int64), short, extra, header, n_lines)


def _parse_fields(table: _Table, path: str, values=None):
    """Arrays (ids, types, xyz, radii, parent ids) and the value errors (negative radius,
    out of range), if any. ``values``: those of a bulk parse, else the table is parsed here.

    Raises SWCEmptyError, or SWCSyntaxError (with any value errors in ``also``).
    """
    if not table.rows and not table.short and values is None:
        what = ("is empty" if table.n_lines == 0 else
                f"has {_count(table.n_lines, 'line')}, all comments or blank")
        raise SWCEmptyError(path, [max(table.n_lines, 1)], f"the file {what}; an SWC file "
                            "needs at least one sample line (id type x y z radius parent).")
    syntax = None
    if values is None:
        values, syntax = _parse_slow(table, path)
    errors = [] if syntax is None else [syntax]
    errors += _value_errors(values, table.numbers, path)
    if syntax is not None:
        raise _combine(errors)
    return values, errors


def _value_errors(values, numbers: np.ndarray, path: str) -> list[SWCError]:
    """Negative radii, and coordinates or radii too large for finite geometry."""
    ids, _, xyz, radii, _ = values
    errors = []
    negative = np.flatnonzero(radii < 0)
    if negative.size:
        items = [f"sample {ids[i]} (line {numbers[i]}) has radius {radii[i]:g}"
                 for i in negative]
        errors.append(SWCRadiusError(path, numbers[negative],
                                     "radii must not be negative: " + listing(items, sep="; ")))
    huge = np.abs(np.column_stack([xyz, radii])) >= MAX_MAGNITUDE
    rows = np.flatnonzero(huge.any(axis=1))
    if rows.size:
        items = [f"sample {ids[i]} (line {numbers[i]}) has "
                 + _and([f"{name} {value:g}" for name, value, big in
                         zip(FIELDS[2:6], [*xyz[i], radii[i]], huge[i]) if big])
                 for i in rows]
        errors.append(SWCRangeError(
            path, numbers[rows], f"coordinates and radii must be below {MAX_MAGNITUDE:g} µm "
            "in magnitude (NEURON stores points as float32, largest 3.4e38, and no finite "
            "area or resistance comes from larger ones): " + listing(items, sep="; ")))
    return errors


def _parse_bulk(lines: list[str]):
    """(table, values) of a file whose sample lines are 7 plain decimal numbers each,
    parsed in bulk; (None, None) if any line needs :func:`_tokenize`."""
    bodies = [ln.partition("#")[0] if "#" in ln else ln for ln in lines]
    numbers = [k for k, body in enumerate(bodies, start=1) if body and not body.isspace()]
    if not numbers:
        return None, None
    values = _bulk_values([bodies[k - 1] for k in numbers])
    if values is None:
        return None, None
    header = [ln.partition("#")[2] for ln in lines
              if "#" in ln and not ln.partition("#")[0].strip()]
    table = _Table(None, np.asarray(numbers, dtype=np.int64), [], [], header,
                   len(lines) - (lines[-1] == ""))
    return table, values


def _bulk_values(data: list[str]):
    """(ids, types, xyz, radii, parent ids) of sample lines (comments removed) that hold 7
    plain decimal numbers each, in one :func:`numpy.loadtxt` call; None if any line needs
    :func:`_parse_slow` (which words every problem)."""
    try:
        if "\n".join(data).encode("ascii").translate(None, _PLAIN_BYTES):
            return None                             # a character no plain number has
    except UnicodeEncodeError:
        return None
    wide = [ln for ln in data if len(ln) > MAX_FIELD]
    if wide and max(map(len, " ".join(wide).split())) > MAX_FIELD:
        return None
    try:
        cols = np.loadtxt(data, dtype=np.float64, comments=None, ndmin=2)
    except ValueError:                              # not a number, or a line not 7 fields
        return None
    if cols.shape != (len(data), 7):
        return None
    ints = cols[:, _INT_COLS]
    if not (np.isfinite(cols).all() and (np.abs(ints) < 2**53).all()
            and (ints == np.trunc(ints)).all() and (ints[:, 0] >= 0).all()
            and (np.abs(ints[:, 1]) < 2**31).all()):
        return None
    ints = ints.astype(np.int64)
    return (ints[:, 0].copy(), ints[:, 1].astype(np.int32), cols[:, 2:5].copy(),
            cols[:, 5].copy(), ints[:, 2].copy())


def _parse_slow(table: _Table, path: str):
    """Parse naming every bad field of every line: (values, SWCSyntaxError or None).

    Blocks of :data:`_BLOCK` rows are parsed in bulk where they can be, the others field by
    field, so that a few bad lines (or extra fields) in a large file cost little.
    """
    bad, items = [], []
    for k, tok in table.short:
        bad.append(k)
        items.append(f"{path}:{k}: {_count(len(tok), 'field')} ({quote(' '.join(tok))}), "
                     "7 needed")
    numbers = table.numbers.tolist()
    blocks = [_parse_rows([], [], path, bad, items)]          # fixes dtypes and shapes
    for start in range(0, len(table.rows), _BLOCK):
        rows = table.rows[start:start + _BLOCK]
        block = _bulk_values([" ".join(row) for row in rows])
        if block is None:
            block = _parse_rows(rows, numbers[start:start + _BLOCK], path, bad, items)
        blocks.append(block)
    values = tuple(np.concatenate(parts) for parts in zip(*blocks))
    if not bad:
        return values, None
    order = np.argsort(bad, kind="stable")
    return values, SWCSyntaxError(
        path, bad, f"{_count(len(bad), 'line', 'is')} not a sample (7 fields: "
        f"{' '.join(FIELDS)}; id, type and parent integers, all finite):\n  "
        + listing([items[i] for i in order], sep="\n  "), stopped=_STOP_SYNTAX)


def _parse_rows(rows: list, numbers: list[int], path: str, bad: list[int], items: list[str]):
    """Field-by-field parse of ``rows`` (on lines ``numbers``); appends each bad line to
    ``bad`` and its problems to ``items``; its values are zeros."""
    parsed = []
    for k, tok in zip(numbers, rows):
        row, problems = _parse_row(tok)
        if problems:                      # its other fields may be shifted: do not use them
            bad.append(k)
            items.append(f"{path}:{k}: " + "; ".join(problems))
            row = [0] * 7
        parsed.append(row)
    arr = np.array(parsed, dtype=object).reshape(len(parsed), 7)
    return (arr[:, 0].astype(np.int64), arr[:, 1].astype(np.int32),
            arr[:, 2:5].astype(np.float64), arr[:, 5].astype(np.float64),
            arr[:, 6].astype(np.int64))


def _parse_row(tok: list[str]) -> tuple[list, list[str]]:
    values, problems = [], []
    for field, (name, text) in enumerate(zip(FIELDS, tok), start=1):
        if len(text) > MAX_FIELD:
            value, problem = 0, (f"{name} (field {field}) {quote(text)} is longer than any "
                                 f"number ({MAX_FIELD} characters at most)")
        elif name in _INT_LIMITS:
            value, problem = _parse_int(name, text)
        elif _FLOAT.fullmatch(text):
            value = float(text)
            problem = None if np.isfinite(value) else f"{name} {text!r} is out of range"
        else:
            value, problem = 0.0, f"{name} {text!r} is not a number"
        values.append(value)
        if problem:
            problems.append(problem)
    return values, problems


def _parse_int(name: str, text: str) -> tuple[int, str | None]:
    if _INT.fullmatch(text):
        value = int(text)
    elif _FLOAT.fullmatch(text) and float(text).is_integer() and abs(float(text)) < 2**53:
        value = int(float(text))          # "5.0": an integer written as a decimal
    else:
        kind = "a number" if not _FLOAT.fullmatch(text) else "an integer"
        return 0, f"{name} {text!r} is not {kind}"
    low, high = _INT_LIMITS[name]
    if not low <= value <= high:
        return 0, f"{name} {text!r} is out of range [{low}, {high}]"
    return value, None


def _link(ids, pids, numbers, path):
    """Parent index of each row (-1 for roots), and the tree errors (all rules)."""
    n = ids.size
    order = np.argsort(ids, kind="stable")
    sid = ids[order]
    errors = []
    dup = np.flatnonzero(sid[1:] == sid[:-1])
    if dup.size:
        errors.append(_duplicates(np.unique(sid[dup]), ids, numbers, path))
    pos = np.minimum(np.searchsorted(sid, pids), n - 1)
    found = (pids >= 0) & (sid[pos] == pids)
    missing = np.flatnonzero((pids >= 0) & ~found)
    if missing.size:
        errors.append(_missing(missing, ids, pids, numbers, path))
    roots = np.flatnonzero(pids < 0)
    if roots.size > 1:
        items = [f"sample {ids[i]} (line {numbers[i]})" for i in roots]
        errors.append(SWCMultipleRootsError(
            path, numbers[roots], f"{roots.size} samples have a negative parent id, but a "
            "morphology must be one tree with one root: " + listing(items)))
    parent_index = np.where(found, order[pos], -1)
    if dup.size:
        errors[0].stopped = "parent links were not checked for cycles (ids are not unique)."
        errors[0].refresh()
    else:
        cycle = _cycles(parent_index, ids, numbers, path)
        if cycle is not None:
            errors.append(cycle)
    return parent_index, errors


def _duplicates(dup_ids, ids, numbers, path) -> SWCDuplicateIdError:
    groups = [np.flatnonzero(ids == v) for v in dup_ids]
    items = [f"id {v} on lines " + _and([str(numbers[i]) for i in g])
             for v, g in zip(dup_ids, groups)]
    return SWCDuplicateIdError(path, numbers[np.concatenate(groups)],
                               "each sample id must be defined once: " + listing(items, sep="; "))


def _missing(rows, ids, pids, numbers, path) -> SWCMissingParentError:
    items = []
    for p in np.unique(pids[rows]):
        kids = rows[pids[rows] == p]
        who = _and([f"sample {ids[i]} (line {numbers[i]})" for i in kids])
        verb = "refers" if kids.size == 1 else "refer"
        items.append(f"{who} {verb} to parent {p}, which no line defines")
    return SWCMissingParentError(path, numbers[rows], listing(items, sep="; "))


def _cycles(parent_index, ids, numbers, path) -> SWCCycleError | None:
    n = parent_index.size
    if np.all(parent_index < np.arange(n)):
        return None                        # every parent listed first: no loop possible
    reached = np.zeros(n, dtype=bool)
    reached[_preorder(parent_index)] = True
    if reached.all():
        return None
    loops, state = [], np.zeros(n, dtype=np.int8)   # 0 new, 1 on current walk, 2 done
    for start in np.flatnonzero(~reached):
        walk, i = [], int(start)
        while state[i] == 0 and not reached[i]:
            state[i] = 1
            walk.append(i)
            i = int(parent_index[i])
        if state[i] == 1:                  # closed a new loop at i
            loops.append(walk[walk.index(i):])
        state[walk] = 2
    items = []
    for loop in loops:
        if len(loop) == 1:
            i = loop[0]
            items.append(f"sample {ids[i]} (line {numbers[i]}) is its own parent")
        else:
            chain = " -> ".join(f"{ids[i]} (line {numbers[i]})" for i in loop + loop[:1])
            items.append(f"samples {chain} form a loop")
    lines = numbers[np.concatenate([np.asarray(lp) for lp in loops])]
    return SWCCycleError(path, lines, "parent links must not form a loop: "
                         + listing(items, sep="; "))


def _preorder(parent_index: np.ndarray) -> np.ndarray:
    """Depth-first order from the roots (rows whose parent is -1), children in row order."""
    n = parent_index.size
    child_rows = np.flatnonzero(parent_index >= 0)
    by_parent = child_rows[np.argsort(parent_index[child_rows], kind="stable")]
    counts = np.bincount(parent_index[child_rows], minlength=n)
    starts = np.concatenate([[0], np.cumsum(counts)])
    out, stack = [], list(np.flatnonzero(parent_index < 0)[::-1])
    while stack:
        i = stack.pop()
        out.append(i)
        stack.extend(by_parent[starts[i]:starts[i + 1]][::-1].tolist())
    return np.asarray(out, dtype=np.int64)


def _parent_first(ids, parent_index, numbers, path) -> tuple[np.ndarray, list[SWCWarning]]:
    """Row order with every parent first (file order if possible), and the order warning."""
    n = ids.size
    rows = np.arange(n)
    has_parent = parent_index >= 0
    late = np.flatnonzero(has_parent & (parent_index > rows))
    if late.size == 0:
        falls = np.flatnonzero(ids[1:] <= ids[:-1]) + 1
        if falls.size == 0:
            return rows, []
        items = [f"sample {ids[i]} (line {numbers[i]}) follows sample {ids[i - 1]}"
                 for i in falls]
        return rows, [SWCUnorderedWarning(
            path, numbers[falls], "ids do not increase: " + listing(items, sep="; ")
            + "; samples kept in file order, which lists every parent first (NEURON's "
            "Import3d expects increasing ids).")]
    by_id = np.argsort(ids, kind="stable")
    rank = np.empty(n, dtype=np.int64)
    rank[by_id] = rows
    if np.all(rank[parent_index[has_parent]] < rank[has_parent]):
        order, how = by_id, "by id (every parent then has a smaller id)"
    else:
        order, how = _preorder(parent_index), "depth first from the root, children in file order"
    items = [f"sample {ids[i]} (line {numbers[i]}) before its parent {ids[parent_index[i]]} "
             f"(line {numbers[parent_index[i]]})" for i in late]
    return order, [SWCUnorderedWarning(
        path, np.concatenate([numbers[late], numbers[parent_index[late]]]),
        f"{_count(late.size, 'sample', 'is')} listed before {'its' if late.size == 1 else 'their'} "
        f"parent: " + listing(items, sep="; ") + f". Samples were re-sorted {how}; "
        "Morphology.lines still gives each sample's line in the file.")]


def _combine(errors: list[SWCError]) -> SWCError:
    """The first error, carrying the others (also shown in its message)."""
    first = errors[0]
    first.also = tuple(errors[1:])
    first.refresh()
    return first


def _emit(found: list[SWCWarning], *, strict: bool) -> None:
    if strict and found:
        raise SWCStrictError(found[0], also=[SWCStrictError(w) for w in found[1:]])
    for w in found:
        warnings.warn(w, stacklevel=3)


def _count(n: int, noun: str, verb: str = "") -> str:
    """``"1 line has"``, ``"2 lines have"``: a count, its noun and the verb agreeing."""
    plural = {"has": "have", "is": "are"}
    text = f"{n} {noun}{'' if n == 1 else 's'}"
    return text if not verb else f"{text} {verb if n == 1 else plural[verb]}"


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
