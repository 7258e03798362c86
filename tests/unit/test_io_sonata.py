"""SONATA spike reports: the layout of the SONATA developer guide ("Spike file") with the
attribute types libsonata reads, the round trip, and reading other writers' reports."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from test_results import make_results

from hinesbatch.io import load_spikes
from hinesbatch.io.sonata import write_spike_report

h5py = pytest.importorskip("h5py", reason="h5py is not installed (extra 'sonata')")


def test_layout_follows_the_sonata_spike_file(tmp_path):
    res = make_results()
    path = res.save_spikes(tmp_path / "spikes.h5", population="ca1")
    assert path == tmp_path / "spikes.h5"
    with h5py.File(path, "r") as f:
        assert int(f.attrs["magic"]) == 0x0A7A and f.attrs["magic"].dtype == np.uint32
        np.testing.assert_array_equal(f.attrs["version"], [0, 1])
        assert list(f["spikes"]) == ["ca1"]
        group = f["spikes/ca1"]
        ts, ids = group["timestamps"], group["node_ids"]
        assert ts.dtype == np.float64 and ids.dtype == np.uint64
        assert ts.attrs["units"] == "ms"
        # sorting is an HDF5 enum {none: 0, by_id: 1, by_time: 2}, as libsonata declares it
        sorting = group.attrs.get_id("sorting").dtype
        assert h5py.check_enum_dtype(sorting) == {"none": 0, "by_id": 1, "by_time": 2}
        assert group.attrs["sorting"] == 2
        np.testing.assert_array_equal(ts[()], [0.1, 0.3, 0.3, 0.3, 0.7, 0.9])
        np.testing.assert_array_equal(ids[()], [2, 0, 1, 2, 0, 2])


def test_round_trip_equals_the_spike_report(tmp_path, seed):
    rng = np.random.default_rng(seed)
    gids = rng.integers(0, 50, 500)
    times = np.round(rng.random(500) * 100, 1)  # rounded: many equal times
    write_spike_report(tmp_path / "s.h5", gids, times)
    back_gids, back_times = load_spikes(tmp_path / "s.h5")
    order = np.lexsort((gids, times))
    np.testing.assert_array_equal(back_gids, gids[order])
    np.testing.assert_array_equal(back_times, times[order])
    assert back_gids.dtype == np.int64 and back_times.dtype == np.float64


def test_empty_report(tmp_path):
    res = make_results()
    res.spikes.clear()
    res.spike_gids.clear()
    gids, times = load_spikes(res.save_spikes(tmp_path / "none.h5"))
    assert gids.shape == times.shape == (0,)


def _write_by_hand(path, populations: dict, units="ms", sorting_as_string=False):
    """A report as other writers make it: string-valued sorting (older BMTK), seconds."""
    with h5py.File(path, "w") as f:
        for name, (ids, ts) in populations.items():
            g = f.create_group(f"spikes/{name}")
            if sorting_as_string:
                g.attrs["sorting"] = "by_id"
            g.create_dataset("node_ids", data=np.asarray(ids, dtype=np.uint64))
            d = g.create_dataset("timestamps", data=np.asarray(ts, dtype=np.float64))
            if units is not None:
                d.attrs["units"] = units


def test_reads_other_writers_reports_sorting_them_by_time(tmp_path):
    _write_by_hand(tmp_path / "a.h5", {"v1": ([0, 0, 3], [0.002, 0.005, 0.001])}, units="s",
                   sorting_as_string=True)
    gids, times = load_spikes(tmp_path / "a.h5")
    np.testing.assert_array_equal(gids, [3, 0, 0])
    np.testing.assert_allclose(times, [1.0, 2.0, 5.0])
    _write_by_hand(tmp_path / "b.h5", {"v1": ([1], [4.0])}, units=None)  # ms by default
    np.testing.assert_array_equal(load_spikes(tmp_path / "b.h5")[1], [4.0])


def test_several_populations_need_a_choice(tmp_path):
    _write_by_hand(tmp_path / "p.h5", {"lgn": ([1], [2.0]), "v1": ([7], [3.0])})
    with pytest.raises(ValueError, match=r"p.h5: holds 2 populations \(lgn, v1\); choose one"):
        load_spikes(tmp_path / "p.h5")
    np.testing.assert_array_equal(load_spikes(tmp_path / "p.h5", "v1")[0], [7])
    with pytest.raises(ValueError, match=r"no population 'x' under /spikes \(populations: "
                                         r"lgn, v1\)"):
        load_spikes(tmp_path / "p.h5", population="x")


@pytest.mark.parametrize("build, message", [
    (lambda f: f.create_group("report"), "not a SONATA spike report"),
    (lambda f: f.create_dataset("spikes/pop/node_ids", data=[1]), "lacks timestamps"),
    (lambda f: (f.create_dataset("spikes/pop/node_ids", data=[1, 2]),
                f.create_dataset("spikes/pop/timestamps", data=[1.0])),
     "node_ids has 2 entries but timestamps 1"),
    (lambda f: (f.create_dataset("spikes/pop/node_ids", data=[1]),
                f.create_dataset("spikes/pop/timestamps", data=[1.0]),
                f["spikes/pop/timestamps"].attrs.__setitem__("units", "min")),
     "has units 'min'; known: ms, s"),
])
def test_malformed_reports_are_named(tmp_path, build, message):
    with h5py.File(tmp_path / "bad.h5", "w") as f:
        build(f)
    with pytest.raises(ValueError, match=message):
        load_spikes(tmp_path / "bad.h5")


@pytest.mark.parametrize("gids, times, population, message", [
    ([0, -1], [1.0, 2.0], "p", r"gids must be integers >= 0"),
    ([0.5], [1.0], "p", r"gids must be integers >= 0 \(dtype float64"),
    ([0, 1], [1.0], "p", r"1-D of the same length, not shapes \(2,\) and \(1,\)"),
    ([3], [np.nan], "p", r"spike time nan of gid 3 \(entry 0\) is not finite"),
    ([0], [1.0], "a/b", r"population must be a non-empty name without '/'"),
    ([0], [1.0], "", r"population must be a non-empty name"),
])
def test_bad_spikes_are_refused_before_writing(tmp_path, gids, times, population, message):
    with pytest.raises(ValueError, match=message):
        write_spike_report(tmp_path / "s.h5", np.array(gids), times, population=population)
    assert os.listdir(tmp_path) == []


def test_write_is_atomic(tmp_path, monkeypatch):
    path = make_results().save_spikes(tmp_path / "s.h5")
    before = path.read_bytes()

    class Broken(h5py.File):
        def create_group(self, name, *args, **kwargs):
            raise OSError("disk full")

    monkeypatch.setattr(h5py, "File", Broken)
    with pytest.raises(OSError, match="disk full"):
        make_results().save_spikes(path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["s.h5"]


def test_without_h5py_the_error_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "h5py", None)
    with pytest.raises(ImportError, match=r"pip install 'hinesbatch\[sonata\]'"):
        make_results().save_spikes(tmp_path / "s.h5")
    with pytest.raises(ImportError, match=r"hinesbatch\[sonata\]"):
        load_spikes(tmp_path / "s.h5")
