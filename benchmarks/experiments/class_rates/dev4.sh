#!/usr/bin/env bash
# The change: rcp3_unroll.patch applied to the working tree (git apply).
# Twelfth session, fourth run: tiled's sweeps with a 3-FMA reciprocal (hb_rcp3) and steps
# unrolled by 2: quick GPU tests, then run.py on HEAD's code (.exp_base/) and on the change,
# twice each, alternating; then racecheck of the one launch with every class at one width.
set -u
export PYTHONUNBUFFERED=1
PYTHONPATH=$PWD/src timeout 150 python3 -m pytest -q -x -p no:cacheprovider tests/gpu \
  -k "tiled and not slot" 2>&1 | tail -2
R=benchmarks/experiments/class_rates/run.py
for i in 1 2; do
  PYTHONPATH=$PWD/.exp_base/src timeout 100 python3 $R $OUT/rcp3.json base$i 2>&1 | grep -E "mono|real|1681|1569|1001|881"
  PYTHONPATH=$PWD/src timeout 100 python3 $R $OUT/rcp3.json rcp3_$i 2>&1 | grep -E "mono|real|1681|1569|1001|881"
done
B=benchmarks/experiments/one_launch/racecheck_bisect.py
for v in base width8 width16 width32; do
  timeout 60 compute-sanitizer --tool racecheck --racecheck-report hazard python3 $B $v \
    > $OUT/race_$v.log 2>&1
  echo "$v exit $? hazards: $(grep -c 'Race reported' $OUT/race_$v.log) $(grep -E 'RACECHECK SUMMARY|error [0-9]' $OUT/race_$v.log | head -2 | cut -c1-150)"
done
