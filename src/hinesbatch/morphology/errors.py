"""Typed SWC errors and warnings, located like a compiler's messages (``file.swc:17: rule: ...``).

Every problem found in an SWC file is one of these classes, one class per rule (the full
catalogue, with what triggers each one and what happens then, is ``docs/swc.md``).

* :class:`SWCError` (a :class:`ValueError`): the file cannot be turned into one valid tree.
* :class:`SWCWarning` (a :class:`UserWarning`): the file parses as a tree but breaks a
  convention or looks implausible. ``read_swc(..., strict=True)`` raises
  :class:`SWCStrictError` instead, which carries the warning's class in ``category``.

Both carry ``path``, ``line`` (the first line involved), ``lines`` (every line involved,
ascending), ``rule`` (a short rule name) and ``detail`` (the message after the rule name).
"""
from __future__ import annotations

from typing import Iterable, Sequence

__all__ = [
    "SWCError", "SWCEncodingError", "SWCSyntaxError", "SWCEmptyError", "SWCRadiusError",
    "SWCRangeError", "SWCDuplicateIdError", "SWCMissingParentError", "SWCMultipleRootsError",
    "SWCCycleError", "SWCGeometryError", "SWCStrictError",
    "SWCWarning", "SWCExtraFieldsWarning", "SWCUnorderedWarning", "SWCNoSomaWarning",
    "SWCInterruptedSomaWarning", "SWCSomaAttachmentWarning", "SWCUndefinedTypeWarning",
    "SWCGeometryWarning", "SWCZeroLengthWarning", "SWCFatEndWarning",
    "SWCDetachedNeuriteWarning", "SWCRadiusClampedWarning",
]

#: At most this many offending lines are spelled out in a message; ``lines`` has them all.
MAX_LISTED = 20

#: Longest field a message quotes in full [characters]; longer ones are cut (:func:`quote`).
MAX_QUOTED = 64

#: How many leading characters of a cut field a message shows.
QUOTED_HEAD = 20


def listing(items: Sequence[str], *, sep: str = ", ") -> str:
    """Join message items, cut after :data:`MAX_LISTED` with a count of the rest."""
    if len(items) <= MAX_LISTED:
        return sep.join(items)
    rest = len(items) - MAX_LISTED
    return sep.join(items[:MAX_LISTED]) + f"{sep}... and {rest} more (all in the .lines attribute)"


def quote(text: str) -> str:
    """``repr(text)``, cut to its first :data:`QUOTED_HEAD` characters and its length when
    longer than :data:`MAX_QUOTED` (``'12345678901234567890'... (587000 characters)``)."""
    if len(text) <= MAX_QUOTED:
        return repr(text)
    return f"{text[:QUOTED_HEAD]!r}... ({len(text)} characters)"


class _Located:
    """What SWC errors and warnings share: where (path, lines), which rule, and the text."""

    rule: str = "swc"

    def _locate(self, path: str, lines: Iterable[int], detail: str, rule: str | None) -> str:
        self.path = str(path)
        self.lines = tuple(sorted({int(k) for k in lines}))
        self.line = self.lines[0] if self.lines else 1
        self.detail = detail
        if rule is not None:
            self.rule = rule
        return f"{self.path}:{self.line}: {self.rule}: {detail}"

    def __reduce__(self):
        # Keep errors picklable (multiprocessing) although __init__ takes keywords.
        return (_rebuild, (type(self), self.__dict__.copy()))


def _rebuild(cls, state):
    obj = cls.__new__(cls)
    obj.__dict__.update(state)
    Exception.__init__(obj, str(_format(obj)))
    return obj


def _format(obj) -> str:
    text = f"{obj.path}:{obj.line}: {obj.rule}: {obj.detail}"
    for other in getattr(obj, "also", ()):
        text += f"\nalso {other}"
    if getattr(obj, "stopped", None):
        text += f"\nReading stopped after this check: {obj.stopped}"
    return text


class SWCError(_Located, ValueError):
    """An SWC file that cannot be read as one valid tree.

    Attributes
    ----------
    path : str
        The file (or the stream's name, ``"<stream>"`` when it has none).
    line : int
        First line involved (1-based).
    lines : tuple[int, ...]
        Every line involved, ascending (messages list at most 20 of them).
    rule : str
        Short name of the rule that failed, e.g. ``"missing parent"``.
    detail : str
        The message after ``path:line: rule:``.
    also : tuple[SWCError, ...]
        Further problems of other rules found by the same check (also in the message).
    stopped : str or None
        What was not checked because reading stopped here (also in the message).
    """

    rule = "swc error"

    def __init__(self, path: str, lines: Iterable[int], detail: str, *, rule: str | None = None,
                 also: Sequence["SWCError"] = (), stopped: str | None = None):
        self._locate(path, lines, detail, rule)
        self.also = tuple(also)
        self.stopped = stopped
        super().__init__(_format(self))

    def refresh(self) -> None:
        """Rebuild the message after ``also`` or ``stopped`` changed."""
        self.args = (_format(self),)


class SWCEncodingError(SWCError):
    """Bytes that are not valid in the file's encoding (the message gives line and byte offset)."""

    rule = "undecodable bytes"


class SWCSyntaxError(SWCError):
    """A line that is not a sample: too few fields, a non-numeric or non-finite field, or a
    non-integer or out-of-range id, type or parent."""

    rule = "syntax error"


class SWCEmptyError(SWCError):
    """No samples at all (an empty file, or only comments and blank lines)."""

    rule = "no samples"


class SWCRadiusError(SWCError):
    """A negative radius (always an error), or a zero radius where the cable equation needs a
    positive one (raised by :func:`~hinesbatch.morphology.check_radii`)."""

    rule = "negative radius"


class SWCRangeError(SWCError):
    """A coordinate or radius of magnitude ``1e38`` µm or more. NEURON (and MorphIO) store
    points and diameters as float32, whose largest value is 3.4e38: such a value, a
    diameter twice it or the difference of two such coordinates is infinite there, and no
    finite area or axial resistance can be computed from it."""

    rule = "value out of range"


class SWCDuplicateIdError(SWCError):
    """The same sample id defined on more than one line."""

    rule = "duplicate id"


class SWCMissingParentError(SWCError):
    """A parent id that no line defines."""

    rule = "missing parent"


class SWCMultipleRootsError(SWCError):
    """More than one sample with a negative parent id (a forest, not one tree)."""

    rule = "multiple roots"


class SWCCycleError(SWCError):
    """Parent links that form a loop (a sample that is its own parent included)."""

    rule = "cycle"


class SWCGeometryError(SWCError):
    """A section whose length, membrane area or axial resistance is not finite although
    every value read was (raised by :func:`~hinesbatch.discretize`); the message names the
    section and ``lines`` holds the lines of every sample that made its points."""

    rule = "non-finite geometry"


class SWCStrictError(SWCError):
    """A convention breach that ``strict=True`` turned into an error.

    ``category`` is the :class:`SWCWarning` subclass that would have been issued and ``rule``
    its rule.
    """

    def __init__(self, warning: "SWCWarning", *, also: Sequence["SWCError"] = ()):
        self.category = type(warning)
        super().__init__(warning.path, warning.lines, warning.detail, rule=warning.rule,
                         also=also)


class SWCWarning(_Located, UserWarning):
    """An SWC file that reads as a tree but breaks a convention or looks implausible.

    Same attributes as :class:`SWCError` (``path``, ``line``, ``lines``, ``rule``, ``detail``).
    Silence one kind with ``warnings.filterwarnings("ignore", category=...)``.
    """

    rule = "swc warning"

    def __init__(self, path: str, lines: Iterable[int], detail: str, *, rule: str | None = None):
        super().__init__(self._locate(path, lines, detail, rule))


class SWCExtraFieldsWarning(SWCWarning):
    """Lines with more than 7 fields; the extra fields are ignored (as NEURON does)."""

    rule = "extra fields"


class SWCUnorderedWarning(SWCWarning):
    """A child listed before its parent (samples are re-sorted), or ids that do not increase."""

    rule = "unordered samples"


class SWCNoSomaWarning(SWCWarning):
    """No sample of type 1 (soma)."""

    rule = "no soma"


class SWCInterruptedSomaWarning(SWCWarning):
    """Soma samples that are not one contiguous run of the tree and the sample order."""

    rule = "interrupted soma"


class SWCSomaAttachmentWarning(SWCWarning):
    """A neurite attached to a soma sample where conventions say it should not be: a non-root
    point of a 3-point soma, or an interior point of a multi-point soma."""

    rule = "neurite on soma point"


class SWCUndefinedTypeWarning(SWCWarning):
    """Samples of type 0 ("undefined") or of a negative type."""

    rule = "undefined type"


class SWCGeometryWarning(SWCWarning):
    """Base class of the geometric plausibility warnings (common in real reconstructions)."""

    rule = "geometry"


class SWCZeroLengthWarning(SWCGeometryWarning):
    """A sample at exactly its parent's position (a zero-length segment)."""

    rule = "zero-length segment"


class SWCFatEndWarning(SWCGeometryWarning):
    """A tip whose radius is more than twice the mean radius of the last 5 samples of its
    branch (NeuroM's ``has_no_fat_ends``)."""

    rule = "fat end"


class SWCDetachedNeuriteWarning(SWCGeometryWarning):
    """A neurite whose first sample lies more than 2 soma radii from the soma sample it hangs
    on (NeuroM's ``has_no_root_node_jumps``; also catches dangling neurites)."""

    rule = "neurite far from soma"


class SWCRadiusClampedWarning(SWCWarning):
    """Radii raised to ``min_radius`` by :func:`~hinesbatch.morphology.check_radii`."""

    rule = "radius clamped"
