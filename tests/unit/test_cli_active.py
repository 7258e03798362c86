"""``hinesbatch simulate --mechanism`` and ``hinesbatch run``: options, checks, outputs, errors.

Most tests replace ``hb.Cell``, ``hb.Simulation``, ``hb.mechanisms`` and ``hinesbatch.io`` by
fakes that record what the command asks of them (the fake cell discretizes the real file, so
locations are checked as the real one does); the end-to-end tests at the bottom run the real
simulator and are skipped where it is not installed.
"""
from __future__ import annotations

import json
import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import hinesbatch as hb
from hinesbatch import cli
from hinesbatch.io.atomic import atomic_write
from hinesbatch.sim import memory
from hinesbatch.sim.errors import NonFiniteStateError

REAL = Path(__file__).parents[1] / "data" / "morphologies" / "real"
H10 = str(REAL / "h10.CNG.swc")
MECHANISMS = ["pas", "hh", "IClamp", "SEClamp", "ExpSyn", "Exp2Syn", "NetStim", "VecStim"]


class FakeResults:
    """What :class:`hinesbatch.Results` offers the commands; the writers record their calls."""

    def __init__(self, traces: dict, spikes: dict, log: list):
        self._traces, self.spikes, self.log = traces, spikes, log
        self.times = {k: np.arange(v.size) * 0.025 for k, v in traces.items()}
        self.units = {k: "mV" for k in traces}
        self.spike_gids = {k: i for i, k in enumerate(spikes)}
        self.meta = {"backend": "fake-serial"}

    def __getitem__(self, key):
        return self._traces[key]

    def keys(self):
        return list(self._traces)

    def save(self, path):
        self.log.append(("save", path))
        atomic_write(path, lambda tmp: np.savez(
            tmp, **{f"trace{i}": v for i, v in enumerate(self._traces.values())},
            keys=np.array(list(self._traces))))

    def save_spikes(self, path, population="hinesbatch"):
        import h5py

        def write(tmp):
            with h5py.File(tmp, "w") as f:
                f[f"/spikes/{population}/timestamps"] = np.concatenate(
                    [np.zeros(0), *self.spikes.values()])

        self.log.append(("save_spikes", path))
        atomic_write(path, write)

    def plot(self, path=None, keys=None):
        self.log.append(("plot", path))
        atomic_write(path, lambda tmp: Path(tmp).write_bytes(b"plot"))

    def raster(self, path=None):
        self.log.append(("raster", path))
        atomic_write(path, lambda tmp: Path(tmp).write_bytes(b"raster"))


class FakeCell:
    """Records insert/place; discretizes the real morphology for ``geometry``."""

    def __init__(self, morphology, *, nseg=None, d_lambda=None, ra=35.4, cm=1.0, name=None):
        self.morphology, self.options = morphology, dict(nseg=nseg, d_lambda=d_lambda, ra=ra, cm=cm)
        self.inserted, self.placed = [], []
        self.geometry = hb.discretize(morphology, nseg=nseg, d_lambda=d_lambda, ra=ra, cm=cm)
        FakeSimulation.log.append(("Cell", self.options))

    def insert(self, mechanism, region="all", **params):
        self.inserted.append((mechanism, params))
        return self

    def place(self, kind, location, **params):
        section = location[: location.index("(")]
        if section not in self.geometry.section_names:
            raise ValueError(f"no section {section!r} in {self.geometry.source}")
        self.placed.append((kind, location, params))
        return types.SimpleNamespace(kind=kind, location=location, params=params)


class FakeSimulation:
    """Records construction, recordings and runs; ``run`` returns a :class:`FakeResults`."""

    log: list = []
    error: BaseException | None = None

    def __init__(self, cells, *, dt=0.025, celsius=6.3, v_init=-65.0, backend="auto",
                 tables=True, threads=None):
        self.cells, self.dt, self.celsius = list(cells), dt, celsius
        self.kwargs = dict(dt=dt, celsius=celsius, v_init=v_init, backend=backend, tables=tables)
        self.records, self.sources, self.spike_keys = [], [], []
        FakeSimulation.log.append(("Simulation", self))

    def record(self, variable, *, cell=0, location="soma[0](0.5)", every=1):
        key = f"{variable}@{cell}:{location}"
        self.records.append((variable, cell, location, every))
        return key

    def spike_source(self, cell, location="soma[0](0.5)", threshold=10.0):
        self.sources.append((cell, location, threshold))
        return (cell, location)

    def record_spikes(self, source):
        key = f"spikes@{source[0]}:{source[1]}"
        self.spike_keys.append(key)
        return key

    def run(self, tstop, *, progress=False):
        FakeSimulation.log.append(("run", tstop, progress))
        if FakeSimulation.error is not None:
            raise FakeSimulation.error
        n = int(round(tstop / self.dt)) + 1
        traces = {}
        for variable, cell, location, every in self.records:
            traces[f"{variable}@{cell}:{location}"] = np.linspace(-65.0, 20.0, n)[::every]
        spikes = {k: np.array([6.925000000100065]) for k in self.spike_keys}
        res = FakeResults(traces, spikes, FakeSimulation.log)
        res.meta.update(dt=self.dt, steps=n - 1, n_cells=len(self.cells))
        return res


@pytest.fixture
def fake(monkeypatch):
    """The fakes in place of the simulator; yields the log of calls."""
    FakeSimulation.log = []
    FakeSimulation.error = None
    monkeypatch.setattr(hb, "Cell", FakeCell, raising=False)
    monkeypatch.setattr(hb, "Simulation", FakeSimulation, raising=False)
    monkeypatch.setattr(hb, "mechanisms", types.SimpleNamespace(names=lambda: list(MECHANISMS)),
                        raising=False)
    return FakeSimulation.log


def _sim(log) -> FakeSimulation:
    (sim,) = [entry[1] for entry in log if entry[0] == "Simulation"]
    return sim


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def _simulate(*args: str) -> int:
    return cli.main(["simulate", "--tstop", "1", *args])


# --- simulate --mechanism, with fakes ---------------------------------------------------------

def test_options_reach_cells_and_simulation(fake, tmp_path, capsys):
    out = tmp_path / "hh.npz"
    with pytest.warns(UserWarning):
        assert _simulate(H10, "--mechanism", "pas", "--mechanism", "hh", "--mechanism", "hh",
                         "--cells", "2", "--d-lambda", "0.1", "--ra", "100", "--cm", "0.9",
                         "--g-pas", "2e-4", "--e-pas", "-60", "--iclamp", "1,5,50",
                         "--iclamp", "0.2,1,2@dend[2](1)", "--record", "v",
                         "--record", "m_hh@dend[2](0.5)", "--record-every", "4",
                         "--celsius", "16.3", "--no-tables", "--v-init", "-70",
                         "--backend", "multicore", "--dt", "0.0125", "--spikes",
                         "--out", str(out)) == 0
    sim = _sim(fake)
    assert sim.kwargs == dict(dt=0.0125, celsius=16.3, v_init=-70.0, backend="multicore",
                              tables=False)
    assert len(sim.cells) == 2
    for cell in sim.cells:
        assert cell.options == dict(nseg=None, d_lambda=0.1, ra=100.0, cm=0.9)
        assert cell.inserted == [("pas", {"g_pas": 2e-4, "e_pas": -60.0}), ("hh", {})]
        assert cell.placed == [("IClamp", "soma[0](0.5)", dict(delay=5.0, dur=50.0, amp=1.0)),
                               ("IClamp", "dend[2](1.0)", dict(delay=1.0, dur=2.0, amp=0.2))]
    assert sim.records == [(var, gid, where, 4) for gid in (0, 1) for var, where in
                           (("v", "soma[0](0.5)"), ("m_hh", "dend[2](0.5)"))]
    assert sim.sources == [(0, "soma[0](0.5)", 10.0), (1, "soma[0](0.5)", 10.0)]
    assert ("run", 1.0, False) in fake
    with np.load(out) as f:
        assert list(f["keys"]) == ["v@0:soma[0](0.5)", "m_hh@0:dend[2](0.5)",
                                   "v@1:soma[0](0.5)", "m_hh@1:dend[2](0.5)"]
    text = capsys.readouterr().out
    for words in ("2 cells", "80 steps of 0.0125 ms", "pas + hh everywhere", "celsius 16.3",
                  "hh tables off", "IClamp 0.2 nA 1-3 ms at dend[2](1.0)", "fake-serial",
                  "spikes:   2 (2 of 2 sources fired)", str(out)):
        assert words in text, words


def test_mechanism_alone_uses_the_defaults(fake, tmp_path, capsys):
    assert _simulate("--mechanism", "hh", "--out", str(tmp_path / "x")) == 0
    sim = _sim(fake)
    (cell,) = sim.cells
    assert cell.inserted == [("hh", {})] and cell.options["nseg"] is None
    assert cell.placed == [("IClamp", "soma[0](0.5)", dict(delay=10.0, dur=50.0, amp=0.5))]
    assert sim.kwargs["celsius"] == 6.3 and sim.kwargs["tables"] is True  # the engine's own
    assert sim.records == [("v", 0, "soma[0](0.5)", 1)] and sim.sources == []
    assert (tmp_path / "x.npz").is_file()
    assert "spikes:" not in capsys.readouterr().out


def test_clamp_option_moves_clamps_without_a_location(fake, tmp_path):
    with pytest.warns(UserWarning):
        assert _simulate(H10, "--mechanism", "hh", "--clamp", "dend[1](0.25)",
                         "--iclamp", "1,2,3", "--iclamp", "1,2,3@soma[0](0)", "--out",
                         str(tmp_path / "x.npz")) == 0
    (cell,) = _sim(fake).cells
    assert [where for _, where, _ in cell.placed] == ["dend[1](0.25)", "soma[0](0.0)"]


def test_unknown_mechanism_lists_the_valid_ones(fake, tmp_path, capsys):
    assert _simulate("--mechanism", "hh", "--mechanism", "kdr", "--out",
                     str(tmp_path / "x.npz")) == 1
    err = capsys.readouterr().err
    assert err == ("hinesbatch simulate: error: --mechanism kdr: unknown mechanism; valid: "
                   + ", ".join(MECHANISMS) + "\n")
    assert fake == [] and list(tmp_path.iterdir()) == []  # nothing built, nothing written


@pytest.mark.parametrize("args, match", [
    (["--iclamp", "1,2"], r"AMP_NA,DELAY_MS,DUR_MS\[@SECTION\(X\)\]"),
    (["--iclamp", "a,b,c"], "three numbers"),
    (["--iclamp", "nan,1,1"], "must be finite"),
    (["--iclamp", "1,2,3@"], "cannot read the location ''"),
    (["--iclamp", "1,2,3@soma[0](1.5)"], r"x must lie in \[0, 1\]"),
    (["--record", "m hh"], "'m hh' is not a variable name"),
    (["--record", "v@soma[0](x)"], "cannot read the location"),
    (["--record", "@soma[0](0.5)"], "is not a variable name"),
    (["--record-every", "0"], "positive integer"),
    (["--mechanism", "h-h"], "expected a mechanism name"),
])
def test_bad_syntax_exits_2_before_anything_runs(fake, tmp_path, capsys, args, match):
    with pytest.raises(SystemExit) as exc:
        _simulate("--mechanism", "hh", "--out", str(tmp_path / "x.npz"), *args)
    assert exc.value.code == 2 and re.search(match, capsys.readouterr().err)
    assert fake == []


@pytest.mark.parametrize("args, match", [
    (["--spikes"], "--spikes needs --mechanism"),
    (["--celsius", "20"], "--celsius needs --mechanism"),
    (["--no-tables"], "--no-tables needs --mechanism"),
    (["--raster", "r.png"], "--raster needs --mechanism"),
    (["--spikes-out", "s.h5"], "--spikes-out needs --mechanism"),
    (["--iclamp", "1,2,3", "--iclamp", "1,5,3"], "one --iclamp"),
    (["--record", "m_hh"], "records v at one location"),
    (["--record", "v", "--record", "v@soma[0](1)"], "records v at one location"),
    (["--mechanism", "hh", "--stream"], "--stream works for the passive model only"),
    (["--mechanism", "hh", "--g-pas", "1e-4"], "--g-pas sets a parameter of pas"),
    (["--mechanism", "hh", "--e-pas", "-70"], "--e-pas sets a parameter of pas"),
])
def test_options_that_do_not_go_together_exit_2(fake, tmp_path, capsys, args, match):
    assert _simulate("--out", str(tmp_path / "x.npz"), *args) == 2
    err = capsys.readouterr().err
    assert match in err and err.count("\n") == 1 and err.startswith("hinesbatch simulate: error:")
    assert fake == [] and list(tmp_path.iterdir()) == []


def test_every_output_goes_to_its_writer_once(fake, tmp_path, capsys):
    """The command hands each target to the writer of :class:`Results`, which writes it
    atomically itself (tests/unit/test_io_atomic.py); it does not wrap it again."""
    paths = {kind: tmp_path / name for kind, name in
             (("save", "x.npz"), ("save_spikes", "s.h5"), ("plot", "t.png"), ("raster", "r.svg"))}
    assert _simulate("--mechanism", "hh", "--out", str(paths["save"]), "--plot",
                     str(paths["plot"]), "--spikes-out", str(paths["save_spikes"]), "--raster",
                     str(paths["raster"])) == 0
    writes = [entry for entry in fake if entry[0] in ("save", "save_spikes", "plot", "raster")]
    assert [w[0] for w in writes] == ["save", "save_spikes", "plot", "raster"]
    for (_, path), final in zip(writes, paths.values(), strict=True):
        assert Path(path) == final and final.is_file()
    assert _sim(fake).sources == [(0, "soma[0](0.5)", 10.0)]  # spike outputs imply --spikes
    assert _leftovers(tmp_path) == []
    assert "spikes:   1 (1 of 1 sources fired)" in capsys.readouterr().out


def test_plot_without_extension_becomes_png(fake, tmp_path):
    assert _simulate("--mechanism", "hh", "--out", str(tmp_path / "x"), "--raster",
                     str(tmp_path / "r")) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.png", "x.npz"]


@pytest.mark.parametrize("error, status", [(OSError(28, "No space left on device"), 1),
                                           (KeyboardInterrupt(), 130)])
def test_a_failing_write_keeps_the_earlier_files(fake, tmp_path, capsys, monkeypatch, error,
                                                 status):
    out, spikes = tmp_path / "x.npz", tmp_path / "s.h5"
    out.write_bytes(b"earlier npz")
    spikes.write_bytes(b"earlier h5")

    def half_written(self, path, population="hinesbatch"):
        def write(tmp):
            Path(tmp).write_bytes(b"half")
            raise error

        atomic_write(path, write)

    monkeypatch.setattr(FakeResults, "save_spikes", half_written)
    assert _simulate("--mechanism", "hh", "--out", str(out), "--spikes-out", str(spikes)) == status
    assert spikes.read_bytes() == b"earlier h5"
    assert _leftovers(tmp_path) == []
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.strip().count("\n") == 0


@pytest.mark.parametrize("error, status, words", [
    (KeyboardInterrupt(), 130, "hinesbatch: interrupted"),
    (NonFiniteStateError("v became nan in cell 0 at soma[0](0.5) at t = 3 ms", cell=0,
                         location="soma[0](0.5)", t_ms=3.0), 1, "v became nan in cell 0"),
    (ValueError("no mechanism hh at dend[2](0.5) for m_hh"), 1, "no mechanism hh at dend[2]"),
])
def test_errors_during_the_run_leave_no_file(fake, tmp_path, capsys, error, status, words):
    FakeSimulation.error = error
    assert _simulate("--mechanism", "hh", "--out", str(tmp_path / "x.npz"), "--plot",
                     str(tmp_path / "x.png")) == status
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err and err.strip().count("\n") == 0
    assert list(tmp_path.iterdir()) == []


def test_location_outside_the_cell_is_one_line(fake, tmp_path, capsys):
    assert _simulate("--mechanism", "hh", "--iclamp", "1,2,3@dend[99999](0.5)", "--out",
                     str(tmp_path / "x.npz")) == 1
    err = capsys.readouterr().err
    assert "no section 'dend[99999]'" in err and err.count("\n") == 1
    assert not any(entry[0] == "run" for entry in fake)


@pytest.mark.parametrize("option, name", [("--spikes-out", "no/s.h5"), ("--raster", "no/r.png"),
                                          ("--plot", "x.nonsense"), ("--out", "no/x.npz")])
def test_outputs_are_checked_before_the_run(fake, tmp_path, capsys, option, name):
    args = {"--out": str(tmp_path / "x.npz"), option: str(tmp_path / name)}
    assert _simulate("--mechanism", "hh", *[a for kv in args.items() for a in kv]) == 1
    assert "error:" in capsys.readouterr().err
    assert fake == [] and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("module, option, words", [("h5py", "--spikes-out", "needs h5py"),
                                                   ("matplotlib", "--raster",
                                                    "--raster needs matplotlib")])
def test_missing_libraries_are_named_before_the_run(fake, tmp_path, capsys, monkeypatch, module,
                                                    option, words):
    monkeypatch.setitem(sys.modules, module, None)  # `import module` raises
    assert _simulate("--mechanism", "hh", "--out", str(tmp_path / "x.npz"), option,
                     str(tmp_path / "y.h5")) == 1
    assert words in capsys.readouterr().err and fake == []


def test_memory_is_checked_before_the_run(fake, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(memory, "available_host_memory", lambda: (2**20, "a test limit"))
    assert _simulate("--mechanism", "hh", "--cells", "50", "--tstop", "100", "--out",
                     str(tmp_path / "x.npz")) == 1
    err = capsys.readouterr().err
    assert "needs about" in err and "--record-every K" in err
    assert [entry[0] for entry in fake] == ["Cell"]  # checked after the first cell, not 50


def test_progress_option_reaches_the_run(fake, tmp_path):
    assert _simulate("--mechanism", "hh", "--progress", "--out", str(tmp_path / "x.npz")) == 0
    assert ("run", 1.0, True) in fake


# --- the passive model keeps its options, and reads the new syntax ---------------------------

def test_passive_reads_locations_in_the_new_syntax(tmp_path):
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    with pytest.warns(UserWarning):
        assert _simulate(H10, "--backend", "serial", "--iclamp", "0.3,0.2,0.5",
                         "--clamp", "dend[2](1)", "--record", "dend[3](0.5)", "--out", str(a)) == 0
    with pytest.warns(UserWarning):
        assert _simulate(H10, "--backend", "serial", "--iclamp", "0.3,0.2,0.5@dend[2](1)",
                         "--record", "v@dend[3](0.5)", "--out", str(b)) == 0
    with np.load(a) as fa, np.load(b) as fb:
        np.testing.assert_array_equal(fa["v"], fb["v"])
        params = json.loads(str(fb["params"]))
    assert params["clamp"]["section"] == "dend[2]" and params["record"]["section"] == "dend[3]"


def test_passive_g_pas_default_is_neurons(tmp_path):
    assert _simulate("--backend", "serial", "--out", str(tmp_path / "x.npz")) == 0
    with np.load(tmp_path / "x.npz") as f:
        params = json.loads(str(f["params"]))
    assert params["g_pas_S_per_cm2"] == 0.001 and params["e_pas_mV"] == -70.0


@pytest.mark.parametrize("argv, words", [(["simulate"], "--mechanism NAME"),
                                         (["run"], "override the file's outputs"), ([], "run model.json")])
def test_help_names_the_new_options(capsys, argv, words):
    with pytest.raises(SystemExit):
        cli.main([*argv, "--help"])
    assert words in capsys.readouterr().out


# --- hinesbatch run, with a fake hinesbatch.io ----------------------------------------------

class ModelFileError(ValueError):
    pass


@pytest.fixture
def model_io(fake, monkeypatch, tmp_path):
    """A fake ``hinesbatch.io``: ``load_model`` returns a fake simulation of two cells with
    the outputs in ``state["outputs"]``, or raises ``state["error"]``."""
    state = {"outputs": {}, "error": None, "loaded": []}

    def load_model(path):
        state["loaded"].append(path)
        if state["error"] is not None:
            raise state["error"]
        cells = [FakeCell(H10, nseg=1) for _ in range(2)]
        sim = FakeSimulation(cells, dt=0.025)
        for gid in range(2):
            sim.record("v", cell=gid)
            sim.record_spikes(sim.spike_source(gid))
        return sim, 2.0, dict(state["outputs"])

    module = types.ModuleType("hinesbatch.io")
    module.load_model, module.ModelFileError = load_model, ModelFileError
    monkeypatch.setitem(sys.modules, "hinesbatch.io", module)
    return state


def test_run_writes_the_models_outputs_and_a_summary(model_io, tmp_path, capsys):
    model_io["outputs"] = {"npz": str(tmp_path / "m"), "spikes": str(tmp_path / "m.h5"),
                           "raster": str(tmp_path / "r.png")}
    with pytest.warns(UserWarning):
        assert cli.main(["run", "model.json"]) == 0
    assert model_io["loaded"] == ["model.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.h5", "m.npz", "r.png"]
    text = capsys.readouterr().out
    for words in ("model:    model.json", "2 cells, 80 steps of 0.025 ms to 2 ms",
                  "spikes:   2 (2 of 2 sources fired)", str(tmp_path / "m.npz")):
        assert words in text, words


def test_run_options_override_the_files_outputs(model_io, tmp_path, capsys):
    model_io["outputs"] = {"npz": str(tmp_path / "file.npz"), "plot": str(tmp_path / "f.png")}
    with pytest.warns(UserWarning):
        assert cli.main(["run", "model.py", "--out", str(tmp_path / "cli.npz"), "--spikes-out",
                         str(tmp_path / "cli.h5"), "--progress"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cli.h5", "cli.npz", "f.png"]
    assert ("run", 2.0, True) in FakeSimulation.log


def test_run_without_outputs_says_how_to_keep_results(model_io, tmp_path, capsys):
    with pytest.warns(UserWarning):
        assert cli.main(["run", "model.json"]) == 0
    assert "the model names no outputs" in capsys.readouterr().out


def test_run_model_file_error_is_one_line(model_io, capsys):
    model_io["error"] = ModelFileError("model.json: cells[0].mechanisms: unknown mechanism "
                                       "'kdr'; valid: pas, hh")
    assert cli.main(["run", "model.json"]) == 1
    err = capsys.readouterr().err
    assert err == ("hinesbatch run: error: model.json: cells[0].mechanisms: unknown mechanism "
                   "'kdr'; valid: pas, hh\n")


def test_run_checks_outputs_before_running(model_io, tmp_path, capsys):
    model_io["outputs"] = {"npz": str(tmp_path / "no" / "x.npz")}
    with pytest.warns(UserWarning):
        assert cli.main(["run", "model.json"]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert not any(entry[0] == "run" for entry in FakeSimulation.log)
    model_io["outputs"] = {"csv": "x.csv"}
    with pytest.warns(UserWarning):
        assert cli.main(["run", "model.json"]) == 1
    assert "unknown outputs csv; valid: npz, spikes, plot, raster" in capsys.readouterr().err


def test_run_interrupted_leaves_nothing(model_io, tmp_path, capsys):
    model_io["outputs"] = {"npz": str(tmp_path / "x.npz")}
    FakeSimulation.error = KeyboardInterrupt()
    with pytest.warns(UserWarning):
        assert cli.main(["run", "model.json"]) == 130
    assert list(tmp_path.iterdir()) == []


def test_run_without_the_io_package_is_one_line(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "hinesbatch.io", None)
    assert cli.main(["run", "model.json"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("hinesbatch run: error: reading model files needs hinesbatch.io")
    assert err.count("\n") == 1


# --- end to end, with the real simulator -------------------------------------------------------

def _load_results():
    """``hb.load_results``, or ``hinesbatch.io.load_results``, or None."""
    found = getattr(hb, "load_results", None)
    if found is None:
        try:
            from hinesbatch.io import load_results as found
        except ImportError:
            return None
    return found


requires_simulator = pytest.mark.skipif(
    not hasattr(hb, "Simulation") or _load_results() is None,
    reason="hinesbatch.Simulation and load_results (the active simulator) are not installed")


@requires_simulator
def test_hh_run_matches_the_python_api(tmp_path, capsys):
    out = tmp_path / "hh.npz"
    assert _simulate("--mechanism", "hh", "--tstop", "20", "--d-lambda", "0.1", "--ra", "100",
                     "--iclamp", "1,5,50", "--backend", "serial", "--spikes", "--record", "v",
                     "--record", "m_hh@soma[0](0.5)", "--out", str(out)) == 0
    with hb.sim.passive.default_morphology() as path:
        cell = hb.Cell(path, d_lambda=0.1, ra=100).insert("hh")
        cell.place("IClamp", "soma[0](0.5)", delay=5, dur=50, amp=1)
        sim = hb.Simulation([cell], backend="serial")
        key = sim.record("v")
        spikes = sim.record_spikes(sim.spike_source(0))
        api = sim.run(20.0)
    res = _load_results()(out)
    np.testing.assert_array_equal(res[key], api[key])
    np.testing.assert_array_equal(res.spikes[spikes], api.spikes[spikes])
    assert res.spikes[spikes].size >= 1 and "m_hh@0:soma[0](0.5)" in res.keys()
    assert "spikes:   1 (1 of 1 sources fired)" in capsys.readouterr().out


@requires_simulator
def test_real_unknown_mechanism_lists_the_builtins(tmp_path, capsys):
    assert _simulate("--mechanism", "kdr", "--out", str(tmp_path / "x.npz")) == 1
    err = capsys.readouterr().err
    assert all(name in err for name in ("pas", "hh")) and err.count("\n") == 1


@requires_simulator
def test_real_spikes_out_is_a_sonata_report(tmp_path):
    h5py = pytest.importorskip("h5py")
    out, report = tmp_path / "x.npz", tmp_path / "s.h5"
    assert _simulate("--mechanism", "hh", "--tstop", "20", "--iclamp", "1,5,50", "--cells", "2",
                     "--spikes-out", str(report), "--out", str(out)) == 0
    with h5py.File(report, "r") as f:
        times = f["/spikes/hinesbatch/timestamps"][:]
        gids = f["/spikes/hinesbatch/node_ids"][:]
    assert times.size >= 2 and set(gids.tolist()) == {0, 1}


@requires_simulator
def test_real_run_of_a_python_model(tmp_path, capsys):
    pytest.importorskip("h5py")
    with hb.sim.passive.default_morphology() as path:
        model = tmp_path / "model.py"
        model.write_text(f"""\
import hinesbatch as hb
cell = hb.Cell({str(path)!r}, d_lambda=0.1, ra=100).insert("hh")
cell.place("IClamp", "soma[0](0.5)", delay=5, dur=50, amp=1)
simulation = hb.Simulation([cell, hb.Cell.from_dict(cell.to_dict())], backend="serial")
simulation.record("v")
for gid in (0, 1):
    simulation.record_spikes(simulation.spike_source(gid))
tstop = 20.0
outputs = {{"npz": "out.npz", "spikes": "spikes.h5"}}
""")
        assert cli.main(["run", str(model), "--raster", str(tmp_path / "r.png")]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.py", "out.npz", "r.png",
                                                          "spikes.h5"]
    text = capsys.readouterr().out
    assert "2 cells, 800 steps of 0.025 ms to 20 ms" in text and "spikes:   2 (2 of 2" in text
    res = _load_results()(tmp_path / "out.npz")
    assert res["v@0:soma[0](0.5)"].shape == (801,)
