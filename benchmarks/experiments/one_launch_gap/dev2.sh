#!/usr/bin/env bash
# The one launch compiled for blocks of at most 768 and 512 threads (80 and 128 registers:
# copies of src in .exp_768/ and .exp_512/, not committed) against the committed code, then
# Nsight Compute's stall reasons per issued instruction for the 1,569-node class solved by
# tiled and by grouped per class (OUT/stalls_*.txt).
set -u
export PYTHONUNBUFFERED=1
E=benchmarks/experiments/one_launch_gap
for v in head 768 512 head; do
  src=$PWD/src; [[ $v != head ]] && src=$PWD/.exp_$v/src
  PYTHONPATH=$src timeout 150 python3 $E/run.py $OUT/rows.json $v --one 2>&1 | grep -v Warn
done
export PYTHONPATH=$PWD/src
for s in tiled grouped; do
  timeout 100 ncu --clock-control none -k regex:hines_tiled --launch-skip 1 --launch-count 1 \
    --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
    python3 $E/profile.py 10-2012-02-09-001.CNG.swc 60508 $s > $OUT/stalls_1569_$s.txt 2>&1
  echo "ncu $s rc $?"
done
