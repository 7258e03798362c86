#!/usr/bin/env bash
# Eleventh session, final check: the GPU and unit tests, then racecheck on the minimal barrier
# kernels of ../one_launch/racecheck_named.py with blocks of 256, 960 and 1024 threads.
set -u
export PYTHONPATH=$PWD/src
OUT=$OUT HB_TESTS="tests/gpu tests/unit" scripts/gpu-check tests 2>&1 | tail -12
timeout 120 compute-sanitizer --tool racecheck --racecheck-report hazard python3 \
  benchmarks/experiments/one_launch/racecheck_named.py 256 960 1024 > $OUT/racecheck_named.log 2>&1
grep -E "threads|SUMMARY" $OUT/racecheck_named.log
grep -A3 Potential $OUT/racecheck_named.log | head -12
