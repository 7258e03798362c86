#!/usr/bin/env bash
# As dev4.sh, with hines_tiled_mono instantiated apart for member lists (LISTED), so that
# `tiled`'s kernel carries none of that code: the GPU tests, then run.py on the change and on
# the code before it (.exp_base/src), then the change again (--one).
set -u
export PYTHONUNBUFFERED=1
PYTHONPATH=$PWD/src timeout 250 python3 -m pytest -q -x -p no:cacheprovider tests/gpu \
  -k "tiled or grouped or native or slot or centre" 2>&1 | tail -3
R=benchmarks/experiments/one_launch_gap/run.py
PYTHONPATH=$PWD/src timeout 130 python3 $R $OUT/rows.json listed 2>&1 | grep -v Warn
PYTHONPATH=$PWD/.exp_base/src timeout 130 python3 $R $OUT/rows.json base 2>&1 | grep -v Warn
PYTHONPATH=$PWD/src timeout 70 python3 $R $OUT/rows.json listed2 --one 2>&1 | grep -v Warn
