#!/usr/bin/env bash
# Run 4 (sixteenth session): tiled's groups rule counting rounds of resident blocks, A/B on
# the 2560 binary cells; `bench multi` on the four cases whose arrangements it changes (the
# others kept from runs 1 and 3); the tiled and grouped GPU tests.
set -u
export PYTHONUNBUFFERED=1
R=benchmarks/experiments/racecheck_ladder/results
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
PYTHONPATH=src timeout 90 python3 benchmarks/experiments/racecheck_ladder/ab_groups.py 2>&1 \
    | tee "$OUT/ab_groups.log"
PYTHONPATH=src timeout 150 python3 -m hinesbatch.cli bench multi --budget 120 \
    --resume $R/run4_kept.json --out "$OUT/h100" > "$OUT/multi4.log" 2>&1
echo "bench multi: exit $?"
grep -v "^{" "$OUT/multi4.log" | tail -12
PYTHONPATH=$PWD/src timeout 240 python3 -m pytest tests/gpu/test_grouped_gpu.py \
    tests/gpu/test_gpu_accuracy.py tests/gpu/test_tiled_slots_gpu.py -k "tiled or grouped" -q \
    -p no:cacheprovider -W ignore::UserWarning > "$OUT/pytest4.log" 2>&1
echo "tiled/grouped GPU tests: exit $?"; tail -2 "$OUT/pytest4.log"
