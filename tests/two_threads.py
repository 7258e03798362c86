"""The two-thread harness of the thread-safety tests (CPU in tests/unit, GPU in tests/gpu):
one plan called from two threads started together, each keeping its own outcomes."""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

from hinesbatch import SingularSystemError


def run_two_threads(first: Callable[[], object], second: Callable[[], object], *, times: int,
                    context: Callable[[], contextlib.AbstractContextManager] =
                    contextlib.nullcontext) -> tuple[list, list]:
    """Call ``first`` and ``second`` ``times`` times each, in two threads released together.

    Each thread enters ``context()`` (e.g. its own CuPy stream) around all its calls and
    keeps, per call, the result or the :class:`SingularSystemError` raised. Any other
    exception in a thread is re-raised here once both have finished.

    Returns
    -------
    (list, list)
        The outcomes of ``first`` and of ``second``, in call order.
    """
    barrier = threading.Barrier(2)
    outcomes: tuple[list, list] = ([], [])
    crashes: list[BaseException] = []

    def run(work, out):
        try:
            with context():
                barrier.wait()
                for _ in range(times):
                    try:
                        out.append(work())
                    except SingularSystemError as exc:
                        out.append(exc)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the main thread
            crashes.append(exc)

    threads = [threading.Thread(target=run, args=(work, out))
               for work, out in zip((first, second), outcomes, strict=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if crashes:
        raise crashes[0]
    return outcomes
