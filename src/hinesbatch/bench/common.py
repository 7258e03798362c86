"""What every benchmark shares: machine details, timing, and the JSON + Markdown writers.

A result file holds the question the benchmark answers, the machine it ran on (CPU, cores,
library versions, date), the rows measured and free-form notes (for example whether a goal
was met). :func:`write_results` writes it twice: ``NAME.json`` for programs and ``NAME.md``
(a Markdown table per result table) for people.
"""
from __future__ import annotations

import datetime
import importlib.metadata
import json
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, Mapping, Sequence

__all__ = ["machine_info", "cpu_model", "git_revision", "median_time", "interleaved_times", "write_results",
           "markdown_table"]

#: Libraries whose versions are recorded beside every result.
_LIBRARIES = ("numpy", "numba", "scipy", "neuron", "cupy-cuda13x", "cupy-cuda12x", "tqdm")


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux, else :func:`platform.processor`)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def git_revision() -> str | None:
    """The source tree's commit (``+dirty`` with uncommitted changes under ``src/``), or None.

    ``HINESBATCH_GIT_REVISION``, when set, is taken instead: a copy of the tree whose
    ``.git`` is missing or not its own (a machine the sources were copied to) names the
    commit it was copied from that way."""
    import os
    import subprocess

    if os.environ.get("HINESBATCH_GIT_REVISION"):
        return os.environ["HINESBATCH_GIT_REVISION"]

    root = Path(__file__).resolve().parents[3]
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
                              capture_output=True, text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "src"],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "") if head else None


def machine_info(extra: Mapping | None = None) -> dict:
    """Where and when a benchmark ran, as a JSON-serialisable dict.

    Keys: ``date`` (UTC, ISO 8601), ``cpu_model``, ``logical_cpus`` (``os.cpu_count``),
    ``usable_cpus`` (the process's affinity), ``numba_threads``, ``platform``, ``python``,
    ``hinesbatch``, ``git`` (the commit measured, if run from a git checkout) and
    ``versions`` (installed library versions, ``None`` when absent), plus everything in
    ``extra`` (a GPU benchmark adds its device and driver here).
    """
    from .. import __version__

    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = os.cpu_count()
    try:
        import numba

        threads = numba.get_num_threads()
    except ImportError:
        threads = None
    info = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cpu_model": cpu_model(),
        "logical_cpus": os.cpu_count(),
        "usable_cpus": usable,
        "numba_threads": threads,
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "hinesbatch": __version__,
        "git": git_revision(),
        "versions": {name: _version(name) for name in _LIBRARIES},
    }
    info.update(extra or {})
    return info


def find_morphologies(args, names: Sequence[str]) -> list[Path]:
    """The SWC files a benchmark runs on: ``args.swc`` when given, the bundled c91662.swc
    with ``args.quick``, else ``names`` from ``tests/data/morphologies/real`` of the current
    folder or of the source tree. ``FileNotFoundError`` names a file that is missing."""
    if args.swc:
        paths = [Path(p) for p in args.swc]
    elif args.quick:
        from ..sim.passive import default_morphology

        with default_morphology() as path:  # a real file for a source install
            paths = [Path(path)]
    else:
        roots = [Path.cwd(), Path(__file__).resolve().parents[3]]  # cwd or the source tree
        paths = []
        for name in names:
            found = [r / "tests/data/morphologies/real" / name for r in roots]
            found = [p for p in found if p.is_file()]
            if not found:
                raise FileNotFoundError(
                    f"{name} (a default morphology) is not in tests/data/morphologies/real of "
                    "this directory or the source tree; pass --swc FILE [FILE ...]")
            paths.append(found[0])
    for p in paths:
        if not p.is_file():
            raise FileNotFoundError(f"{p}: no such file")
    return paths


def median_time(run: Callable[[], object], *, repeats: int, setup: Callable[[], object] | None = None,
                warmup: int = 1) -> tuple[float, list[float]]:
    """Median wall time [s] of ``run()`` over ``repeats`` calls, after ``warmup`` untimed calls.

    ``setup()`` (untimed) runs before every call, for example to restore inputs a solver
    overwrites. Times are ``time.perf_counter`` differences. Returns (median, all times).
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    for _ in range(warmup):
        if setup is not None:
            setup()
        run()
    times = []
    for _ in range(repeats):
        if setup is not None:
            setup()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times


def interleaved_times(runs: Mapping[str, Callable[[], object]], *, repeats: int,
                      setup: Callable[[], object] | None = None,
                      warmup: int = 1) -> dict[str, list[float]]:
    """Wall times [s] of several contenders, timed in turn (A B A B ...) after warm-up.

    Interleaving makes the comparison fair on a shared, noisy machine: a slow spell hits all
    contenders alike. ``setup()`` (untimed) runs before every call. Returns name -> times.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    for _ in range(warmup):
        for run in runs.values():
            if setup is not None:
                setup()
            run()
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            if setup is not None:
                setup()
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    return times


def write_results(results, directory: str | os.PathLike, name: str, *, question: str = "",
                  notes: Sequence[str] = (), machine: Mapping | None = None) -> tuple[Path, Path]:
    """Write ``NAME.json`` and ``NAME.md`` under ``directory`` (created if needed).

    Parameters
    ----------
    results : list of dict, or dict of str to list of dict
        One table (rows of column -> value), or several tables by title. Columns are the
        keys of the first row, in order; values must be JSON-serialisable.
    directory : path
    name : str
        File stem.
    question : str
        The question the benchmark answers (first line of the Markdown).
    notes : sequence of str
        Findings, caveats, whether goals were met (bullets in the Markdown).
    machine : mapping, optional
        Machine details; :func:`machine_info` by default.

    Returns
    -------
    (json_path, markdown_path)
    """
    tables = {"results": list(results)} if not isinstance(results, Mapping) else {
        str(k): list(v) for k, v in results.items()}
    machine = dict(machine_info() if machine is None else machine)
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    doc = {"benchmark": name, "question": question, "machine": machine, "tables": tables,
           "notes": list(notes)}
    json_path = out / f"{name}.json"
    json_path.write_text(json.dumps(doc, indent=2, default=_jsonable) + "\n", encoding="utf-8")
    md_path = out / f"{name}.md"
    md_path.write_text(_markdown(doc), encoding="utf-8")
    return json_path, md_path


def _jsonable(value):
    if hasattr(value, "item"):  # NumPy scalars
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


def _markdown(doc: dict) -> str:
    m = doc["machine"]
    versions = ", ".join(f"{k} {v}" for k, v in m.get("versions", {}).items() if v)
    lines = [f"# Benchmark `{doc['benchmark']}`", ""]
    if doc["question"]:
        lines += [f"**Question.** {doc['question']}", ""]
    lines += [
        f"**Machine.** {m.get('cpu_model')}, {m.get('usable_cpus')} usable of "
        f"{m.get('logical_cpus')} logical CPUs, Numba threads {m.get('numba_threads')}; "
        f"{m.get('platform')}; Python {m.get('python')}; hinesbatch {m.get('hinesbatch')}"
        f"{' (git ' + m['git'] + ')' if m.get('git') else ''}; "
        f"{versions}. Date {m.get('date')}.",
        "",
    ]
    extra = {k: v for k, v in m.items() if k not in {
        "date", "cpu_model", "logical_cpus", "usable_cpus", "numba_threads", "platform",
        "python", "hinesbatch", "git", "versions"}}
    for key, value in extra.items():
        lines.append(f"- {key}: {value}")
    if extra:
        lines.append("")
    for title, rows in doc["tables"].items():
        lines += [f"## {title}", "", markdown_table(rows), ""]
    if doc["notes"]:
        lines += ["## Notes", ""] + [f"- {n}" for n in doc["notes"]] + [""]
    return "\n".join(lines)


def markdown_table(rows: Sequence[Mapping]) -> str:
    """A Markdown table of ``rows`` (columns from the first row; floats to 4 significant digits)."""
    if not rows:
        return "(no rows)"
    columns = list(rows[0])
    head = "| " + " | ".join(columns) + " |"
    rule = "|" + "|".join("---" for _ in columns) + "|"
    body = ["| " + " | ".join(_cell(r.get(c)) for c in columns) + " |" for r in rows]
    return "\n".join([head, rule, *body])


def _cell(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return f"{value:.4g}"
    return str(value)
