#!/usr/bin/env bash
# Twelfth session, fifth run: racecheck of the one launch with source lines (-lineinfo), as
# committed and with every class at 8 lanes: which lines write and read in each report.
set -u
export PYTHONUNBUFFERED=1 HB_LINEINFO=1
B=benchmarks/experiments/one_launch/racecheck_bisect.py
for v in base width8; do
  timeout 100 compute-sanitizer --tool racecheck --racecheck-report hazard --show-backtrace no \
    python3 $B $v > $OUT/race_lines_$v.log 2>&1
  echo "$v exit $?"; grep -E "RACECHECK SUMMARY|error [0-9]" $OUT/race_lines_$v.log | cut -c1-120
  grep -E "^=+ +(Write|Read) Thread|^=+ +at .*hines_tiled|hines_tiled.cu:[0-9]+" \
    $OUT/race_lines_$v.log | sed -E 's/\(T1 \*.*\)//' | sort | uniq -c | sort -rn | head -20
done
