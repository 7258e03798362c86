#!/usr/bin/env bash
# The change: skip_dummies.patch applied to the working tree (git apply).
# Twelfth session, first run: the tiled/grouped GPU tests on the change, then run.py on the
# code before it (a copy of HEAD's src in .exp_base/, not committed) and on the change.
set -u
export PYTHONUNBUFFERED=1
PYTHONPATH=$PWD/src timeout 240 python3 -m pytest -q -x -p no:cacheprovider tests/gpu \
  -k "tiled or grouped or native or slot" 2>&1 | tail -4
R=benchmarks/experiments/class_rates/run.py
PYTHONPATH=$PWD/.exp_base/src timeout 150 python3 $R $OUT/rows.json base 2>&1 | grep -v Warn
PYTHONPATH=$PWD/src timeout 240 python3 $R $OUT/rows.json skip --widths 2>&1 | grep -v Warn
