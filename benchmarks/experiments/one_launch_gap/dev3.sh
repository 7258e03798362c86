#!/usr/bin/env bash
# The change (cell starts from one list, kept in shared memory with the tile; the one launch
# at 768 threads): the tiled/grouped/native/slot GPU tests, then run.py on it and on the code
# before it (a copy of the previous commit's src in .exp_base/, not committed), twice each,
# alternating.
set -u
export PYTHONUNBUFFERED=1
PYTHONPATH=$PWD/src timeout 280 python3 -m pytest -q -x -p no:cacheprovider tests/gpu \
  -k "tiled or grouped or native or slot or centre" 2>&1 | tail -4
R=benchmarks/experiments/one_launch_gap/run.py
for v in starts base starts base; do
  src=$PWD/src; [[ $v == base ]] && src=$PWD/.exp_base/src
  PYTHONPATH=$src timeout 150 python3 $R $OUT/rows.json $v 2>&1 | grep -v Warn
done
