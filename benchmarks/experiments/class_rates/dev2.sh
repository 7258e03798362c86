#!/usr/bin/env bash
# Twelfth session, second run: each class at 4x its copies (tiled, and grouped in one launch),
# and compute-sanitizer's synccheck on scripts/racecheck.py (every shared-memory kernel, the
# one launch included): does it find a misuse of the barriers where racecheck reports hazards?
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src
timeout 300 python3 benchmarks/experiments/class_rates/run.py $OUT/scale.json scale --scale \
  2>&1 | grep -v Warn
timeout 250 compute-sanitizer --tool synccheck --error-exitcode 9 python3 scripts/racecheck.py \
  > $OUT/synccheck.log 2>&1
echo "synccheck exit $?"
grep -E "^(ok|BAD)|SUMMARY|ERROR" $OUT/synccheck.log | head -40
