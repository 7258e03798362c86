#!/usr/bin/env bash
# run.py (OUT/overlap.json), then Nsight Compute on two tiled solves (OUT/ncu_*.txt; NCU=0
# skips them). With take_tiles.patch applied (git apply), run.py also times tiles taken from
# a counter.
set -u
export PYTHONPATH=$PWD/src
E=benchmarks/experiments/class_overlap
python3 $E/run.py $OUT/overlap.json 2>&1 | tail -60
[[ ${NCU:-1} == 0 ]] && exit 0
for c in "v_e_purk2.CNG.swc 15015" "morph_ca1_n120.swc 256000"; do
  set -- $c
  timeout 200 ncu --clock-control none -k regex:hines_tiled_mono --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section Occupancy --section SchedulerStats \
    --section MemoryWorkloadAnalysis_Tables --section InstructionStats --section LaunchStats \
    python3 $E/profile.py $1 $2 > $OUT/ncu_${1%%.*}_$2.txt 2>&1
  echo "ncu $1 rc $?"
done
