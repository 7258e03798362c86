"""``Results``: access by key with units and times, the spike report, and the ``.npz`` file
(round trip, atomic writing, refusing files it did not write)."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from hinesbatch.engine.results import Results
from hinesbatch.io import load_results
from hinesbatch.io import npz as npz_format

V0, V1, I0, G1 = "v@0:soma[0](0.5)", "v@1:soma[0](0.5)", "i@0:IClamp[0]", "g@1:ExpSyn[0]"
S0, S1, NS = "spikes@0:soma[0](0.5)", "spikes@1:soma[0](0.5)", "spikes@NetStim[0]"


def make_results(rng=None, n=41) -> Results:
    """Four traces (two every step, one every 2nd step, one every step) and three sources."""
    rng = np.random.default_rng(0) if rng is None else rng
    t = np.arange(n) * 0.025
    t2 = t[::2].copy()
    traces = {V0: rng.normal(-65, 5, n), I0: rng.normal(0, 1, n), V1: rng.normal(-65, 5, t2.size),
              G1: rng.random(n)}
    times = {V0: t, I0: t, V1: t2, G1: t}
    units = {V0: "mV", I0: "nA", V1: "mV", G1: "µS"}
    spikes = {S0: np.array([0.3, 0.7]), S1: np.array([0.3]), NS: np.array([0.1, 0.3, 0.9])}
    gids = {S0: 0, S1: 1, NS: 2}
    meta = {"dt": 0.025, "tstop": (n - 1) * 0.025, "celsius": 6.3, "backend": "serial"}
    return Results(traces, times, units, spikes, gids, meta)


def test_traces_times_and_units_by_key():
    res = make_results()
    assert res.keys() == [V0, I0, V1, G1]
    assert list(res) == res.keys() and len(res) == 4 and V1 in res and S0 not in res
    assert res[V1].shape == (21,) and res.time(V1).shape == (21,)
    np.testing.assert_array_equal(res.time(V1), np.arange(41)[::2] * 0.025)
    assert res.units == {V0: "mV", I0: "nA", V1: "mV", G1: "µS"}
    assert res.spike_gids == {S0: 0, S1: 1, NS: 2}
    assert res.spikes[NS].dtype == np.float64
    assert list(res.traces) == res.keys() and res.traces[V1] is res[V1]
    assert res.times[V1] is res.time(V1)
    with pytest.raises(TypeError):
        res.traces[V0] = np.zeros(41)  # read-only: traces and times stay consistent


def test_t_is_the_every_step_time_even_when_a_sparser_key_comes_first():
    res = make_results()
    reordered = Results({k: res[k] for k in (V1, V0)}, {k: res.time(k) for k in (V1, V0)},
                        {V1: "mV", V0: "mV"}, {}, {}, {})
    assert reordered.t.shape == (41,)
    np.testing.assert_array_equal(reordered.t, res.time(V0))
    assert Results({}, {}, {}, {}, {}, {}).t.shape == (0,)


def test_unknown_key_lists_valid_keys_close_ones_first():
    res = make_results()
    with pytest.raises(KeyError) as info:
        res["v@0:soma[0](0.4)"]
    message = info.value.args[0]
    assert message.startswith("no trace 'v@0:soma[0](0.4)'; valid keys: 'v@0:soma[0](0.5)'")
    assert repr(I0) in message and repr(G1) in message
    with pytest.raises(KeyError, match="no trace 'x'"):
        res.time("x")
    with pytest.raises(KeyError, match=r"is a spike source: its times are res.spikes\["):
        res[S0]


def test_unknown_key_lists_a_few_keys_and_counts_the_rest():
    keys = [f"v@{i}:soma[0](0.5)" for i in range(40)]
    t = np.zeros(1)
    res = Results({k: t for k in keys}, {k: t for k in keys}, {k: "mV" for k in keys},
                  {}, {}, {})
    with pytest.raises(KeyError) as info:
        res["w"]
    assert info.value.args[0].endswith("and 35 more")


def test_spike_report_sorted_by_time_then_gid():
    gids, times = make_results().spike_report()
    assert gids.dtype == np.int64 and times.dtype == np.float64
    np.testing.assert_array_equal(times, [0.1, 0.3, 0.3, 0.3, 0.7, 0.9])
    np.testing.assert_array_equal(gids, [2, 0, 1, 2, 0, 2])
    empty = Results({}, {}, {}, {}, {}, {}).spike_report()
    assert empty[0].shape == empty[1].shape == (0,) and empty[0].dtype == np.int64


def test_repr_summarises_keys_samples_and_spikes():
    text = repr(make_results())
    assert text.startswith("Results(4 traces [v@0:soma[0](0.5), i@0:IClamp[0], ")
    assert "(1 more)" in text and "41 samples, t = 0..1 ms" in text
    assert "6 spikes from 3 sources" in text
    assert "no samples" in repr(Results({}, {}, {}, {}, {}, {}))


@pytest.mark.parametrize("change, message", [
    (lambda a: a["times"].pop(V0), r"traces and times must have the same keys \(traces only"),
    (lambda a: a["units"].pop(I0), r"traces and units must have the same keys"),
    (lambda a: a["spike_gids"].pop(NS), r"spikes and spike_gids must have the same keys"),
    (lambda a: a["times"].__setitem__(V0, np.zeros(3)),
     r"trace 'v@0:soma\[0\]\(0.5\)' has shape \(41,\) but its times have shape \(3,\)"),
    (lambda a: a["spikes"].__setitem__(S0, np.zeros((2, 2))), r"must be 1-D"),
    (lambda a: a["spike_gids"].__setitem__(S0, -1), r"spike_gids\['spikes@0.*int >= 0, not -1"),
    (lambda a: a["spike_gids"].__setitem__(S0, True), r"int >= 0, not True"),
    (lambda a: (a["spikes"].__setitem__(V0, np.zeros(1)),
                a["spike_gids"].__setitem__(V0, 0)), r"name both a trace and a spike source"),
])
def test_inconsistent_parts_are_refused_naming_the_key(change, message):
    res = make_results()
    parts = {"traces": {k: res[k] for k in res}, "times": {k: res.time(k) for k in res},
             "units": dict(res.units), "spikes": dict(res.spikes),
             "spike_gids": dict(res.spike_gids), "meta": dict(res.meta)}
    change(parts)
    with pytest.raises(ValueError, match=message):
        Results(**parts)


def test_parts_must_be_dicts():
    with pytest.raises(TypeError, match="traces must be a dict, not list"):
        Results([], {}, {}, {}, {}, {})


def test_save_and_load_round_trip_exactly(tmp_path, seed):
    res = make_results(np.random.default_rng(seed))
    path = res.save(tmp_path / "run")
    assert path == tmp_path / "run.npz" and path.is_file()
    back = load_results(path)
    assert back.keys() == res.keys()
    for key in res:
        assert back[key].dtype == res[key].dtype
        np.testing.assert_array_equal(back[key], res[key])
        np.testing.assert_array_equal(back.time(key), res.time(key))
    assert back.units == res.units and back.spike_gids == res.spike_gids
    assert list(back.spikes) == list(res.spikes)
    for key in res.spikes:
        np.testing.assert_array_equal(back.spikes[key], res.spikes[key])
    assert back.meta == res.meta
    assert back.time(V0) is back.time(I0)  # stored once, shared again
    assert load_results(tmp_path / "run").keys() == res.keys()  # .npz found as save added it


def test_save_stores_each_time_array_once(tmp_path):
    path = make_results().save(tmp_path / "run.npz")
    with np.load(path, allow_pickle=False) as npz:
        assert sorted(n for n in npz.files if n.startswith("time_")) == ["time_0", "time_1"]
        index = json.loads(str(npz["index"][()]))
    assert index["format"] == "hinesbatch-results" and index["version"] == 1
    assert [e["time"] for e in index["traces"]] == ["time_0", "time_0", "time_1", "time_0"]


def test_meta_numpy_values_are_stored_as_json(tmp_path):
    res = Results({}, {}, {}, {}, {}, {"n": np.int64(3), "x": np.float32(0.5),
                                       "a": np.arange(3), "p": tmp_path, "t": (1, 2)})
    back = load_results(res.save(tmp_path / "m.npz"))
    assert back.meta == {"n": 3, "x": 0.5, "a": [0, 1, 2], "p": str(tmp_path), "t": [1, 2]}


def test_meta_that_json_cannot_hold_is_refused_naming_the_entry(tmp_path):
    res = Results({}, {}, {}, {}, {}, {"cells": [object()]})
    with pytest.raises(TypeError, match=r"meta\['cells'\]\[0\] is of type object"):
        res.save(tmp_path / "m.npz")
    assert list(tmp_path.iterdir()) == []


def test_save_is_atomic_a_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    path = make_results().save(tmp_path / "run.npz")
    before = path.read_bytes()

    def broken_savez(file, **arrays):
        file.write(b"PK partial")
        raise OSError("disk full")

    monkeypatch.setattr(npz_format.np, "savez", broken_savez)
    with pytest.raises(OSError, match="disk full"):
        make_results(np.random.default_rng(1)).save(path)
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["run.npz"]  # no temporary file left behind


def test_save_into_a_missing_folder_names_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="the folder .*nowhere does not exist"):
        make_results().save(tmp_path / "nowhere" / "run.npz")


def test_load_refuses_an_npz_it_did_not_write(tmp_path):
    np.savez(tmp_path / "other.npz", t=np.zeros(3))
    with pytest.raises(ValueError, match=r"other.npz: not a hinesbatch results file \(no "
                                         r"'index' entry; entries: t\)"):
        load_results(tmp_path / "other.npz")
    np.savez(tmp_path / "alien.npz", index=np.array(json.dumps({"format": "x"})))
    with pytest.raises(ValueError, match=r"not a hinesbatch results file \(format 'x'\)"):
        load_results(tmp_path / "alien.npz")


def test_load_refuses_a_newer_version(tmp_path):
    index = {"format": "hinesbatch-results", "version": 99, "traces": [], "spikes": []}
    np.savez(tmp_path / "new.npz", index=np.array(json.dumps(index)))
    with pytest.raises(ValueError, match="version 99 is newer than this hinesbatch reads"):
        load_results(tmp_path / "new.npz")


def test_load_names_a_missing_entry_of_a_damaged_file(tmp_path):
    index = {"format": "hinesbatch-results", "version": 1, "spikes": [],
             "traces": [{"key": "v", "unit": "mV", "data": "trace_0", "time": "time_0"}]}
    np.savez(tmp_path / "bad.npz", index=np.array(json.dumps(index)), trace_0=np.zeros(2))
    with pytest.raises(ValueError, match="bad.npz: damaged results file .*time_0"):
        load_results(tmp_path / "bad.npz")
