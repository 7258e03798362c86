#!/usr/bin/env bash
# Fourteenth session: `tiled` eliminating each cell from its centre where that takes fewer
# steps. The tiled/grouped/native/slot GPU tests on the change, then ../class_rates/run.py on
# the code before it (a copy of the previous commit's src in .exp_base/, not committed) and
# on the change (with every width of each class), then the code before once more.
set -u
export PYTHONUNBUFFERED=1
PYTHONPATH=$PWD/src timeout 300 python3 -m pytest -q -x -p no:cacheprovider tests/gpu \
  -k "tiled or grouped or native or slot or centre" 2>&1 | tail -4
R=benchmarks/experiments/class_rates/run.py
PYTHONPATH=$PWD/.exp_base/src timeout 150 python3 $R $OUT/rows.json base 2>&1 | grep -v Warn
PYTHONPATH=$PWD/src timeout 240 python3 $R $OUT/rows.json centre --widths 2>&1 | grep -v Warn
PYTHONPATH=$PWD/.exp_base/src timeout 150 python3 $R $OUT/rows.json base2 2>&1 | grep -v Warn
