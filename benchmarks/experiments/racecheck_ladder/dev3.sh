#!/usr/bin/env bash
# Run 3 (sixteenth session): the cases of `bench multi` that run 1's budget skipped, on the
# same kind of card, keeping run 1's rows (--resume).
set -u
export PYTHONUNBUFFERED=1
R=benchmarks/experiments/racecheck_ladder/results
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
PYTHONPATH=src timeout 560 python3 -m hinesbatch.cli bench multi --budget 420 \
    --resume $R/run1_multi.json --out "$OUT/h100" > "$OUT/multi3.log" 2>&1
echo "bench multi: exit $?"
grep -v "^{" "$OUT/multi3.log" | tail -20
