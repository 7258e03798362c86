#!/usr/bin/env bash
# Run 1 (sixteenth session): racecheck on the ladder of small kernels, then `bench multi`
# with grouped's one launch among the contenders. On the device: OUT=... bash dev1.sh
set -u
export PYTHONUNBUFFERED=1
D=benchmarks/experiments/racecheck_ladder
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
compute-sanitizer --version | tail -1
timeout 100 compute-sanitizer --tool racecheck --racecheck-report hazard --print-limit 100000 \
    python3 $D/ladder.py > "$OUT/ladder_racecheck.log" 2>&1
echo "ladder under racecheck: exit $?"
python3 $D/count.py "$OUT/ladder_racecheck.log"
PYTHONPATH=src timeout 470 python3 -m hinesbatch.cli bench multi --budget 300 --out "$OUT/h200" \
    > "$OUT/multi.log" 2>&1
echo "bench multi: exit $?"
grep -v "^{" "$OUT/multi.log" | tail -20
