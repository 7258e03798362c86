#!/usr/bin/env bash
# The change as committed (cell starts from one list, kept in shared memory with the tile, read
# opaquely; the one launch at 768 threads and told at compile time that it has a member
# list): the tiled/grouped GPU tests, then run.py on it and on the code before it (a copy of
# the previous commit's src in .exp_base/, not committed), then the change again (--one).
set -u
export PYTHONUNBUFFERED=1
PYTHONPATH=$PWD/src timeout 250 python3 -m pytest -q -x -p no:cacheprovider tests/gpu \
  -k "tiled or grouped or native or slot or centre" 2>&1 | tail -4
R=benchmarks/experiments/one_launch_gap/run.py
PYTHONPATH=$PWD/src timeout 130 python3 $R $OUT/rows.json starts 2>&1 | grep -v Warn
PYTHONPATH=$PWD/.exp_base/src timeout 130 python3 $R $OUT/rows.json base 2>&1 | grep -v Warn
PYTHONPATH=$PWD/src timeout 80 python3 $R $OUT/rows.json starts2 --one 2>&1 | grep -v Warn
