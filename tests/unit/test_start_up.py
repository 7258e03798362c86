"""What a command loads at start-up, checked without timing: ``import hinesbatch`` and a
``hinesbatch simulate`` run import none of the optional libraries or other commands' modules,
and machine code found in Numba's cache is loaded without setting up Numba's compiler
(:mod:`hinesbatch._numba`), with the same results.

Each check runs in a fresh interpreter (``sys.modules`` is the evidence), so they are slow.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import hinesbatch

pytestmark = pytest.mark.slow

SRC = str(Path(hinesbatch.__file__).resolve().parents[1])
#: Libraries that only some commands need (plots, SONATA, NEURON, GPUs, progress bars).
OPTIONAL = ("scipy", "h5py", "matplotlib", "neuron", "cupy", "tqdm")
#: What Numba imports when it prepares its compiler ("refreshes" its contexts), and not to
#: load machine code from its cache.
COMPILER_SET_UP = ("numba.np.arraymath", "numba.np.linalg", "numba.typed.typeddict")
#: Modules of other commands and layers that a simulate run does not use.
OTHER_COMMANDS = ("hinesbatch.bench", "hinesbatch.nmodl", "hinesbatch.info",
                  "hinesbatch.sim.run_command")

_REPORT = """
import json, sys
print("MODULES " + json.dumps(sorted(sys.modules)))
entrypoints = sys.modules.get("numba.core.entrypoints")
print("EXTENSIONS " + json.dumps(entrypoints is not None and entrypoints._already_initialized))
"""


def _python(code: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [SRC, env.get("PYTHONPATH")]))
    run = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         env=env, timeout=900, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    return run


def _modules(run: subprocess.CompletedProcess) -> list[str]:
    (line,) = [x for x in run.stdout.splitlines() if x.startswith("MODULES ")]
    return json.loads(line[len("MODULES "):])


def _loaded(modules: list[str], names) -> list[str]:
    return [m for m in modules if any(m == n or m.startswith(n + ".") for n in names)]


def test_import_hinesbatch_loads_no_optional_library():
    modules = _modules(_python("import hinesbatch\n" + _REPORT))
    assert "hinesbatch" in modules and "numba" in modules  # the check sees imports
    assert _loaded(modules, OPTIONAL) == []
    assert _loaded(modules, OTHER_COMMANDS + ("hinesbatch.engine", "hinesbatch.io")) == []


_SIMULATE = """
import sys
from hinesbatch import cli
status = cli.main(sys.argv[1:])
assert status == 0, status
""" + _REPORT


#: Modules of the package that one process running cells with mechanisms does not use.
NOT_FOR_MECHANISMS = ("hinesbatch.solvers", "hinesbatch.sim.assembly", "hinesbatch.io.sonata",
                      "hinesbatch.io.model_file", "hinesbatch.engine.network_run")


@pytest.mark.parametrize(("options", "runner", "unused"), [
    pytest.param(["--mechanism", "hh", "--tstop", "1"], "hinesbatch.engine.kernels",
                 NOT_FOR_MECHANISMS, id="hh"),
    pytest.param(["--tstop", "1"], "hinesbatch.sim.passive", ("hinesbatch.engine",), id="passive"),
])
def test_simulate_from_the_cache_loads_only_what_it_runs(tmp_path, options, runner, unused):
    """The second run finds every kernel in the cache: no optional library, no other
    command's modules, no unused layer and no compiler set-up are imported."""
    argv = ["simulate", *options, "--out", str(tmp_path / "out.npz")]
    _python(_SIMULATE, *argv)  # compiles what is not cached yet
    run = _python(_SIMULATE, *argv)
    modules = _modules(run)
    assert "numba" in modules and runner in modules  # the run happened here
    assert _loaded(modules, OPTIONAL) == []
    assert _loaded(modules, OTHER_COMMANDS) == []
    assert _loaded(modules, unused) == []
    assert _loaded(modules, COMPILER_SET_UP) == []
    assert "EXTENSIONS false" in run.stdout  # no search of the installed distributions


_CACHED_MODULE = '''
import numpy as np
from numba import njit

@njit(cache=True)
def scaled(a, k):
    out = np.empty_like(a)
    for i in range(a.size):
        out[i] = np.exp(a[i]) * k
    return out
'''

_USE_CACHED = """
import json, sys
import numpy as np
import hinesbatch  # noqa: F401  (imports Numba as the package does)
import hinesbatch._numba
from hinesbatch._numba import is_light, light_cache_loads
if sys.argv[2] == "unresolved":  # as if the object used a symbol that a registry defines
    hinesbatch._numba._resolvable = lambda obj: False
sys.path.insert(0, sys.argv[1])
import cached_kernel
light_cache_loads(cached_kernel.scaled)
assert is_light(cached_kernel.scaled)
out = cached_kernel.scaled(np.linspace(-3.0, 3.0, 7), 0.5)
stats = cached_kernel.scaled.stats
from numba.core import entrypoints
print("RESULT " + json.dumps({"bits": out.view(np.int64).tolist(),
                              "hits": sum(stats.cache_hits.values()),
                              "misses": sum(stats.cache_misses.values()),
                              "extensions": entrypoints._already_initialized}))
""" + _REPORT


def test_a_light_cache_load_gives_the_compiled_bits_without_compiler_set_up(tmp_path):
    """First process: nothing cached, Numba's own path compiles and caches. Second: the
    machine code comes from the cache, with no compiler set-up, and gives the same bits.
    Third: an object whose symbols do not all resolve is loaded by Numba's own path."""
    (tmp_path / "cached_kernel.py").write_text(_CACHED_MODULE)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"))

    def run(case="resolved"):
        done = _python(_USE_CACHED, str(tmp_path), case, env=env)
        (line,) = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
        return json.loads(line[len("RESULT "):]), _modules(done)

    (first, first_modules), (second, second_modules) = run(), run()
    third, third_modules = run("unresolved")
    assert (first["misses"], first["hits"]) == (1, 0)
    assert (second["misses"], second["hits"]) == (third["misses"], third["hits"]) == (0, 1)
    assert second["bits"] == first["bits"] == third["bits"]
    expected = np.exp(np.linspace(-3.0, 3.0, 7)) * 0.5
    assert np.array_equal(np.array(first["bits"]).view(np.float64), expected)
    assert _loaded(first_modules, COMPILER_SET_UP)  # compiling sets the compiler up
    assert _loaded(second_modules, COMPILER_SET_UP) == []
    assert _loaded(third_modules, COMPILER_SET_UP)
    # Numba's extensions: initialised before compiling, not needed to load machine code
    assert (first["extensions"], second["extensions"], third["extensions"]) == (
        True, False, True)


def test_undefined_symbols_of_a_compiled_object():
    """The ELF reader finds what the light load checks: the C library's exp, the NRT's C
    helpers; and declines what is not an ELF64 little-endian object."""
    from numba import njit

    from hinesbatch._numba import undefined_symbols

    @njit
    def scaled(a, k):
        return np.exp(a) * k

    scaled(np.ones(3), 2.0)
    (cres,) = scaled.overloads.values()
    _, kind, (obj, _) = cres.library.serialize_using_object_code()
    names = undefined_symbols(obj)
    if names is None:
        pytest.skip(f"objects here are not ELF64 little-endian ({obj[:6]!r})")
    assert kind == "object" and "exp" in names and "NRT_MemInfo_alloc_aligned" in names
    assert undefined_symbols(b"\xcf\xfa\xed\xfe" + obj[4:]) is None  # Mach-O's magic


def test_light_cache_loads_leaves_functions_without_a_cache_alone():
    from numba import njit

    from hinesbatch._numba import is_light, light_cache_loads

    @njit
    def plain(x):
        return x + 1

    assert light_cache_loads(plain) is plain and not is_light(plain)
    assert plain(1) == 2


@pytest.mark.parametrize("config_file", [False, True])
def test_numbas_configuration_file_is_read_as_numba_reads_it(tmp_path, config_file):
    """PyYAML is imported only when Numba reads a ``.numba_config.yaml``, and then Numba
    applies it; later imports of ``yaml`` get the real module."""
    pytest.importorskip("yaml")
    if config_file:
        (tmp_path / ".numba_config.yaml").write_text("num_threads: 1\n")
    code = textwrap.dedent("""
        import sys
        import hinesbatch  # noqa: F401
        from numba.core import config
        print("YAML", "yaml" in sys.modules, config.NUMBA_NUM_THREADS)
        import yaml
        print("LOADS", yaml.safe_load("a: 1") == {"a": 1}, type(yaml).__name__)
    """)
    env = dict(os.environ, PYTHONPATH=SRC)
    env.pop("NUMBA_NUM_THREADS", None)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    yaml_line, loads_line = run.stdout.split("\n")[:2]
    imported, threads = yaml_line.split()[1:]
    assert imported == str(config_file)
    assert (threads == "1") if config_file else int(threads) >= 1
    assert loads_line == "LOADS True module"


@pytest.mark.parametrize("collecting", [True, False])
def test_import_numba_skips_only_the_scipy_version_check(collecting):
    """Numba imported through the package leaves SciPy unimported and importable, and the
    garbage collector as it was."""
    code = textwrap.dedent(f"""
        import gc, sys
        if not {collecting}:
            gc.disable()
        from hinesbatch._numba import import_numba
        assert import_numba() is sys.modules["numba"]
        assert gc.isenabled() is {collecting}
        assert "scipy" not in sys.modules, "scipy imported"
        import scipy.linalg  # noqa: F401
        print("ok")
    """)
    pytest.importorskip("scipy")
    assert _python(code).stdout.strip() == "ok"


_PROGRAM = """
import atexit, os, runpy, sys, threading, time
class Teardown:  # dropped only by the interpreter's teardown of sys.modules
    def __init__(self, path):  # what __del__ needs is held here: globals may be gone by then
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        self.write = os.write
    def __del__(self):
        self.write(self.fd, b"teardown;")
def late_write(path):  # still running when the command returns: it wrote out.npz last
    while not os.path.exists("out.npz"):
        time.sleep(0.01)
    time.sleep(0.5)
    with open(path, "a") as f:
        f.write("thread;")
path, thread = sys.argv[1], sys.argv[2] == "thread"
sys.modules["start_up_probe"] = Teardown(path)
atexit.register(lambda: print("exit handler ran"))
if thread:
    threading.Thread(target=late_write, args=(path,)).start()  # not a daemon
sys.argv = ["hinesbatch", *sys.argv[3:]]
runpy.run_module("hinesbatch.cli", run_name="__main__")
"""


@pytest.mark.parametrize(("argv", "thread", "status", "log"), [
    pytest.param(["simulate", "--tstop", "1"], "no", 0, "", id="simulate"),
    pytest.param(["run", "missing.json"], "no", 1, "teardown;", id="user-code"),
    pytest.param(["simulate", "--tstop", "1"], "thread", 0, "thread;teardown;",
                 id="thread-running"),
])
def test_the_program_ends_without_the_interpreters_teardown(tmp_path, argv, thread, status,
                                                             log):
    """``python -m hinesbatch.cli`` runs the exit handlers and flushes its output, then ends
    without tearing the interpreter down; unless the command runs the user's code or another
    thread is still running, when the process ends the usual way."""
    log_path = tmp_path / "log"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [
        SRC, os.environ.get("PYTHONPATH")])))
    run = subprocess.run([sys.executable, "-c", _PROGRAM, str(log_path), thread, *argv,
                          *(["--out", "out.npz"] if argv[0] == "simulate" else [])],
                         capture_output=True, text=True, env=env, timeout=900, check=False,
                         cwd=tmp_path)
    assert run.returncode == status, run.stderr[-3000:]
    assert run.stdout.rstrip().endswith("exit handler ran")
    if argv[0] == "simulate":
        assert "output:   " in run.stdout and (tmp_path / "out.npz").exists()
    assert (log_path.read_text() if log_path.exists() else "") == log
