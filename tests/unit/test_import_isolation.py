"""Every module of the package imports on its own, first, in a fresh interpreter state: an
import cycle shows up as an ``ImportError`` (or an ``AttributeError`` on a half-initialised
module) when the import starts at the wrong module of the cycle, whatever the order in which
the rest of the suite happens to import them. And the layers import downwards only:
``hinesbatch.tree`` never imports ``hinesbatch.solvers``.

To stay fast, one helper interpreter imports the third-party libraries once and forks a child
per module; each child starts with no ``hinesbatch`` module loaded.
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import hinesbatch

PACKAGE = Path(hinesbatch.__file__).resolve().parent

_CHILDREN = r'''
import importlib, os, sys, traceback
import numpy  # noqa: F401  (third-party libraries once, in the parent)
try:
    import numba  # noqa: F401
except ImportError:
    pass
failed = []
for name in sys.argv[1:]:
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            importlib.import_module(name)
        except ImportError as exc:
            missing = getattr(exc, "name", None) or ""
            code = 2 if missing.split(".")[0] == "cupy" else 1
            if code == 1:
                traceback.print_exc()
        except Exception:
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code == 2:
        print(f"SKIP {name} (needs CuPy)")
    elif code:
        failed.append(name)
print("FAILED " + " ".join(failed) if failed else "ALL IMPORTED")
'''


def _modules() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__main__":
            continue
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks one child per module")
def test_every_module_imports_first_in_a_fresh_interpreter():
    modules = _modules()
    assert "hinesbatch.solvers.gpu.strategies.tiled" in modules and len(modules) > 50
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PACKAGE.parent),
                                                        os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, "-c", _CHILDREN, *modules], capture_output=True,
                         text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    assert run.stdout.strip().endswith("ALL IMPORTED"), run.stdout[-2000:] + run.stderr[-4000:]


def _imports(path: Path) -> list[str]:
    """The modules ``path`` imports, as absolute names (relative imports resolved)."""
    package = path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1]
    if path.name == "__init__.py":
        package = path.relative_to(PACKAGE.parent).parts[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = list(package[:len(package) - node.level + 1]) if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            out += [module] + [f"{module}.{a.name}" for a in node.names]
    return out


def test_the_tree_layer_does_not_import_the_solvers():
    upward = {str(path.relative_to(PACKAGE)): name
              for path in sorted((PACKAGE / "tree").rglob("*.py"))
              for name in _imports(path) if name.startswith("hinesbatch.solvers")}
    assert upward == {}


def test_the_import_resolver_sees_relative_imports():
    """The check above would pass vacuously if relative imports were misread."""
    names = _imports(PACKAGE / "solvers" / "gpu" / "strategies" / "tiled.py")
    assert "hinesbatch.solvers.gpu.kernel_build" in names
    assert "hinesbatch.solvers.gpu.strategies.shared_tiles.SharedTiles" in names
    assert "hinesbatch.tree.structure" in _imports(PACKAGE / "tree" / "layouts.py")


def _module_file(name: str) -> Path:
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def _graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (at any level of the file), each import
    resolved to the deepest module that exists; a package's own parents are left out (Python
    imports them first anyway)."""
    modules = set(_modules())
    graph = {}
    for m in modules:
        deps = set()
        for name in _imports(_module_file(m)):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != m and not m.startswith(name + "."):
                deps.add(name)
        graph[m] = deps
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_no_module_imports_back_a_module_that_imports_it():
    """No import cycles between modules, counting imports inside functions too (a lazy
    import hides a cycle from the fresh-interpreter test above, not from this one)."""
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_cycles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e2"}, "e2": {"e"}}
    assert sorted(_cycles(graph)) == [["a", "b", "c"], ["e", "e2"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
