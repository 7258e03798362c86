#!/usr/bin/env bash
# Fourteenth session, second run: (l, u) one value per slot where l == u, on top of the
# centre root. The tiled/grouped/native/slot GPU tests on the change, then
# ../class_rates/run.py on the code before it (.exp_base/: the centre-root commit) and on
# the change, alternating.
set -u
export PYTHONUNBUFFERED=1
PYTHONPATH=$PWD/src timeout 300 python3 -m pytest -q -x -p no:cacheprovider tests/gpu \
  -k "tiled or grouped or native or slot or centre" 2>&1 | tail -4
R=benchmarks/experiments/class_rates/run.py
for run in 1 2; do
  PYTHONPATH=$PWD/.exp_base/src timeout 100 python3 $R $OUT/rows.json centre$run 2>&1 | grep -v Warn
  PYTHONPATH=$PWD/src timeout 100 python3 $R $OUT/rows.json onevalue$run 2>&1 | grep -v Warn
done
