"""``hinesbatch mechanisms check DIR``: which NMODL files translate, and why not.

Prints one line per file (``translated NAME``, ``translated NAME (NEURON's NAME: the
built-in NAME is used)`` for NEURON's own file of a built-in, or the ``file:line:
construct: reason`` of the refusal), then the coverage: files parsed, translated, refused by construct, and with
``--models`` the folders (one model each) whose every file translates. Exit status 0 when
it ran, whatever the coverage.
"""
from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from .lower import NmodlError
from .registry import translation

__all__ = ["configure", "coverage", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub.add_parser("check", help="translate every .mod file of a folder and report",
                       description="Translate every .mod file under DIR (recursively) and "
                                   "print, per file, 'translated' or the reason, then the "
                                   "coverage.")
    p.add_argument("dir", metavar="DIR", help="a folder of .mod files (or one file)")
    p.add_argument("--models", action="store_true",
                   help="also count whole models: each folder holding .mod files is one")
    p.add_argument("--quiet", action="store_true", help="print the coverage only")


def coverage(root) -> dict:
    """Translate every ``.mod`` file under ``root``.

    Returns
    -------
    dict
        ``files``: ``[(path, name or None, NmodlError or None)]`` sorted by path;
        ``parsed``, ``translated``: counts; ``reasons``: Counter of refused constructs
        (the part before the reason, generalised: ``USEION ca WRITE cai`` counts as
        ``USEION WRITE concentration``); ``models``: ``{folder: (translated, total)}``;
        ``builtin``: ``{path: name}`` of the files that are NEURON's own copy of a
        built-in (counted as translated: the built-in is used).
    """
    root = Path(root)
    paths = sorted(root.rglob("*.mod")) if root.is_dir() else [root]
    files, reasons = [], Counter()
    parsed = translated = 0
    models: dict = {}
    builtin: dict = {}
    for path in paths:
        try:
            tr = translation(path)
            name, err = tr.mechanism.name, None
            if tr.builtin is not None:
                builtin[path] = tr.builtin
        except NmodlError as e:
            name, err = None, e
        except Exception as e:  # noqa: BLE001 - a translator bug must not stop the survey
            name, err = None, NmodlError(path, 1, "internal error", f"{type(e).__name__}: "
                                         f"{e}")
        files.append((path, name, err))
        if err is None or not (err.construct == "syntax" or "can not open file" in err.reason):
            parsed += 1
        if err is None:
            translated += 1
        else:
            reasons[_category(err)] += 1
        ok, total = models.get(path.parent, (0, 0))
        models[path.parent] = (ok + (err is None), total + 1)
    return {"files": files, "parsed": parsed, "translated": translated, "reasons": reasons,
            "models": models, "builtin": builtin}


def _category(err: NmodlError) -> str:
    c = err.construct
    if c.startswith("USEION"):
        words = c.split()
        kind = ("reversal potential" if "reversal potential" in err.reason
                else "concentration" if "concentration" in err.reason else words[-1])
        return f"USEION {words[2]} {kind}" if len(words) >= 4 else c
    if c.startswith("SOLVE") and "METHOD" in c:
        return "SOLVE METHOD " + c.split()[-1]
    if c.endswith("()"):
        return c
    if c == "TABLE":
        for words, label in (("depends on", "TABLE depending on a computed value"),
                             ("other blocks write", "TABLE sharing a side write"),
                             ("before it writes", "TABLE reading a variable it writes"),
                             ("uses a TABLE", "TABLE out of reach")):
            if words in err.reason:
                return label
        return f"TABLE: {err.reason.split(':')[0][:60]}"
    if "is both a variable and" in err.reason:
        return "a variable and a FUNCTION of one name"
    if err.reason.startswith("unknown name"):
        return "unknown name"
    if c == "ARTIFICIAL_CELL VecStim":
        return "VecStim other than NEURON's vecevent.mod"
    if c.startswith("ARTIFICIAL_CELL "):      # what an artificial cell cannot have
        return c
    return c.split()[0] if " " in c and c.split()[0].isupper() else c


def run(args) -> int:
    report = coverage(args.dir)
    files = report["files"]
    if not args.quiet:
        for path, name, err in files:
            if path in report["builtin"]:
                print(f"{path}: translated {name} (NEURON's {name}: the built-in {name} "
                      "is used)")
            else:
                print(f"{path}: translated {name}" if err is None else str(err))
    n = len(files)
    pct = (lambda k, total: f"{100.0 * k / total:.1f} %" if total else "-")
    print(f"\n{n} files: {report['parsed']} parsed, {report['translated']} translated "
          f"({pct(report['translated'], n)})")
    if report["reasons"]:
        print("refused, by construct:")
        for what, k in report["reasons"].most_common():
            print(f"  {k:5d}  {what}")
    if args.models:
        models = report["models"]
        whole = sum(1 for ok, total in models.values() if ok == total)
        print(f"{len(models)} models: {whole} fully translated ({pct(whole, len(models))})")
    return 0
