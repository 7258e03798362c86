"""``hinesbatch bench multi`` without a GPU: the case builders, the analysis (best, auto's
pick against the best, the speed targets), the re-analysis from JSON and the CLI entry."""
import json

import numpy as np
import pytest

import hinesbatch
from hinesbatch.bench import multi
from hinesbatch.bench._multi_cases import (CONTENDERS, binary_cells, cases, chain_cells,
                                          random_batch, repeated_shapes, values)
from hinesbatch.tree.schedules import cell_shapes
from hinesbatch.cli import main
from hinesbatch.solvers import registry
from hinesbatch.tree.structure import MonoBatch

H200 = 132 * 2048


def _row(figure, case, cells, mono, times, **extra):
    row = {"figure": figure, "case": case, "cells": cells, "nodes": 313 * cells, "mono": mono,
           "max_cell_nodes": 313, "mean_cell_nodes": 313.0 if mono else 100.0, "depth": 0.1 if mono else None,
           "resident": H200, "auto": None, "multicore": None,
           "mono_equivalent": None, "diff_vs_interleaved": {}}
    row.update({label: times.get(label) for label, _, _ in CONTENDERS})
    row.update(extra)
    return row


def _rows():
    return [
        _row("large-cell", "3000 x ca1 (nseg=8)", 3000, True, {"interleaved": 1.0, "tiled": 0.12}),
        _row("small-batch", "100 x ca1 (nseg=1)", 100, True,
             {"interleaved": 0.3, "tiled": 0.02, "dhs": 0.05, "fine": 0.2}),
        _row("real-mix", "256000 real cells", 256000, False,
             {"interleaved": 5.0, "tiled": 2.0, "dhs": 1.0},
             mono_equivalent={"cells": 436000, "nodes": 1, "best": "tiled", "ms": 1.0}),
        # mixed sizes: auto picks balanced fine, which failed here: counted as outside 10 %
        _row("arbor", "10 random high (p=0.9)", 10, False, {"interleaved": 0.5, "dhs": 0.1,
                                                            "fine": 0.09}),
    ]


def test_analysis_finds_best_auto_and_targets():
    tables, notes = multi.analyse(_rows())
    s = {r["case"]: r for r in tables["All cases"]}
    assert s["3000 x ca1 (nseg=8)"]["best"] == "tiled"
    assert s["10 random high (p=0.9)"]["auto"] == "fine-balanced"
    assert s["10 random high (p=0.9)"]["auto/best"] is None
    assert s["256000 real cells"]["auto"] == "fine-balanced"  # largest 313 > 1.5 x mean 100
    assert s["256000 real cells"]["auto/best"] is None
    assert s["3000 x ca1 (nseg=8)"]["auto/best"] == pytest.approx(1.0)
    assert s["100 x ca1 (nseg=1)"]["best fine/interleaved"] == pytest.approx(0.3 / 0.05)
    text = "\n".join(notes)
    assert "auto within 10 % of the best on 2 of 4 cases" in text
    assert "auto's pick failed" in text
    assert "mixed/mono target met" in text and "ratio 1.00" in text
    assert "small-batch target met on 100 x ca1" in text
    assert "large-cell target met" in text


def test_targets_not_met_are_said_so():
    rows = _rows()
    rows[0]["tiled"] = 0.5
    rows[1].update(dhs=0.2, fine=0.25)
    rows[2]["dhs"] = 3.0
    notes = "\n".join(multi.analyse(rows)[1])
    assert "mixed/mono target NOT met" in notes and "small-batch target NOT met" in notes and "large-cell target NOT met" in notes


def test_auto_falls_back_to_interleaved_when_tiled_failed():
    rows = [_row("fig14", "256 binary depth 2", 256, True, {"interleaved": 1.0, "levels": 0.95},
                 depth=0.67)]
    line = multi.analyse(rows)[0]["All cases"][0]
    assert line["auto"] == "tiled" and line["auto/best"] == pytest.approx(1.0 / 0.95)


def test_rewrite_from_json(tmp_path):
    doc = {"machine": {"date": "x"}, "tables": {"All cases": _rows()},
           "notes": ["skipped (budget of 1 s spent): fig14: 256000 binary depth 4"]}
    src = tmp_path / "old.json"
    src.write_text(json.dumps(doc))
    out = tmp_path / "out"
    rc = main(["bench", "multi", "--from-json", str(src), "--out", str(out)])
    assert rc == 0
    again = json.loads((out / "multi.json").read_text())
    assert [r["case"] for r in again["tables"]["All cases"]] == [r["case"] for r in _rows()]
    assert any(n.startswith("skipped") for n in again["notes"])
    assert (out / "multi.png").stat().st_size > 10000
    assert "large-cell target met" in (out / "multi.md").read_text()
    assert any("re-analysed" in n for n in again["notes"])
    # multi.json itself (rows kept as "Raw rows") can be re-analysed again
    assert main(["bench", "multi", "--from-json", str(out / "multi.json"), "--out", str(out),
                 "--no-plots"]) == 0
    # rows of two runs merged by hand: a "Raw rows" table alone
    src.write_text(json.dumps(doc | {"tables": {"Raw rows": _rows()}}))
    assert main(["bench", "multi", "--from-json", str(src), "--out", str(out), "--no-plots"]) == 0
    again = json.loads((out / "multi.json").read_text())
    assert [r["case"] for r in again["tables"]["Raw rows"]] == [r["case"] for r in _rows()]


def test_case_builders_give_solvable_batches():
    quick = cases(True)
    assert {c.figure for c in quick} == {"small-batch", "real-mix", "fig6", "arbor", "fig14",
                                         "limits"}
    full = cases(False)
    assert full[0].figure == "large-cell" and full[-1].n_cells == 256000  # the biggest last
    for s in (random_batch(6, 40, 0.5, seed=2), binary_cells(3, 4, nodes=64),
              random_batch(3, 40, 0.1, mono=True), repeated_shapes(5, 3, 40, 0.5, seed=1),
              chain_cells(3, 50)):
        d, rhs = values(s)
        assert d.shape == rhs.shape == s.values_shape
        x = hinesbatch.plan(s, backend="serial").solve(d, rhs)
        dense = s if not isinstance(s, MonoBatch) else None
        if dense is not None:
            from hinesbatch.tree.random_trees import dense_solve

            np.testing.assert_allclose(x, dense_solve(s, d, rhs), rtol=1e-10, atol=1e-12)
    assert isinstance(binary_cells(4, 2), MonoBatch) and binary_cells(4, 2).cell.n_nodes == 510
    many = repeated_shapes(70, 3, 40, 0.5, seed=4)  # 70 classes of 3 cells each
    shapes = cell_shapes(many, couplings=True)
    assert shapes.n_shapes == 70 and np.all(shapes.counts == 3)
    cable = chain_cells(2, 1000).cell
    assert np.array_equal(cable.parent, np.arange(1000) - 1)


def test_quick_run_needs_a_gpu(tmp_path, capsys):
    ok, why = registry.get("gpu").available()
    if ok:
        pytest.skip("a GPU is present: the --quick run is exercised on the device instead")
    assert main(["bench", "multi", "--quick", "--out", str(tmp_path)]) == 1
    assert "cannot run here" in capsys.readouterr().err


def test_resume_keeps_an_earlier_runs_rows(tmp_path):
    rows = [{"figure": "small-batch", "case": "100 x ca1 (nseg=1)", "cells": 100}]
    for table in ("Raw rows", "All cases"):  # multi.json and multi_rows.json
        path = tmp_path / f"{table}.json"
        path.write_text(json.dumps({"machine": {"date": "2026-11-22T00:00:00+00:00"},
                                    "tables": {table: rows}, "notes": []}))
        kept, date = multi._earlier_rows(path)
        assert kept == rows and date.startswith("2026-11-22")
    other = tmp_path / "hines.json"
    other.write_text(json.dumps({"machine": {}, "tables": {"Copy-bandwidth ceiling": []}}))
    with pytest.raises(ValueError, match="not a bench multi JSON"):
        multi._earlier_rows(other)


def test_large_cell_is_ca1_at_nseg_8():
    from hinesbatch.bench._multi_cases import large_cell

    assert large_cell().n_nodes == 1405


def test_grouped_picks_are_the_one_launch_for_several_classes():
    """auto's ``grouped`` is timed as the one launch on a batch of several classes (falling back
    to the launches per class where the one launch could not take the batch) and as one launch
    per class on one class; the mixed/mono target without sharing leaves both grouped contenders out."""
    mix = _row("real-mix", "256000 real cells", 256000, False,
               {"interleaved": 5.0, "fine-balanced": 3.0, "grouped": 1.3, "grouped-one": 1.2},
               classes=17, mono_equivalent={"cells": 1, "nodes": 1, "best": "tiled", "ms": 1.0})
    cut = _row("real-mix", "2560 real cells", 2560, False,
               {"interleaved": 1.0, "grouped": 0.5}, classes=17)
    one = _row("real-mix", "100 copies", 100, False, {"tiled": 0.2, "grouped": 0.1}, classes=1)
    tables, notes = multi.analyse([mix, cut, one])
    s = {r["case"]: r for r in tables["All cases"]}
    assert s["256000 real cells"]["auto"] == "grouped-one"
    assert s["256000 real cells"]["auto/best"] == pytest.approx(1.0)
    assert s["2560 real cells"]["auto"] == "grouped-one"
    assert s["2560 real cells"]["auto/best"] == pytest.approx(1.0)  # timed as grouped
    assert s["100 copies"]["auto"] == "grouped"
    text = "\n".join(notes)
    assert "mixed/mono target met: 256000 real cells 1.200 ms (grouped-one)" in text
    assert "3.000 ms (fine-balanced), ratio 3.00" in text


def test_auto_picks_read_the_sm_count_from_the_rows():
    """The rows keep resident threads (SMs x 2048): 100 classes are grouped's on the H200's 132
    SMs, and not when the SM count is unknown (auto's 64)."""
    times = {"interleaved": 1.0, "fine-balanced": 0.5, "grouped-one": 0.1}
    row = _row("limits", "100 classes", 1000, False, times, classes=100)
    assert multi.analyse([row])[0]["All cases"][0]["auto"] == "grouped-one"
    row = _row("limits", "100 classes", 1000, False, times, classes=100, resident=None)
    assert multi.analyse([row])[0]["All cases"][0]["auto"] == "fine-balanced"
