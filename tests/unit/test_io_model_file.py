"""Model files for ``hinesbatch run``: the JSON checker (every bad item named by its JSON
path before anything is built), building through the public API (checked here against a
fake API that records the calls, and against the real one once it exists), Python model
files, and writing the outputs."""
from __future__ import annotations

import json
import os
import types
from pathlib import Path

import numpy as np
import pytest
from test_results import make_results

import hinesbatch
from hinesbatch.io import ModelFileError, load_model, read_model, save_outputs
from hinesbatch.io.model_file import build_model

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "tests" / "data" / "models" / "two_cells.json"
CELL_SWC = ROOT / "tests" / "data" / "morphologies" / "real" / "c91662.swc"
#: The built-in names of the specification, so the checker's name test runs without them.
BUILT_INS = frozenset({"pas", "hh", "IClamp", "SEClamp", "ExpSyn", "Exp2Syn"})


def example() -> dict:
    data = json.loads(EXAMPLE.read_text())
    for cell in data["cells"]:
        cell["morphology"] = str(CELL_SWC)
    return data


def write(tmp_path: Path, data, name: str = "model.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=1))
    return path


# -- reading the example ----------------------------------------------------------------
def test_the_example_model_reads_with_defaults_filled_in():
    model = read_model(EXAMPLE, mechanisms=BUILT_INS)
    assert model["simulation"] == {"dt": 0.025, "celsius": 6.3, "v_init": -65}
    assert model["tstop"] == 100 and model["outputs"] == {}
    assert [c["morphology"] for c in model["cells"]] == [str(CELL_SWC)] * 2  # from its folder
    assert model["cells"][0]["options"] == {"d_lambda": 0.1, "ra": 100, "cm": 1}
    assert model["cells"][0]["insert"] == [{"mechanism": "hh", "region": "all", "params": {}}]
    assert model["connections"][0]["source"] == {"cell": 0, "location": "soma[0](0.5)",
                                                 "threshold": 10}
    assert model["connections"][1] == {"source": {"stimulus": "ns"}, "weight": 0.05,
                                       "delay": 0.5, "target": {"cell": 1, "point": "syn"}}
    assert model["record"][2] == {"variable": "i", "cell": 0, "location": None,
                                  "point": "stim", "every": 1}
    assert model["record"][4] == {"spikes": {"cell": 0, "location": "soma[0](0.5)",
                                             "threshold": None}}


def test_defaults_of_optional_items(tmp_path):
    data = {"tstop": 5, "cells": [{"morphology": str(CELL_SWC)}],
            "record": [{"variable": "v"}, {"spikes": {"cell": 0}}],
            "connections": [], "stimuli": [{"id": "v", "kind": "VecStim", "times": []}]}
    model = read_model(write(tmp_path, data), mechanisms=BUILT_INS)
    assert model["simulation"] == {}
    assert model["cells"][0]["copies"] == 1 and model["cells"][0]["options"] == {}
    assert model["record"][0] == {"variable": "v", "cell": 0, "location": "soma[0](0.5)",
                                  "point": None, "every": 1}
    assert model["record"][1]["spikes"]["location"] == "soma[0](0.5)"


def test_outputs_and_morphology_are_relative_to_the_model_folder(tmp_path, monkeypatch):
    (tmp_path / "cells").mkdir()
    (tmp_path / "cells" / "a.swc").write_bytes(CELL_SWC.read_bytes())
    data = {"tstop": 1, "cells": [{"morphology": "cells/a.swc"}],
            "outputs": {"npz": "out/r.npz", "spikes": "/abs/s.h5", "plot": "p.png"}}
    monkeypatch.chdir(ROOT)  # not the model's folder
    model = read_model(write(tmp_path, data))
    assert model["cells"][0]["morphology"] == str(tmp_path / "cells" / "a.swc")
    assert model["outputs"] == {"npz": tmp_path / "out" / "r.npz", "spikes": Path("/abs/s.h5"),
                                "plot": tmp_path / "p.png"}


# -- every bad item is named by its JSON path ------------------------------------------
def _set(path: str, value):
    """A change to the example: set the item at a JSON path ("a.b[1].c") to ``value``."""
    def change(data):
        parts = path.replace("[", ".[").split(".")
        node = data
        for part in parts[:-1]:
            node = node[int(part[1:-1])] if part.startswith("[") else node[part]
        last = parts[-1]
        if value is _DELETE:
            del node[int(last[1:-1]) if last.startswith("[") else last]
        elif last.startswith("["):
            node[int(last[1:-1])] = value
        else:
            node[last] = value
    return change


_DELETE = object()

BAD_ITEMS = [
    # unknown keys, with the valid ones and a suggestion
    (_set("tsop", 5), ("tsop: unknown key; valid keys: description, tstop, dt, celsius, "
                      "v_init, backend, tables, threads, cells, stimuli, connections, record, "
                      "outputs (did you mean 'tstop'?)")),
    (_set("cells[1].inserts", []), ("cells[1].inserts: unknown key; valid keys: morphology, "
                                   "name, nseg, d_lambda, ra, cm, copies, insert, set, place "
                                   "(did you mean 'insert'?)")),
    (_set("cells[0].place[0].param", {}), ("cells[0].place[0].param: unknown key; valid keys: "
                                          "id, kind, location, params (did you mean 'params'?)")),
    (_set("outputs", {"csv": "a.csv"}), ("outputs.csv: unknown key; valid keys: npz, spikes, "
                                        "plot, raster")),
    # missing required keys
    (_set("tstop", _DELETE), ": missing required key 'tstop'"),
    (_set("cells[0].morphology", _DELETE), "cells[0]: missing required key 'morphology'"),
    (_set("connections[0].weight", _DELETE), "connections[0]: missing required key 'weight'"),
    (_set("connections[0].weight", []), "connections[0].weight: must not be empty"),
    (_set("connections[0].weight", [0.1, "a"]), "connections[0].weight[1]: must be a number"),
    (_set("stimuli[0].id", _DELETE), "stimuli[0]: missing required key 'id'"),
    # wrong types and values
    (_set("dt", "0.025"), "dt: must be a number, not a string (\"0.025\")"),
    (_set("dt", 0), "dt: must be > 0, not 0"),
    (_set("celsius", True), "celsius: must be a number, not a boolean (true)"),
    (_set("tables", 1), "tables: must be true or false, not a number (1)"),
    (_set("cells", []), "cells: must not be empty"),
    (_set("cells", {}), "cells: must be a list [...], not an object"),
    (_set("cells[0].copies", 2.0), "cells[0].copies: must be a whole number, not a number (2.0)"),
    (_set("cells[0].copies", 0), "cells[0].copies: must be >= 1, not 0"),
    (_set("cells[0].d_lambda", {"dend": -1}), "cells[0].d_lambda.dend: must be > 0, not -1"),
    (_set("cells[0].nseg", {"soma": 1.5}), "cells[0].nseg.soma: must be a whole number"),
    (_set("cells[0].ra", [100]), "cells[0].ra: must be a number or an object region -> number"),
    (_set("cells[0].morphology", "nowhere.swc"), "cells[0].morphology: no file 'nowhere.swc'"),
    (_set("cells[0].insert[0].region", []), "cells[0].insert[0].region: must name at least one"),
    (_set("cells[0].insert[0].region", 3), "cells[0].insert[0].region: must be a region name"),
    (_set("cells[0].insert[0].params", {"gnabar_hh": "0.1"}),
     "cells[0].insert[0].params.gnabar_hh: must be a number, not a string"),
    (_set("cells[0].set", [{"name": "gnabar_hh"}]), ("cells[0].set[0]: missing required key "
                                                    "'value'")),
    (_set("cells[0].place[0].location", "soma[0](1.5)"),
     "cells[0].place[0].location: x = 1.5 is outside [0, 1]"),
    (_set("cells[0].place[0].location", "soma[0]"),
     "cells[0].place[0].location: 'soma[0]' is not a location; write section(x)"),
    (_set("cells[0].place[0].location", "soma[0](a)"),
     "cells[0].place[0].location: 'soma[0](a)': x must be a number in [0, 1]"),
    (_set("cells[0].place[0].location", ["soma[0]"]),
     "cells[0].place[0].location: a location list must be [section, x]"),
    (_set("cells[0].place[0].location", ["soma[0]", 2]),
     "cells[0].place[0].location: x = 2 is outside [0, 1]"),
    (lambda data: data["cells"][0]["place"].append({"id": "stim", "kind": "IClamp",
                                                   "location": "soma[0](0)"}),
     "cells[0].place[1].id: 'stim' names two point processes of this cell"),
    (_set("stimuli[0].kind", "PoissonStim"), ("stimuli[0].kind: unknown stimulus kind "
                                             "'PoissonStim'; valid: NetStim, VecStim")),
    (_set("stimuli[0].params.intervl", 3), ("stimuli[0].params.intervl: unknown NetStim "
                                           "parameter; valid: start, interval, number, noise "
                                           "(did you mean 'interval'?)")),
    (_set("stimuli[0].times", [1]), "stimuli[0].times: a NetStim has no times"),
    (_set("stimuli[1]", {"id": "vs", "kind": "VecStim"}), ("stimuli[1]: missing required key "
                                                          "'times'")),
    (_set("stimuli[1]", {"id": "vs", "kind": "VecStim", "times": [1, 3, 2]}),
     "stimuli[1].times[2]: spike times must be sorted: 2 follows 3"),
    (_set("stimuli[1]", {"id": "vs", "kind": "VecStim", "times": [-1]}),
     "stimuli[1].times[0]: must be >= 0, not -1"),
    (_set("stimuli[1]", {"id": "vs", "kind": "VecStim", "times": [1], "params": {}}),
     "stimuli[1].params: a VecStim has no params"),
    (_set("stimuli[1]", {"id": "ns", "kind": "VecStim", "times": [1]}),
     "stimuli[1].id: 'ns' names two stimuli"),
    # references
    (_set("connections[0].target.cell", 2), ("connections[0].target.cell: no cell 2: the model "
                                            "has 2 cells (gids 0..1)")),
    (_set("connections[0].target.point", "sin"), ("connections[0].target.point: cell 1 has no "
                                                 "point process 'sin'; its ids: 'syn' (did you "
                                                 "mean 'syn'?)")),
    (_set("connections[0].target", {"cell": 0, "point": "stim"}),
     "connections[0].target.point: 'stim' is an IClamp, which receives no events"),
    (_set("connections[1].source.stimulus", "nss"), ("connections[1].source.stimulus: no "
                                                    "stimulus 'nss'; ids: 'ns', 'vs' (did you mean "
                                                    "'ns'?)")),
    (_set("connections[1].source", {"stimulus": "ns", "cell": 0}),
     "connections[1].source.cell: unknown key; valid keys: stimulus"),
    (_set("connections[0].source.cell", -1), "connections[0].source.cell: no cell -1"),
    (_set("connections[0].source.cell", "0"), ("connections[0].source.cell: must be a cell's "
                                              "gid (a whole number), not a string")),
    (_set("connections[0].delay", -0.5), "connections[0].delay: must be >= 0, not -0.5"),
    (_set("record[0].every", 0), "record[0].every: must be >= 1, not 0"),
    (_set("record[2].point", "stm"), "record[2].point: cell 0 has no point process 'stm'"),
    (_set("record[2].location", "soma[0](0.5)"), ("record[2]: give either location (a membrane "
                                                 "variable) or point")),
    (_set("record[4].spikes", {"stimulus": "x"}), "record[4].spikes.stimulus: no stimulus 'x'"),
    (_set("record[4].spikes.cell", 5), "record[4].spikes.cell: no cell 5"),
    (_set("record[1].cell", 2), "record[1].cell: no cell 2"),
    (_set("outputs", {"npz": 3}), "outputs.npz: must be a string, not a number (3)"),
    (_set("record[0].variable", " "), "record[0].variable: must not be empty"),
    (_set("dt", float("inf")), "dt: must be finite, not inf"),
]


@pytest.mark.parametrize("change, message", BAD_ITEMS,
                         ids=[m.split(":")[0] or "top" for _, m in BAD_ITEMS])
def test_bad_items_are_named_by_their_json_path(tmp_path, change, message):
    data = example()
    data["stimuli"].append({"id": "vs", "kind": "VecStim", "times": [1, 2]})
    change(data)
    path = write(tmp_path, data)
    with pytest.raises(ModelFileError) as info:
        read_model(path, mechanisms=BUILT_INS)
    assert str(info.value).startswith(f"{path}: {message}".replace(": : ", ": "))
    assert info.value.file == str(path) and info.value.line is None


def test_the_error_is_a_value_error_with_its_json_path(tmp_path):
    data = example()
    data["cells"][1]["place"][0]["location"] = "soma[0](2)"
    path = write(tmp_path, data)
    with pytest.raises(ValueError) as info:
        read_model(path)
    assert info.value.where == "cells[1].place[0].location"


def test_unknown_mechanisms_are_named_with_the_valid_ones(tmp_path):
    data = example()
    data["cells"][1]["insert"][0]["mechanism"] = "HH"
    with pytest.raises(ModelFileError, match=r"cells\[1\].insert\[0\].mechanism: unknown "
                                             r"mechanism 'HH'; valid: Exp2Syn, ExpSyn, IClamp, "
                                             r"SEClamp, hh, pas \(did you mean 'hh'\?\)"):
        read_model(write(tmp_path, data), mechanisms=BUILT_INS)
    data["cells"][1]["insert"][0]["mechanism"] = "hh"
    data["cells"][1]["place"][0]["kind"] = "ExpSin"
    with pytest.raises(ModelFileError, match=r"cells\[1\].place\[0\].kind: unknown mechanism "
                                             r"'ExpSin'; .*\(did you mean 'ExpSyn'\?\)"):
        read_model(write(tmp_path, data), mechanisms=BUILT_INS)
    # the built-in point processes are valid kinds even where names() lists none of them
    data["cells"][1]["place"][0]["kind"] = "Exp2Syn"
    assert read_model(write(tmp_path, data), mechanisms={"hh"})["cells"][1]["place"][0][
        "kind"] == "Exp2Syn"


def test_json_syntax_errors_give_line_and_column(tmp_path):
    lines = ['{"tstop": 10,', ' "cells": [', '   {"morphology": "a.swc"}',
             '   {"x": 1}  # <-- here: the comma before it is missing', ']}']
    marker = next(n for n, line in enumerate(lines, 1) if "# <-- here" in line)
    path = write(tmp_path, "\n".join(line.partition("#")[0] for line in lines))
    with pytest.raises(ModelFileError) as info:
        read_model(path)
    assert (info.value.line, info.value.column) == (marker, 4)
    assert str(info.value) == f"{path}:{marker}:4: Expecting ',' delimiter"


def test_a_key_given_twice_is_refused(tmp_path):
    example_text = EXAMPLE.read_text().replace("../morphologies/real/c91662.swc", str(CELL_SWC))
    text = example_text.replace('"dt": 0.025,', '"dt": 0.025, "dt": 0.1,', 1)
    path = write(tmp_path, text)
    with pytest.raises(ModelFileError, match=r"model.json: key 'dt' is given twice"):
        read_model(path)
    text = example_text.replace('"amp": 1', '"amp": 1, "amp": 2', 1)
    with pytest.raises(ModelFileError, match=r"cells\[0\].place\[0\].params: key 'amp' is "
                                             r"given twice"):
        read_model(write(tmp_path, text))


def test_top_level_must_be_an_object_and_the_file_must_exist(tmp_path):
    with pytest.raises(ModelFileError, match=r"model.json: must be an object \{...\}, not a "
                                             r"list"):
        read_model(write(tmp_path, "[]"))
    with pytest.raises(FileNotFoundError, match="missing.json: no such model file"):
        read_model(tmp_path / "missing.json")
    with pytest.raises(FileNotFoundError, match="missing.json: no such model file"):
        load_model(tmp_path / "missing.json")
    with pytest.raises(ModelFileError, match=r"model.yaml: unknown model file type '.yaml'; "
                                             r"use .json or .py"):
        load_model(tmp_path / "model.yaml")
    (tmp_path / "latin.json").write_bytes(b'{"description": "\xe9"}')
    with pytest.raises(ModelFileError, match="latin.json: not UTF-8 text"):
        read_model(tmp_path / "latin.json")


# -- building, against a fake API that records every call -------------------------------
def fake_api():
    """A namespace with ``Cell`` and ``Simulation`` that log their calls in ``api.log``."""
    log = []

    class Cell:
        count = 0

        def __init__(self, morphology, **options):
            self.n = Cell.count
            Cell.count += 1
            log.append(("Cell", Path(morphology).name, options))

        def insert(self, mechanism, region="all", **params):
            log.append(("insert", self.n, mechanism, region, params))
            if "bogus" in params:
                raise ValueError("hh has no parameter 'bogus'; valid: gnabar_hh, gkbar_hh")
            return self

        def set(self, name, value, region="all"):
            log.append(("set", self.n, name, value, region))
            return self

        def place(self, kind, location, **params):
            log.append(("place", self.n, kind, location, params))
            if location == "dend[999](0.5)":
                raise ValueError("no section 'dend[999]' in the cell (dend[0]..dend[10])")
            return types.SimpleNamespace(cell=self.n, kind=kind, location=location)

    class Simulation:
        def __init__(self, cells, **options):
            self.sources = 0
            log.append(("Simulation", [c.n for c in cells], options))

        def _source(self, what):
            self.sources += 1
            return f"{what}#{self.sources}"

        def net_stim(self, **params):
            log.append(("net_stim", params))
            return self._source("NetStim")

        def vec_stim(self, times):
            log.append(("vec_stim", list(times)))
            return self._source("VecStim")

        def spike_source(self, cell, location="soma[0](0.5)", threshold=10.0):
            log.append(("spike_source", cell, location, threshold))
            return self._source(f"cell{cell}")

        def connect(self, source, target, *, weight=0.0, delay=1.0, threshold=None):
            log.append(("connect", source, (target.cell, target.kind), weight, delay))

        def record(self, variable, *, cell=0, location="soma[0](0.5)", target=None, every=1):
            where = (target.cell, target.kind) if target is not None else (cell, location)
            log.append(("record", variable, where, every))

        def record_spikes(self, source):
            log.append(("record_spikes", source))

        def run(self, tstop, *, progress=False):
            raise AssertionError("not run here")

    return types.SimpleNamespace(Cell=Cell, Simulation=Simulation, log=log)


def test_building_the_example_makes_these_calls_in_this_order():
    api = fake_api()
    sim, tstop, outputs = load_model(EXAMPLE, api=api)
    assert isinstance(sim, api.Simulation) and tstop == 100.0 and outputs == {}
    c91662 = {"d_lambda": 0.1, "ra": 100, "cm": 1}
    assert api.log == [
        ("Cell", "c91662.swc", c91662), ("insert", 0, "hh", "all", {}),
        ("place", 0, "IClamp", "soma[0](0.5)", {"delay": 5, "dur": 50, "amp": 1}),
        ("Cell", "c91662.swc", c91662), ("insert", 1, "hh", "all", {}),
        ("place", 1, "ExpSyn", "soma[0](0.5)", {"tau": 2, "e": 0}),
        ("Simulation", [0, 1], {"dt": 0.025, "celsius": 6.3, "v_init": -65}),
        ("net_stim", {"start": 20, "interval": 7.3, "number": 6}),
        ("spike_source", 0, "soma[0](0.5)", 10), ("spike_source", 1, "soma[0](0.5)", 10.0),
        ("connect", "cell0#2", (1, "ExpSyn"), 0.05, 1),
        ("connect", "NetStim#1", (1, "ExpSyn"), 0.05, 0.5),
        ("record", "v", (0, "soma[0](0.5)"), 1), ("record", "v", (1, "soma[0](0.5)"), 1),
        ("record", "i", (0, "IClamp"), 1), ("record", "g", (1, "ExpSyn"), 1),
        ("record_spikes", "cell0#2"), ("record_spikes", "cell1#3"),
        ("record_spikes", "NetStim#1"),
    ]


def test_copies_make_consecutive_gids_sharing_ids(tmp_path):
    data = {"tstop": 10, "cells": [
        {"morphology": str(CELL_SWC), "copies": 3,
         "place": [{"id": "syn", "kind": "ExpSyn", "location": "soma[0](0.5)"}]},
        {"morphology": str(CELL_SWC), "set": [{"name": "gnabar_hh", "value": 0.2,
                                               "region": ["soma", "axon"]}]}],
        "connections": [{"source": {"cell": 3}, "target": {"cell": 2, "point": "syn"},
                         "weight": 0.1}],
        "record": [{"variable": "g", "cell": 1, "point": "syn", "every": 4}]}
    api = fake_api()
    build_model(read_model(write(tmp_path, data), mechanisms=BUILT_INS), api=api)
    assert [e[0] for e in api.log[:8]] == ["Cell", "place", "Cell", "place", "Cell", "place",
                                           "Cell", "set"]
    assert api.log[7] == ("set", 3, "gnabar_hh", 0.2, ["soma", "axon"])
    assert ("Simulation", [0, 1, 2, 3], {}) in api.log
    assert ("connect", "cell3#1", (2, "ExpSyn"), 0.1, 1.0) in api.log
    assert ("record", "g", (1, "ExpSyn"), 4) in api.log


def test_one_source_per_place_with_the_last_threshold_given(tmp_path):
    data = example()
    data["connections"].append({"source": {"cell": 0, "location": ["soma[0]", 0.5],
                                           "threshold": -20},
                                "target": {"cell": 1, "point": "syn"}, "weight": 0.1})
    data["record"][4]["spikes"]["threshold"] = 0  # the last one given: wins
    api = fake_api()
    build_model(read_model(write(tmp_path, data), mechanisms=BUILT_INS), api=api)
    made = [e for e in api.log if e[0] == "spike_source"]
    assert made == [("spike_source", 0, "soma[0](0.5)", 0), ("spike_source", 1, "soma[0](0.5)",
                                                             10.0)]
    sources = [e[1] for e in api.log if e[0] == "connect"]
    assert sources == ["cell0#2", "NetStim#1", "cell0#2"]


def test_vec_stim_and_simulation_options_pass_through(tmp_path):
    data = example()
    data.update(backend="multicore", tables=False, threads=2)
    data["stimuli"].append({"id": "vs", "kind": "VecStim", "times": [1, 2.5]})
    data["record"].append({"spikes": {"stimulus": "vs"}})
    api = fake_api()
    build_model(read_model(write(tmp_path, data), mechanisms=BUILT_INS), api=api)
    assert ("vec_stim", [1, 2.5]) in api.log
    assert api.log[-1] == ("record_spikes", "VecStim#2")
    assert next(e for e in api.log if e[0] == "Simulation")[2] == {
        "dt": 0.025, "celsius": 6.3, "v_init": -65, "backend": "multicore", "tables": False,
        "threads": 2}


@pytest.mark.parametrize("change, where, reason", [
    (_set("cells[1].insert[0].params", {"bogus": 1}), "cells[1].insert[0]",
     "hh has no parameter 'bogus'; valid: gnabar_hh, gkbar_hh"),
    (_set("cells[0].place[0].location", "dend[999](0.5)"), "cells[0].place[0]",
     "no section 'dend[999]' in the cell"),
])
def test_the_simulators_refusals_are_located_in_the_file(tmp_path, change, where, reason):
    data = example()
    change(data)
    path = write(tmp_path, data)
    api = fake_api()
    with pytest.raises(ModelFileError) as info:
        load_model(path, api=api)
    assert str(info.value).startswith(f"{path}: {where}: {reason}")
    assert isinstance(info.value.__cause__, ValueError)


def test_nothing_is_built_when_the_file_is_bad(tmp_path):
    data = example()
    data["record"][0]["every"] = 0  # the last item: found before any Cell is made
    api = fake_api()
    with pytest.raises(ModelFileError, match=r"record\[0\].every"):
        load_model(write(tmp_path, data), api=api)
    assert api.log == []


# -- Python model files -------------------------------------------------------------------
PY_MODEL = '''
import model_test_helper as helper
simulation = helper.api.Simulation([])
tstop = 25
outputs = {"npz": "res/out.npz", "raster": "r.svg"}
if __name__ == "__main__":
    raise SystemExit("a model file is not run as a script")
'''


def test_python_model_defines_simulation_tstop_and_outputs(tmp_path, monkeypatch):
    import sys

    api = fake_api()
    helper = types.ModuleType("model_test_helper")
    helper.api = api
    monkeypatch.setitem(sys.modules, "model_test_helper", helper)
    write(tmp_path, PY_MODEL, "model.py")
    sim, tstop, outputs = load_model(tmp_path / "model.py", api=api)
    assert isinstance(sim, api.Simulation) and tstop == 25.0
    assert outputs == {"npz": tmp_path / "res" / "out.npz", "raster": tmp_path / "r.svg"}
    assert str(tmp_path) not in sys.path


def test_python_model_imports_its_neighbours(tmp_path):
    import sys

    (tmp_path / "neighbour_for_model_test.py").write_text("TSTOP = 12.5\n")
    write(tmp_path, "import neighbour_for_model_test as n\nsimulation = SIM\ntstop = n.TSTOP\n",
          "model.py")
    api = fake_api()
    # the model finds SIM through builtins: the file itself stays independent of the test
    import builtins

    builtins.SIM = api.Simulation([])
    try:
        assert load_model(tmp_path / "model.py", api=api)[1] == 12.5
    finally:
        del builtins.SIM
        sys.modules.pop("neighbour_for_model_test", None)
    assert str(tmp_path) not in sys.path


@pytest.mark.parametrize("source, message", [
    ("tstop = 10\n", "model.py: defines no `simulation`"),
    ("simulation = 3\ntstop = 10\n", ("model.py: simulation: must be a hinesbatch.Simulation, "
                                     "not int")),
    ("simulation = SIM\n", "model.py: defines no `tstop`"),
    ("simulation = SIM\ntstop = -1\n", "model.py: tstop: must be > 0, not -1"),
    ("simulation = SIM\ntstop = '10'\n", "model.py: tstop: must be a number, not a string"),
    ("simulation = SIM\ntstop = 1\noutputs = {'png': 'a.png'}\n",
     "model.py: outputs.png: unknown key; valid keys: npz, spikes, plot, raster"),
])
def test_python_model_errors_name_what_is_missing(tmp_path, source, message):
    import builtins

    api = fake_api()
    builtins.SIM = api.Simulation([])
    try:
        path = write(tmp_path, source, "model.py")
        with pytest.raises(ModelFileError) as info:
            load_model(path, api=api)
    finally:
        del builtins.SIM
    assert str(info.value).startswith(str(tmp_path / message))


# -- outputs -------------------------------------------------------------------------------
def test_save_outputs_writes_each_kind(tmp_path):
    pytest.importorskip("h5py", reason="h5py is not installed (extra 'sonata')")
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (extra 'plot')")
    res = make_results()
    written = save_outputs(res, {"npz": tmp_path / "r", "spikes": tmp_path / "s.h5",
                                 "plot": tmp_path / "p", "raster": tmp_path / "raster.svg"})
    assert written == {"npz": tmp_path / "r.npz", "spikes": tmp_path / "s.h5",
                       "plot": tmp_path / "p.png", "raster": tmp_path / "raster.svg"}
    assert sorted(os.listdir(tmp_path)) == ["p.png", "r.npz", "raster.svg", "s.h5"]
    assert hinesbatch.io.load_results(written["npz"]).keys() == res.keys()
    with pytest.raises(ValueError, match="unknown output 'csv'; valid: npz, spikes, plot"):
        save_outputs(res, {"csv": tmp_path / "x.csv"})


# -- with the real simulator (runs once hinesbatch.Cell and Simulation exist) --------------
needs_simulator = pytest.mark.skipif(
    not (hasattr(hinesbatch, "Cell") and hasattr(hinesbatch, "Simulation")),
    reason="hinesbatch.Cell / hinesbatch.Simulation are not available")


@needs_simulator
@pytest.mark.slow
def test_the_example_model_builds_and_runs():
    sim, tstop, _ = load_model(EXAMPLE)
    assert isinstance(sim, hinesbatch.Simulation) and tstop == 100.0
    res = sim.run(10.0)
    assert res.keys() == ["v@0:soma[0](0.5)", "v@1:soma[0](0.5)", "i@0:IClamp[0]",
                          "g@1:ExpSyn[0]"]
    assert res.units["i@0:IClamp[0]"] == "nA" and res.units["v@0:soma[0](0.5)"] == "mV"
    assert set(res.spikes) == {"spikes@0:soma[0](0.5)", "spikes@1:soma[0](0.5)",
                               "spikes@NetStim[0]"}
    assert res.spike_gids["spikes@NetStim[0]"] == 2
    assert np.isfinite(res["v@1:soma[0](0.5)"]).all()


@needs_simulator
def test_the_real_simulators_refusals_are_located(tmp_path):
    data = example()
    data["cells"][1]["insert"][0]["params"] = {"gnabar_hx": 0.1}
    path = write(tmp_path, data)
    with pytest.raises(ModelFileError, match=rf"^{tmp_path}/model.json: cells\[1\]"
                                             rf"\.insert\[0\]: .*gnabar_hx"):
        load_model(path)
    data = example()
    data["cells"][0]["place"][0]["location"] = "dend[9999](0.5)"
    with pytest.raises(ModelFileError, match=r"cells\[0\]\.place\[0\]: .*dend\[9999\]"):
        load_model(write(tmp_path, data))


def test_mechanism_names_come_from_the_simulator_by_default(tmp_path, monkeypatch):
    import sys

    module = types.ModuleType("hinesbatch.mechanisms")
    module.names = lambda: ["pas", "hh"]
    monkeypatch.setitem(sys.modules, "hinesbatch.mechanisms", module)
    data = example()
    data["cells"][0]["insert"][0]["mechanism"] = "kdr"
    with pytest.raises(ModelFileError, match=r"cells\[0\].insert\[0\].mechanism: unknown "
                                             r"mechanism 'kdr'; valid: hh, pas$"):
        read_model(write(tmp_path, data))


def _example_in_python(tstop: float):
    """The example model written with the Python API, as docs/model-files.md shows it."""
    hb = hinesbatch
    cells = [hb.Cell(str(CELL_SWC), d_lambda=0.1, ra=100, cm=1).insert("hh", "all")
             for _ in range(2)]
    stim = cells[0].place("IClamp", "soma[0](0.5)", delay=5, dur=50, amp=1)
    syn = cells[1].place("ExpSyn", "soma[0](0.5)", tau=2, e=0)
    sim = hb.Simulation(cells, dt=0.025, celsius=6.3, v_init=-65)
    ns = sim.net_stim(start=20, interval=7.3, number=6)
    cell0 = sim.spike_source(0, "soma[0](0.5)", threshold=10)
    sim.connect(cell0, syn, weight=0.05, delay=1)
    sim.connect(ns, syn, weight=0.05, delay=0.5)
    sim.record("v", cell=0, location="soma[0](0.5)")
    sim.record("v", cell=1, location="soma[0](0.5)")
    sim.record("i", target=stim)
    sim.record("g", target=syn)
    sim.record_spikes(cell0)
    sim.record_spikes(sim.spike_source(1, "soma[0](0.5)"))
    sim.record_spikes(ns)
    return sim.run(tstop)


@needs_simulator
@pytest.mark.slow
def test_the_json_model_equals_the_same_model_written_in_python():
    sim, _, _ = load_model(EXAMPLE)
    from_file, by_hand = sim.run(60.0), _example_in_python(60.0)
    assert from_file.keys() == by_hand.keys()
    for key in by_hand:
        np.testing.assert_array_equal(from_file[key], by_hand[key])
    assert list(from_file.spikes) == list(by_hand.spikes)
    for key in by_hand.spikes:
        np.testing.assert_array_equal(from_file.spikes[key], by_hand.spikes[key])
    assert all(len(ts) > 0 for ts in by_hand.spikes.values())  # both cells and NetStim fire


@needs_simulator
def test_a_python_model_with_the_real_simulator(tmp_path):
    write(tmp_path, "import hinesbatch as hb\n"
                    f"cell = hb.Cell({str(CELL_SWC)!r}).insert('hh')\n"
                    "cell.place('IClamp', 'soma[0](0.5)', delay=1, dur=2, amp=1)\n"
                    "simulation = hb.Simulation([cell])\n"
                    "simulation.record('v')\n"
                    "tstop = 2.0\n"
                    "outputs = {'npz': 'v.npz'}\n", "model.py")
    sim, tstop, outputs = load_model(tmp_path / "model.py")
    res = sim.run(tstop)
    assert res.keys() == ["v@0:soma[0](0.5)"] and res.t.shape == (81,)
    assert save_outputs(res, outputs) == {"npz": tmp_path / "v.npz"}


def test_a_weight_vector_reaches_connect(tmp_path):
    data = {"tstop": 10, "cells": [
        {"morphology": str(CELL_SWC),
         "place": [{"id": "syn", "kind": "ExpSyn", "location": "soma[0](0.5)"}]}],
        "stimuli": [{"id": "vs", "kind": "VecStim", "times": [1]}],
        "connections": [{"source": {"stimulus": "vs"}, "target": {"cell": 0, "point": "syn"},
                         "weight": [0.1, 2]}]}
    api = fake_api()
    build_model(read_model(write(tmp_path, data), mechanisms=BUILT_INS), api=api)
    assert [e[3] for e in api.log if e[0] == "connect"] == [[0.1, 2]]
