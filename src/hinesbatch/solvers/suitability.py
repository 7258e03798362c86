"""Answers to ``suits(subject)``: whether a batch is large enough to pay for a backend's
overhead (threads, a GPU launch). Used by the backends' ``suits`` and by ``auto``."""
from __future__ import annotations

__all__ = ["unknowns", "large_enough"]


def unknowns(subject) -> int:
    """Number of unknowns in a Hines structure or batch (``n_nodes``) or in a tridiagonal batch
    shape (``batch * n``)."""
    n = getattr(subject, "n_nodes", None)
    return int(n) if n is not None else int(subject.batch) * int(subject.n)


def large_enough(subject, minimum: int, overhead: str) -> tuple[bool, str]:
    """A ``suits`` answer: whether ``subject`` has at least ``minimum`` unknowns, and if not,
    a reason naming the ``overhead`` that would outweigh the work."""
    n = unknowns(subject)
    if n < minimum:
        return False, f"{n} unknowns in all are too few to pay for {overhead} (fewer than {minimum})"
    return True, ""
