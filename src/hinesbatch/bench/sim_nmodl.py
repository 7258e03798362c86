"""``hinesbatch bench sim --part nmodl``: a ModelDB pyramidal-cell model run from its own NMODL
files, on the CPU against NEURON on one core and on the GPU against NEURON's throughput.

Question: :data:`QUESTION`.

The model (:data:`MODEL`): the twelve mod files of ModelDB 20756 (Traub, Buhl, Gloveli and
Whittington 2003, J Neurophysiol 89:909-921, fast rhythmic bursting in layer 2/3 pyramidal
cells; NEURON port by M. Lazarewicz): the transient and persistent sodium currents (naf, nap),
five potassium currents (kdr, ka, k2, km, and the calcium-dependent kc and kahp), the L- and
T-type calcium currents (cal, cat), the anomalous rectifier (ar) and the calcium pool (cad,
which integrates cai from cal's ica; kc and kahp read it back). ModelDB's files have their own
licenses and are not part of hinesbatch: the benchmark reads them from the folder given as
``--mod-dir`` and is skipped, with a message, without it. The files give every density as 0;
the original hoc is not part of that folder, so the densities here are those of the
superficial (layer 2/3) fast-rhythmic-bursting pyramidal cell of Traub et al. 2005 (J
Neurophysiol 93:2194-2232; soma, axon and distal-dendrite values of its compartment table,
S/m² / 10⁴ = S/cm²), which extends the 2003 cell, set per SWC region of a different cell (a
hippocampal pyramidal cell of the repository): a benchmark model in the paper's range, not a
reproduction of its figures. cad's ``phi``, ``beta`` and ``ceiling`` are chosen so that cai
stays in the range kahp and kc respond to (they read it in the files' arbitrary units).

Protocol: ``pyramidal.swc`` (``--swc`` replaces it), d_lambda 0.1 at 100 Hz, Ra and cm per
region (:data:`PASSIVE`), an IClamp at soma[0](0.5), dt 0.025 ms, v_init -70 mV, celsius
6.3 (no file reads it), spikes at soma[0](0.5) above 0 mV.

* CPU: hinesbatch ``serial`` on one cell against NEURON on one core, the same files compiled
  by ``nrnivmodl`` (cached as :func:`compile_mods` says), in a child process that keeps the
  model between runs. Timed in turn (hinesbatch, NEURON, ...), each after an untimed warm-up
  run: hinesbatch's ``Simulation.run`` on a fresh simulation (its initialization included),
  NEURON's ``ParallelContext.psolve`` after ``finitialize``; the median of ``--repeats``.
  Both with the files' TABLEs (NEURON's default) and without (``usetable_<name> = 0``,
  ``Simulation(tables=False)``). The speed counts only when the two agree: max |ΔV| at the
  soma within :data:`AGREEMENT_MV` (every file is ``cnexp``) and identical spike times.
* GPU (where CuPy and a device are present, or ``--engine-backend`` for a dry run):
  ``--nmodl-cells`` copies (10,000) with ``backend="gpu"`` in float64, timed after an untimed
  first call (compilation), ``Results.meta["step_seconds"]`` when the engine reports it; the
  batch runs ``--nmodl-gpu-tstop`` ms (fewer steps than the CPU part, stated). Cell 0's trace
  is compared with the serial engine's over the same time. Throughput is set against
  NEURON's one-core rate from the CPU part (goal :data:`GPU_GOAL` x). NEURON on all cores:
  one process with ``ParallelContext.nthread(cores)`` on ``cores x 4`` copies, its
  machine-wide rate beside the GPU's.

A compartment is a node of the Hines system (NEURON's segments plus the zero-area section
ends), for both simulators: compartment-steps/s = nodes x steps / seconds.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from .common import machine_info, write_results

__all__ = ["QUESTION", "MODEL", "PASSIVE", "FILES", "add_arguments", "run", "compile_mods",
           "build_cell", "NeuronModel"]

QUESTION = ("Does hinesbatch run a ModelDB pyramidal-cell model from its own NMODL files "
            "(Traub et al. 2003, ModelDB 20756: eleven channel types and calcium dynamics) at "
            "least 2x as fast per step as NEURON on one core with the serial engine, with "
            "NEURON's voltage and spike times, and does the GPU engine simulate 10,000 copies "
            "at least 1,000x as fast as one NEURON core?")
#: The mechanisms the model needs from ``--mod-dir`` (file stems and SUFFIXes).
FILES = ("ar", "cad", "cal", "cat", "k2", "ka", "kahp", "kc", "kdr", "km", "naf", "nap")
MORPHOLOGY = "pyramidal.swc"
#: Channel densities [S/cm²] by SWC region: ``{region: {suffix: gbar}}``.
MODEL = {
    "soma": {"naf": 0.1875, "nap": 0.00048, "kdr": 0.125, "ka": 0.03, "k2": 0.0001,
             "km": 0.0075, "kc": 0.0045, "kahp": 0.0001, "cal": 0.001, "cat": 0.0001,
             "ar": 0.00025},
    "axon": {"naf": 0.4, "kdr": 0.4, "ka": 0.002, "k2": 0.0001},
    "dend": {"naf": 0.1875, "nap": 0.000064, "kdr": 0.1875, "ka": 0.004, "k2": 0.0002,
             "km": 0.0075, "kc": 0.009, "kahp": 0.0002, "cal": 0.002, "cat": 0.0002,
             "ar": 0.0005},
}
MODEL["apic"] = dict(MODEL["dend"])
#: The calcium pool (cad) where cal is: phi [1/(mA/cm²)/ms... in cai's units], beta [1/ms]
#: (a 20 ms decay), ceiling (no bound in practice).
CAD = {"phi": 2600.0, "beta": 0.05, "ceiling": 1e6}
#: Passive properties by region: Ra [Ω·cm], cm [µF/cm²], g_pas [S/cm²]; e_pas [mV] everywhere.
PASSIVE = {"soma": {"ra": 250.0, "cm": 0.9, "g_pas": 2e-5},
           "axon": {"ra": 100.0, "cm": 0.9, "g_pas": 1e-3},
           "dend": {"ra": 250.0, "cm": 1.8, "g_pas": 4e-5},
           "apic": {"ra": 250.0, "cm": 1.8, "g_pas": 4e-5}}
E_PAS, ENA, EK = -70.0, 50.0, -95.0
#: Mechanisms that read ek and ena (each keeps its copy in hinesbatch; one per segment in NEURON).
K_READERS = ("kdr", "ka", "k2", "km", "kc", "kahp")
NA_READERS = ("naf", "nap")
D_LAMBDA, DT, V_INIT, CELSIUS, THRESHOLD = 0.1, 0.025, -70.0, 6.3, 0.0
#: The clamp at soma[0](0.5): amp [nA], delay [ms], dur [ms].
ICLAMP = (1.0, 5.0, 90.0)
TSTOP = 100.0
GPU_CELLS = 10000
GPU_TSTOP = 20.0
QUICK = {"tstop": 2.0, "repeats": 1, "cells": 4, "gpu_tstop": 1.0, "neuron_cells": 2}
#: Goals: serial against NEURON per step; the GPU batch against one NEURON core.
SPEEDUP_GOAL = 2.0
GPU_GOAL = 1000.0
#: Largest |ΔV| [mV] for a comparison to count: every file is cnexp, so NEURON's steps are
#: reproduced up to rounding (the validation tests' bound for explicit methods and TABLEs).
AGREEMENT_MV = 1e-9
#: NEURON's batch for the all-cores figure: this many copies per core.
CELLS_PER_CORE = 4
TITLES = {"cpu": "One cell, one core: hinesbatch serial vs NEURON",
          "gpu": "A batch of copies: hinesbatch GPU vs NEURON (one core, and all cores)"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the NMODL part's arguments to ``bench sim``'s parser."""
    g = parser.add_argument_group(
        "NMODL part (--part nmodl): a ModelDB model's own mod files",
        "The mod files are not part of hinesbatch: --mod-dir names the folder of ModelDB "
        "20756 (Traub et al. 2003; ar, cad, cal, cat, k2, ka, kahp, kc, kdr, km, naf, nap "
        ".mod). Without it the part is skipped with a message.")
    g.add_argument("--mod-dir", metavar="DIR",
                   help="folder of ModelDB 20756's mod files (required by --part nmodl)")
    g.add_argument("--nmodl-cells", type=int, metavar="N",
                   help=f"copies of the GPU batch (default {GPU_CELLS})")
    g.add_argument("--nmodl-gpu-tstop", type=float, metavar="MS",
                   help=f"simulated time of the GPU batch [ms] (default {GPU_TSTOP:g})")
    g.add_argument("--nmodl-neuron-cells", type=int, metavar="N",
                   help=f"copies of NEURON's all-cores batch (default {CELLS_PER_CORE} x "
                        "usable cores)")
    g.add_argument("--nmodl-budget", type=float, default=150.0, metavar="S",
                   help="wall-clock seconds after which the GPU batch and NEURON's all-cores "
                        "batch are skipped, listed as such (default 150)")
    g.add_argument("--nmodl-no-gpu", action="store_true",
                   help="the CPU comparison only (the default without a GPU)")


# ---- the model --------------------------------------------------------------------------
def _regions_present(regions) -> list[str]:
    return [r for r in PASSIVE if r in regions]


def build_cell(hb, path, *, amp: float | None = None):
    """The model on ``path`` as a :class:`hinesbatch.Cell` (the mechanisms must be loaded).

    ``amp`` [nA] replaces the clamp's amplitude of :data:`ICLAMP`.
    """
    probe = hb.Cell(str(path), nseg=1)
    regions = _regions_present(probe.regions())
    cell = hb.Cell(str(path), d_lambda=D_LAMBDA,
                   ra={r: PASSIVE[r]["ra"] for r in regions},
                   cm={r: PASSIVE[r]["cm"] for r in regions})
    for region in regions:
        cell.insert("pas", region, g_pas=PASSIVE[region]["g_pas"], e_pas=E_PAS)
    for name in FILES:
        if name == "cad":
            continue
        for region in regions:
            gbar = MODEL[region].get(name)
            if gbar is None:
                continue
            params = {f"gbar_{name}": gbar}
            if name in K_READERS:
                params["ek"] = EK
            if name in NA_READERS:
                params["ena"] = ENA
            cell.insert(name, region, **params)
    for region in regions:
        if "cal" in MODEL[region]:
            cell.insert("cad", region, **{f"{k}_cad": v for k, v in CAD.items()})
    c_amp, delay, dur = ICLAMP
    cell.place("IClamp", "soma[0](0.5)", delay=delay, dur=dur,
               amp=c_amp if amp is None else amp)
    return cell


def _load(hb, mod_dir) -> list[str]:
    """Load the model's files from ``mod_dir``; their paths. ``FileNotFoundError`` names a
    missing file."""
    folder = Path(mod_dir)
    if not folder.is_dir():
        raise FileNotFoundError(f"--mod-dir {folder}: no such folder")
    paths = [folder / f"{name}.mod" for name in FILES]
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"--mod-dir {folder}: missing {', '.join(missing)} (ModelDB "
                                "20756's files are needed)")
    with warnings.catch_warnings():  # notices about GLOBALs made per instance
        warnings.simplefilter("ignore")
        for p in paths:
            hb.load_mechanisms(p)
    return [str(p) for p in paths]


# ---- NEURON -----------------------------------------------------------------------------
def compile_mods(files, folder=None) -> str:
    """Build ``files`` with NEURON's ``nrnivmodl``; the path of the library.

    Builds are kept under ``$XDG_CACHE_HOME/hinesbatch/nrnivmodl/<hash of the files' names
    and contents and NEURON's version>`` (``folder`` overrides), so a second run does not
    compile again.

    Raises
    ------
    RuntimeError
        nrnivmodl failed (its output's end is in the message).
    """
    import neuron

    files = sorted(Path(f) for f in files)
    digest = hashlib.sha256(neuron.__version__.encode())
    for f in files:
        digest.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    if folder is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                                ".cache")
        folder = Path(base) / "hinesbatch" / "nrnivmodl" / digest.hexdigest()[:20]
    folder = Path(folder)
    found = _library(folder)
    if found is not None:
        return found
    folder.parent.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(prefix="build-", dir=folder.parent))
    for f in files:        # nrnivmodl takes only plain names
        shutil.copy(f, build / re.sub(r"[^A-Za-z0-9_.]", "_", f.name))
    bindir = Path(sys.executable).parent
    nrnivmodl = shutil.which("nrnivmodl", path=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    if nrnivmodl is None:
        raise RuntimeError("nrnivmodl (NEURON's) is not on PATH nor beside this Python")
    env = dict(os.environ, PATH=f"{Path(nrnivmodl).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               MAKEFLAGS=f"-j{max(1, min(8, os.cpu_count() or 1))}")
    proc = subprocess.run([nrnivmodl], cwd=build, env=env, capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0 or _library(build) is None:
        raise RuntimeError(f"nrnivmodl failed in {build}:\n{proc.stdout[-2000:]}"
                           f"\n{proc.stderr[-2000:]}")
    try:
        os.rename(build, folder)
    except OSError:            # built meanwhile by another process: use that one
        shutil.rmtree(build, ignore_errors=True)
    return _library(folder)


def _library(folder: Path):
    for p in (folder / "x86_64" / "libnrnmech.so", folder / "x86_64" / ".libs" / "libnrnmech.so",
              folder / "aarch64" / "libnrnmech.so", folder / "arm64" / "libnrnmech.so"):
        if p.exists():
            return str(p)
    return None


class NeuronModel:
    """The model in NEURON (``copies`` cells, cell 0 recorded), built in this process.

    NEURON loads a mechanism library once per process: :func:`_neuron_child` builds this in a
    child process. The sections of every copy but the first are made from the first's 3-D
    points and connections, so the copies are the same cell.
    """

    def __init__(self, path, lib: str, *, copies: int = 1, threads: int = 1,
                 tables: bool = True):
        from .neuron_models import build_cell as nrn_build, load_neuron

        h = load_neuron()
        if lib not in _loaded_libs:
            h.nrn_load_dll(lib)
            _loaded_libs.add(lib)
        h, first = nrn_build(path, ra=PASSIVE["soma"]["ra"], cm=PASSIVE["soma"]["cm"],
                             d_lambda=None, nseg=None)
        if "soma[0]" not in first:
            raise ValueError(f"{path}: NEURON built no soma[0]; the protocol clamps soma[0](0.5)")
        self._h = h
        self.cells = [first] + [_copy_sections(h, first, k) for k in range(1, copies)]
        self._keep = []
        for cell in self.cells:
            self._decorate(h, cell)
        h.hinesbatch_geom_nseg(D_LAMBDA, 100)
        self.nseg = sum(int(s.nseg) for s in first.values())
        soma = first["soma[0]"]
        self._v = h.Vector().record(soma(0.5)._ref_v)
        self._spikes = h.Vector()
        nc = h.NetCon(soma(0.5)._ref_v, None, sec=soma)
        nc.threshold = THRESHOLD
        nc.record(self._spikes)
        self._keep.append(nc)
        for name in FILES:
            if hasattr(h, f"usetable_{name}"):
                setattr(h, f"usetable_{name}", 1 if tables else 0)
        h.ceiling_cad = CAD["ceiling"]
        h.cvode_active(0)
        h.dt, h.steps_per_ms, h.secondorder, h.celsius = DT, 1.0 / DT, 0, CELSIUS
        self._pc = h.ParallelContext()
        self._pc.nthread(threads)
        self._pc.set_maxstep(10)

    def _decorate(self, h, cell: dict) -> None:
        for name, sec in cell.items():
            region = name.split("[")[0]
            if region not in PASSIVE:
                raise ValueError(f"section {name}: no region of the model ({', '.join(PASSIVE)})")
            p = PASSIVE[region]
            sec.Ra, sec.cm = p["ra"], p["cm"]
            sec.insert("pas")
            sec.g_pas, sec.e_pas = p["g_pas"], E_PAS
            for mech in FILES:
                gbar = MODEL[region].get(mech)
                if gbar is None or mech == "cad":
                    continue
                sec.insert(mech)
                setattr(sec, f"gbar_{mech}", gbar)
            if "cal" in MODEL[region]:
                sec.insert("cad")
                sec.phi_cad, sec.beta_cad = CAD["phi"], CAD["beta"]
            if any(m in MODEL[region] for m in K_READERS):
                sec.ek = EK
            if any(m in MODEL[region] for m in NA_READERS):
                sec.ena = ENA
        stim = h.IClamp(cell["soma[0]"](0.5))
        stim.amp, stim.delay, stim.dur = ICLAMP
        self._keep.append(stim)

    def run(self, tstop: float) -> float:
        """``finitialize(V_INIT)`` then ``psolve(tstop)``; the seconds of ``psolve``."""
        self._h.finitialize(V_INIT)
        start = time.perf_counter()
        self._pc.psolve(tstop)
        return time.perf_counter() - start

    def trace(self) -> np.ndarray:
        """v [mV] at cell 0's soma[0](0.5) at every step of the last run."""
        return np.array(self._v)

    def spikes(self) -> np.ndarray:
        """Cell 0's spike times [ms] in the last run."""
        return np.array(self._spikes)


_loaded_libs: set = set()


def _copy_sections(h, cell: dict, k: int) -> dict:
    """A copy of ``cell``'s sections (3-D points, connections), named ``copy<k>.<name>``."""
    new = {}
    for name, sec in cell.items():
        s = h.Section(name=f"copy{k}.{name}")
        for i in range(sec.n3d()):
            s.pt3dadd(sec.x3d(i), sec.y3d(i), sec.z3d(i), sec.diam3d(i))
        new[name] = s
    for name, sec in cell.items():
        parent = sec.parentseg()
        if parent is not None:
            new[name].connect(new[parent.sec.name()](parent.x), sec.orientation())
    return new


def _neuron_child(conn, path, lib, copies, threads, tables) -> None:
    """A NEURON process: builds :class:`NeuronModel` and answers ``conn``'s requests
    (``("run", tstop)`` -> seconds, ``("result",)`` -> (trace, spikes), ``("stop",)``);
    an error is answered as ``("error", text)``."""
    os.environ.setdefault("NEURON_MODULE_OPTIONS", "-nogui")
    try:
        model = NeuronModel(path, lib, copies=copies, threads=threads, tables=tables)
        conn.send(("ready", model.nseg))
        while True:
            request = conn.recv()
            if request[0] == "run":
                conn.send(("ok", model.run(request[1])))
            elif request[0] == "result":
                conn.send(("ok", (model.trace(), model.spikes())))
            else:
                break
    except Exception as exc:  # reported by the parent
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


class _NeuronProcess:
    """A child process holding a :class:`NeuronModel`; ``run``, ``result``, ``close``."""

    TIMEOUT = 600.0

    def __init__(self, path, lib, *, copies=1, threads=1, tables=True):
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_neuron_child, daemon=True,
                                 args=(child, os.fspath(path), lib,
                                       copies, threads, tables))
        self._proc.start()
        child.close()
        self.nseg = self._answer()

    def _answer(self):
        if not self._conn.poll(self.TIMEOUT):
            self.close()
            raise RuntimeError(f"the NEURON process gave no answer in {self.TIMEOUT:g} s")
        try:
            status, value = self._conn.recv()
        except EOFError:
            raise RuntimeError("the NEURON process ended without an answer (it crashed)") from None
        if status == "error":
            self.close()
            raise RuntimeError(f"NEURON: {value}")
        return value

    def run(self, tstop: float) -> float:
        self._conn.send(("run", tstop))
        return self._answer()

    def result(self):
        self._conn.send(("result",))
        return self._answer()

    def close(self) -> None:
        try:
            self._conn.send(("stop",))
        except (OSError, ValueError):
            pass
        self._proc.join(timeout=30)
        if self._proc.is_alive():
            self._proc.terminate()
            self._proc.join(timeout=10)
        self._conn.close()


# ---- the run ----------------------------------------------------------------------------
def _settings(args) -> dict:
    quick = bool(getattr(args, "quick", False))
    s = {"tstop": QUICK["tstop"] if quick else TSTOP,
         "repeats": QUICK["repeats"] if quick else args.repeats,
         "cells": args.nmodl_cells or (QUICK["cells"] if quick else GPU_CELLS),
         "gpu_tstop": args.nmodl_gpu_tstop or (QUICK["gpu_tstop"] if quick else GPU_TSTOP),
         "neuron_cells": args.nmodl_neuron_cells or (QUICK["neuron_cells"] if quick else None),
         "budget": float(args.nmodl_budget),
         "backend": getattr(args, "engine_backend", "gpu") or "gpu",
         "neuron": not args.no_neuron}
    for name in ("repeats", "cells", "neuron_cells"):
        if s[name] is not None and s[name] < 1:
            raise ValueError(f"--{'nmodl-' if name != 'repeats' else ''}"
                             f"{name.replace('_', '-')} must be >= 1, got {s[name]}")
    if not s["gpu_tstop"] > 0 or not s["budget"] > 0:
        raise ValueError("--nmodl-gpu-tstop and --nmodl-budget must be positive")
    return s


def run(args: argparse.Namespace) -> int:
    """Run the NMODL part; print rows as they finish; write ``sim_nmodl.json`` and ``.md``
    under ``args.out``. Returns the exit status (0 when skipped for want of ``--mod-dir``)."""
    if not args.mod_dir:
        print("hinesbatch bench sim --part nmodl: skipped: no --mod-dir (the folder of ModelDB "
              "20756's mod files, which hinesbatch does not ship)", file=sys.stderr)
        return 0
    try:
        s = _settings(args)
        import hinesbatch as hb

        files = _load(hb, args.mod_dir)
        path = Path(args.swc[0]) if args.swc else _default_morphology()
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such file")
    except (OSError, ValueError, ImportError) as exc:
        print(f"hinesbatch bench sim: error: {exc}", file=sys.stderr)
        return 1
    bench = _Bench(hb, s, path, files, Path(args.out), gpu=_want_gpu(args, s))
    bench.run()
    return 0


def _default_morphology() -> Path:
    roots = [Path.cwd(), Path(__file__).resolve().parents[3]]
    for root in roots:
        p = root / "tests/data/morphologies/real" / MORPHOLOGY
        if p.is_file():
            return p
    raise FileNotFoundError(f"{MORPHOLOGY} (the default morphology) is not in "
                            "tests/data/morphologies/real of this directory or the source "
                            "tree; pass --swc FILE")


def _want_gpu(args, s) -> bool:
    if args.nmodl_no_gpu:
        return False
    if s["backend"] != "gpu":
        return True  # a dry run of the GPU part on a CPU backend
    from .sim_gpu import gpu_present

    return gpu_present()


def _row_text(row: dict) -> str:
    return "  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                     for k, v in row.items())


class _Bench:
    """The part's state: settings, the model's files, rows, notes, the clock."""

    def __init__(self, hb, settings, path, files, out, *, gpu: bool):
        self.hb, self.s, self.path, self.files, self.out, self.gpu = (
            hb, settings, path, files, out, gpu)
        self.rows = {"cpu": [], "gpu": []}
        self.notes: list[str] = []
        self.start = time.perf_counter()
        self.lib = None
        self.nodes = int(build_cell(hb, path).geometry.n_nodes)

    def note(self, text: str) -> None:
        self.notes.append(text)
        print(text, flush=True)

    def run(self) -> None:
        if self.s["neuron"]:
            try:
                self.lib = compile_mods(self.files)
            except (ImportError, RuntimeError) as exc:
                self.note(f"NEURON is not available ({exc}): no NEURON columns")
        else:
            self.note("NEURON skipped (--no-neuron): no NEURON columns")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # SWC conventions of a real file
            for tables in (True, False):
                self._guarded(f"CPU, tables {tables}", lambda t=tables: self._cpu_row(t))
            if self.gpu:
                self._guarded("GPU batch", self._gpu_row)
            else:
                self.note("GPU batch not run: no usable GPU (CuPy and a device), or "
                          "--nmodl-no-gpu")
        self._goals()
        json_path, md_path = self.write()
        print(f"wrote {json_path} and {md_path}")

    def _guarded(self, name, case) -> None:
        try:
            case()
        except Exception as exc:  # one failing case leaves the others' results
            self.note(f"{name}: failed: {type(exc).__name__}: {exc}")
        self.write()

    def write(self):
        tables = {TITLES[k]: rows for k, rows in self.rows.items() if rows}
        extra = {"model": "ModelDB 20756 (Traub et al. 2003) mod files, densities of "
                          "bench.sim_nmodl.MODEL", "morphology": self.path.name,
                 "nodes": self.nodes,
                 "protocol": f"d_lambda {D_LAMBDA} at 100 Hz, Ra/cm/g_pas by region "
                             f"{PASSIVE}, e_pas {E_PAS} mV, ena {ENA} mV, ek {EK} mV, IClamp "
                             f"{ICLAMP[0]} nA {ICLAMP[1]}-{ICLAMP[1] + ICLAMP[2]} ms at "
                             f"soma[0](0.5), dt {DT} ms, v_init {V_INIT} mV, celsius "
                             f"{CELSIUS}, CPU part {self.s['tstop']:g} ms, GPU batch "
                             f"{self.s['gpu_tstop']:g} ms"}
        return write_results(tables, self.out, "sim_nmodl", question=QUESTION,
                             notes=self.notes, machine=machine_info(extra))

    # ---- hinesbatch ---------------------------------------------------------------------
    def _simulation(self, n_cells, backend, tables, **options):
        hb = self.hb
        cells = [build_cell(hb, self.path) for _ in range(n_cells)]
        sim = hb.Simulation(cells, dt=DT, v_init=V_INIT, celsius=CELSIUS, backend=backend,
                            tables=tables, **options)
        v = sim.record("v", cell=0, location="soma[0](0.5)")
        spikes = sim.record_spikes(sim.spike_source(0, "soma[0](0.5)", threshold=THRESHOLD))
        return sim, v, spikes

    def _timed(self, tstop, n_cells, backend, tables, **options):
        sim, v, spikes = self._simulation(n_cells, backend, tables, **options)
        start = time.perf_counter()
        res = sim.run(tstop)
        return time.perf_counter() - start, res, v, spikes

    # ---- CPU ----------------------------------------------------------------------------
    def _cpu_row(self, tables: bool) -> None:
        tstop, repeats = self.s["tstop"], self.s["repeats"]
        neuron = (_NeuronProcess(self.path, self.lib, tables=tables)
                  if self.lib is not None else None)
        ours, theirs = [], []
        try:
            for k in range(repeats + 1):  # round 0 compiles and warms up: not counted
                seconds, res, v_key, spike_key = self._timed(tstop, 1, "serial", tables)
                nrn = neuron.run(tstop) if neuron is not None else None
                if k:
                    ours.append(seconds)
                    if nrn is not None:
                        theirs.append(nrn)
            trace = np.asarray(res[v_key])
            steps = len(trace) - 1
            spikes = np.asarray(res.spikes[spike_key])
            mine = statistics.median(ours)
            row = {"morphology": self.path.name, "nodes": self.nodes, "steps": steps,
                   "tables": tables, "hinesbatch_us_per_step": 1e6 * mine / max(steps, 1),
                   "neuron_us_per_step": None,
                   "hinesbatch_Mcomp_steps_per_s": self.nodes * steps / mine / 1e6,
                   "neuron_Mcomp_steps_per_s": None, "speedup_vs_neuron": None,
                   "neuron_segments": None, "max_abs_dv_mV": None, "spikes": int(len(spikes)),
                   "same_spike_times": None}
            if neuron is not None:
                nrn_s = statistics.median(theirs)
                v_nrn, spikes_nrn = neuron.result()
                row.update(neuron_us_per_step=1e6 * nrn_s / max(steps, 1),
                           neuron_Mcomp_steps_per_s=self.nodes * steps / nrn_s / 1e6,
                           speedup_vs_neuron=nrn_s / mine, neuron_segments=neuron.nseg,
                           max_abs_dv_mV=float(np.max(np.abs(v_nrn - trace)))
                           if v_nrn.shape == trace.shape else float("nan"),
                           same_spike_times=bool(np.array_equal(spikes_nrn, spikes)))
        finally:
            if neuron is not None:
                neuron.close()
        self.rows["cpu"].append(row)
        print(_row_text(row), flush=True)

    # ---- GPU ----------------------------------------------------------------------------
    def _gpu_row(self) -> None:
        from .sim_gpu import engine_options

        n, tstop, backend = self.s["cells"], self.s["gpu_tstop"], self.s["backend"]
        options = engine_options(backend, "float64", None)
        sim, v_key, spike_key = self._simulation(n, backend, True, **options)
        sim.run(tstop)  # compiles (or loads the cache) and warms the device up: not timed
        walls, steps_s = [], []
        for _ in range(max(1, min(self.s["repeats"], 3))):
            start = time.perf_counter()
            res = sim.run(tstop)
            walls.append(time.perf_counter() - start)
            steps_s.append(res.meta.get("step_seconds"))
            if time.perf_counter() - self.start > self.s["budget"]:
                break
        timed = "step_seconds" if all(x is not None for x in steps_s) else "wall"
        seconds = statistics.median(steps_s if timed == "step_seconds" else walls)
        trace = np.asarray(res[v_key])
        steps = len(trace) - 1
        _, ref, ref_v, ref_spikes = self._timed(tstop, 1, "serial", True)
        ref_trace = np.asarray(ref[ref_v])
        rate = n * self.nodes * steps / seconds
        cpu = [r for r in self.rows["cpu"] if r["tables"] and r["neuron_Mcomp_steps_per_s"]]
        one_core = cpu[0]["neuron_Mcomp_steps_per_s"] * 1e6 if cpu else None
        row = {"tool": f"hinesbatch {backend} float64", "cells": n, "nodes": self.nodes,
               "steps": steps, "seconds": seconds, "timed": timed,
               "wall_s": statistics.median(walls), "G_comp_steps_per_s": rate / 1e9,
               "vs_one_neuron_core": rate / one_core if one_core else None,
               "max_abs_dv_vs_serial_mV": float(np.max(np.abs(trace - ref_trace)))
               if trace.shape == ref_trace.shape else float("nan"),
               "same_spike_times_vs_serial": bool(np.array_equal(
                   np.asarray(res.spikes[spike_key]), np.asarray(ref.spikes[ref_spikes])))}
        self.rows["gpu"].append(row)
        print(_row_text(row), flush=True)
        del sim, res
        if one_core is None:
            self.note("GPU batch: no NEURON one-core rate from the CPU part to compare with")
        if self.lib is not None:
            if time.perf_counter() - self.start > self.s["budget"]:
                self.note(f"NEURON on all cores skipped (budget of {self.s['budget']:.0f} s "
                          "spent)")
            else:
                self._guarded("NEURON on all cores", self._neuron_cores_row)

    def _neuron_cores_row(self) -> None:
        from ._sim_gpu_cpu import usable_cores

        cores = usable_cores()
        n = self.s["neuron_cells"] or CELLS_PER_CORE * cores
        tstop = self.s["gpu_tstop"]
        neuron = _NeuronProcess(self.path, self.lib, copies=n, threads=cores, tables=True)
        try:
            neuron.run(tstop)  # warm-up
            seconds = statistics.median(neuron.run(tstop)
                                        for _ in range(max(1, min(self.s["repeats"], 3))))
            steps = len(neuron.result()[0]) - 1
        finally:
            neuron.close()
        rate = n * self.nodes * steps / seconds
        cpu = [r for r in self.rows["cpu"] if r["tables"] and r["neuron_Mcomp_steps_per_s"]]
        row = {"tool": f"NEURON pc.nthread({cores})", "cells": n, "nodes": self.nodes,
               "steps": steps, "seconds": seconds, "timed": "psolve", "wall_s": seconds,
               "G_comp_steps_per_s": rate / 1e9,
               "vs_one_neuron_core": rate / (cpu[0]["neuron_Mcomp_steps_per_s"] * 1e6)
               if cpu else None,
               "max_abs_dv_vs_serial_mV": None, "same_spike_times_vs_serial": None}
        self.rows["gpu"].append(row)
        print(_row_text(row), flush=True)

    # ---- goals --------------------------------------------------------------------------
    def _goals(self) -> None:
        agreed = False
        for r in self.rows["cpu"]:
            if r["speedup_vs_neuron"] is None:
                continue
            same = r["max_abs_dv_mV"] <= AGREEMENT_MV and r["same_spike_times"]
            agreed = agreed or (same and r["tables"])
            met = r["speedup_vs_neuron"] >= SPEEDUP_GOAL
            verdict = ("met" if met else "NOT met") if same else (
                f"not judged: the results differ from NEURON's (by more than {AGREEMENT_MV:g} "
                "mV or in spike times)")
            self.note(
                f"{r['morphology']} ({r['nodes']} nodes, tables {'on' if r['tables'] else 'off'})"
                f": serial {r['hinesbatch_us_per_step']:.1f} us/step vs NEURON "
                f"{r['neuron_us_per_step']:.1f} = {r['speedup_vs_neuron']:.2f}x; goal >= "
                f"{SPEEDUP_GOAL:g}x -> {verdict}; max |dV| {r['max_abs_dv_mV']:.1e} mV, "
                f"{r['spikes']} spikes, spike times "
                f"{'identical' if r['same_spike_times'] else 'DIFFERENT'}")
        for r in self.rows["gpu"]:
            if not r["tool"].startswith("hinesbatch") or r["vs_one_neuron_core"] is None:
                continue
            if self.s["backend"] != "gpu":
                self.note(f"{r['tool']} on {r['cells']} cells: {r['vs_one_neuron_core']:.0f}x "
                          "one NEURON core (a dry run on the CPU: goal not judged)")
                continue
            same = (r["max_abs_dv_vs_serial_mV"] <= AGREEMENT_MV
                    and r["same_spike_times_vs_serial"] and agreed)
            met = r["vs_one_neuron_core"] >= GPU_GOAL
            verdict = ("met" if met else "NOT met") if same else (
                "not judged: the GPU's cell 0 differs from the serial engine's, or the serial "
                "engine from NEURON")
            self.note(f"GPU, {r['cells']} cells x {r['nodes']} nodes, {r['steps']} steps: "
                      f"{r['G_comp_steps_per_s']:.3g} G compartment-steps/s = "
                      f"{r['vs_one_neuron_core']:.0f}x one NEURON core; goal >= "
                      f"{GPU_GOAL:g}x -> {verdict}")
