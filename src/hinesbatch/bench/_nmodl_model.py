"""The model of ``bench sim --part nmodl``: Traub's layer 2/3 pyramidal cell from ModelDB
20756's own mod files, built in hinesbatch (:func:`build_cell`) and in NEURON
(:class:`NeuronModel`, in a child process: :class:`NeuronProcess`).

The files (:data:`FILES`; Traub, Buhl, Gloveli and Whittington 2003, J Neurophysiol
89:909-921, fast rhythmic bursting in layer 2/3 pyramidal cells; NEURON port by M.
Lazarewicz): the transient and persistent sodium currents (naf, nap), five potassium currents
(kdr, ka, k2, km, and the calcium-dependent kc and kahp), the L- and T-type calcium currents
(cal, cat), the anomalous rectifier (ar) and the calcium pool (cad, which integrates cai from
cal's ica; kc and kahp read it back). Every file is ``cnexp`` with TABLEs. ModelDB's files
have their own licenses and are not part of hinesbatch: they are read from a folder
(:func:`load_files`).

The files give every density as 0 and the original hoc is not in that folder, so the
densities (:data:`MODEL`) are those of the superficial (layer 2/3) fast-rhythmic-bursting
pyramidal cell of Traub et al. 2005 (J Neurophysiol 93:2194-2232), which extends the 2003
cell: its compartment table's values in S/m² / 10⁴ = S/cm², somatic, axonal, and for the
dendrites the distal values except naf and kdr (its first-order dendrites' 0.1875) and km (the
somatic 0.0075), so that the cell fires repetitively under the clamp. They are set per SWC
region of a different cell, a hippocampal pyramidal cell of the repository. cad's ``phi`` and
``beta`` (a 20 ms decay) keep cai, in the files' arbitrary units, in the range that kahp
(saturating at 100) and kc (at 250) respond to. This is a benchmark model of the paper's kind,
not a reproduction of its figures.

Protocol: d_lambda 0.1 at 100 Hz, Ra, cm and the leak per region (:data:`PASSIVE`), ena 50,
ek -95, e_pas -70 mV, an IClamp at soma[0](0.5) (:data:`ICLAMP`), dt 0.025 ms, v_init
-70 mV, celsius 6.3 (no file reads it), spikes at soma[0](0.5) above 0 mV.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

__all__ = ["CAD", "FILES", "ICLAMP", "MODEL", "PASSIVE", "NeuronModel", "NeuronProcess",
           "build_cell", "compile_mods", "load_files"]

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
#: The calcium pool (cad) wherever cal is: ``cai' = -phi * ica - beta * cai``, cai in the
#: files' arbitrary units: phi [units per ms per mA/cm²], beta [1/ms] (a 20 ms decay), ceiling
#: (a GLOBAL bound cai never reaches here).
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


# ---- the model --------------------------------------------------------------------------
def _regions_present(regions) -> list[str]:
    return [r for r in PASSIVE if r in regions]


def build_cell(hb, morphology, *, amp: float | None = None):
    """The model as a :class:`hinesbatch.Cell` (the mechanisms must be loaded).

    Parameters
    ----------
    morphology : path or hinesbatch.Morphology
        An SWC file, or a morphology read once for many copies (they then share it).
    amp : float, optional
        The clamp's amplitude [nA] instead of :data:`ICLAMP`'s.
    """
    if isinstance(morphology, (str, os.PathLike)):
        morphology = hb.read_swc(os.fspath(morphology))
    present = hb.Cell(morphology, nseg=1).regions()
    unknown = [r for r in present if r != "all" and r not in PASSIVE]
    if unknown:
        raise ValueError(f"{morphology.source if hasattr(morphology, 'source') else 'the cell'}"
                         f": region(s) {', '.join(unknown)} have no densities in the model "
                         f"(it has {', '.join(PASSIVE)})")
    regions = _regions_present(present)
    cell = hb.Cell(morphology, d_lambda=D_LAMBDA,
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


def load_files(hb, mod_dir) -> list[str]:
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

    Parameters
    ----------
    path : SWC file
        Read with Import3d; every section's region (``soma``, ``axon``, ``dend``, ``apic``)
        must be one of :data:`PASSIVE`'s.
    lib : str
        The library :func:`compile_mods` built from the model's files.
    copies : int
        Cells; cell 0 and the last copy have their soma's v recorded.
    threads : int
        ``ParallelContext.nthread``.
    tables : bool
        ``usetable_<suffix>`` of every file with a TABLE (True: NEURON's default).
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
        self._v_last = h.Vector().record(self.cells[-1]["soma[0]"](0.5)._ref_v)
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

    def trace(self, cell: int = 0) -> np.ndarray:
        """v [mV] at soma[0](0.5) of cell 0 (``cell=-1``: the last copy) at every step of
        the last run."""
        if cell not in (0, -1):
            raise ValueError(f"cell must be 0 or -1 (the copies recorded), got {cell}")
        return np.array(self._v if cell == 0 else self._v_last)

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
                conn.send(("ok", (model.trace(), model.spikes(), model.trace(-1))))
            else:
                break
    except Exception as exc:  # reported by the parent
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


class NeuronProcess:
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
