"""Figures of results: traces with one axis per unit and a legend of keys, the spike raster,
atomic writing and the error without matplotlib."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from test_results import G1, I0, V0, V1, make_results

from hinesbatch.engine.results import Results

pytest.importorskip("matplotlib", reason="matplotlib is not installed (extra 'plot')")


def _legend(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_one_axis_per_unit_with_the_keys_in_legends():
    res = make_results()
    fig = res.plot()
    axes = fig.get_axes()
    assert len(axes) == 3  # mV, nA, µS
    assert [ax.get_ylabel() for ax in axes] == ["v (mV)", "i (nA)", "g (µS)"]
    assert _legend(axes[0]) == [V0, V1] and _legend(axes[1]) == [I0] and _legend(axes[2]) == [G1]
    assert axes[-1].get_xlabel() == "t (ms)"
    line = axes[0].get_lines()[1]
    np.testing.assert_array_equal(line.get_xdata(), res.time(V1))
    np.testing.assert_array_equal(line.get_ydata(), res[V1])


def test_keys_select_the_traces():
    fig = make_results().plot(keys=[I0])
    assert len(fig.get_axes()) == 1 and _legend(fig.get_axes()[0]) == [I0]
    assert _legend(make_results().plot(keys=G1).get_axes()[0]) == [G1]
    with pytest.raises(KeyError, match="no trace 'v@9'"):
        make_results().plot(keys=["v@9"])
    with pytest.raises(TypeError, match="keys must be strings, not int"):
        make_results().plot(keys=[0])


def test_mixed_variables_of_one_unit_show_only_the_unit():
    t = np.arange(3.0)
    res = Results({"v@0:soma[0](0.5)": t, "ena@0:soma[0](0.5)": t}, {"v@0:soma[0](0.5)": t,
                  "ena@0:soma[0](0.5)": t}, {"v@0:soma[0](0.5)": "mV",
                                             "ena@0:soma[0](0.5)": "mV"}, {}, {}, {})
    assert res.plot().get_axes()[0].get_ylabel() == "(mV)"


def test_a_long_legend_is_cut_and_counted():
    keys = [f"v@{i}:soma[0](0.5)" for i in range(20)]
    t = np.arange(3.0)
    res = Results({k: t for k in keys}, {k: t for k in keys}, {k: "mV" for k in keys}, {}, {}, {})
    legend = _legend(res.plot().get_axes()[0])
    assert legend == keys[:12] + ["and 8 more"]


def test_nothing_to_plot_is_an_error():
    with pytest.raises(ValueError, match="no traces to plot"):
        Results({}, {}, {}, {}, {}, {}).plot()


def test_files_are_written_atomically_png_added(tmp_path):
    res = make_results()
    res.plot(tmp_path / "traces")
    res.raster(tmp_path / "raster.svg")
    assert sorted(os.listdir(tmp_path)) == ["raster.svg", "traces.png"]
    assert (tmp_path / "traces.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in (tmp_path / "raster.svg").read_bytes()[:2000]


def test_an_unknown_format_fails_before_drawing(tmp_path):
    with pytest.raises(ValueError, match=r"matplotlib cannot write '.xyz' files; use one of "
                                         r".*\.png"):
        make_results().plot(tmp_path / "traces.xyz")
    with pytest.raises(ValueError, match="cannot write '.xyz'"):
        make_results().raster(tmp_path / "raster.xyz")
    assert os.listdir(tmp_path) == []


def test_raster_draws_each_spike_at_its_gid_and_time():
    res = make_results()
    fig = res.raster()
    ax = fig.get_axes()[0]
    offsets = ax.collections[0].get_offsets()
    gids, times = res.spike_report()
    np.testing.assert_array_equal(offsets[:, 0], times)
    np.testing.assert_array_equal(offsets[:, 1], gids)
    assert ax.get_xlabel() == "t (ms)" and ax.get_ylabel() == "gid"
    assert ax.get_xlim() == (0.0, 1.0)  # 0..tstop from meta
    assert ax.get_title() == "6 spikes from 3 sources"


def test_raster_without_spikes_says_so():
    ax = Results({}, {}, {}, {}, {}, {}).raster().get_axes()[0]
    assert [t.get_text() for t in ax.texts] == ["no spikes"]


def test_without_matplotlib_the_error_names_the_extra(monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r"pip install 'hinesbatch\[plot\]'"):
        make_results().plot()
    with pytest.raises(ImportError, match=r"hinesbatch\[plot\]"):
        make_results().raster()
