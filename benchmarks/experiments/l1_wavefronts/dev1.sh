#!/usr/bin/env bash
# Eleventh session, first run: profile.sh (Nsight Compute), then racecheck_bisect.py variants.
export PYTHONPATH=$PWD/src
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
OUT=$OUT bash benchmarks/experiments/l1_wavefronts/profile.sh
for v in base local local_nostagger; do
  timeout 150 compute-sanitizer --tool racecheck --racecheck-report hazard python3 benchmarks/experiments/one_launch/racecheck_bisect.py $v > $OUT/race_$v.log 2>&1
  echo "$v rc $?"; grep -E "error|RACECHECK SUMMARY|hazard" $OUT/race_$v.log | tail -3
done
