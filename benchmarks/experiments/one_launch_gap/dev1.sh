#!/usr/bin/env bash
# run.py on the committed code, then Nsight Compute on the 1,569-node class (60508 cells)
# solved by tiled, by grouped per class and by grouped in one launch (OUT/ncu_*.txt).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src
E=benchmarks/experiments/one_launch_gap
timeout 300 python3 $E/run.py $OUT/rows.json head 2>&1 | grep -v Warn
for s in tiled grouped one_launch; do
  timeout 120 ncu --clock-control none -k regex:hines_tiled --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section Occupancy --section SchedulerStats \
    --section MemoryWorkloadAnalysis_Tables --section InstructionStats --section LaunchStats \
    --section SourceCounters \
    python3 $E/profile.py 10-2012-02-09-001.CNG.swc 60508 $s > $OUT/ncu_1569_$s.txt 2>&1
  echo "ncu $s rc $?"
done
