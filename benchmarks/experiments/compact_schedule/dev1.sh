#!/usr/bin/env bash
# Thirteenth session, first run: the compact schedule in shared memory ((l, u) per slot,
# entries in one int, staging table in global memory). The tiled/grouped/native/slot GPU
# tests on the change, then ../class_rates/run.py on the code before it (a copy of the
# previous commit's src in .exp_base/, not committed) and on the change, twice alternating.
set -u
export PYTHONUNBUFFERED=1
PYTHONPATH=$PWD/src timeout 260 python3 -m pytest -q -x -p no:cacheprovider tests/gpu \
  -k "tiled or grouped or native or slot" 2>&1 | tail -4
R=benchmarks/experiments/class_rates/run.py
PYTHONPATH=$PWD/.exp_base/src timeout 150 python3 $R $OUT/rows.json base 2>&1 | grep -v Warn
PYTHONPATH=$PWD/src timeout 150 python3 $R $OUT/rows.json ${LABEL:-compact} 2>&1 | grep -v Warn
