#!/usr/bin/env bash
# Run 2 (sixteenth session): the GPU tests with the one launch as grouped's default, then the
# ladder's controls (every group meets its named barrier equally often) under racecheck, then
# the one-launch case of scripts/racecheck.py under racecheck and memcheck.
set -u
export PYTHONUNBUFFERED=1
D=benchmarks/experiments/racecheck_ladder
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
PYTHONPATH=$PWD/src HB_GPU_ERROR_LOG="$OUT/gpu_errors.json" timeout 430 python3 -m pytest \
    tests/gpu -q -p no:cacheprovider --maxfail=40 -W ignore::UserWarning > "$OUT/pytest.log" 2>&1
echo "GPU tests: exit $?"; tail -4 "$OUT/pytest.log"
timeout 60 compute-sanitizer --tool racecheck --racecheck-report hazard --print-limit 100000 \
    python3 $D/ladder.py 0 64 16 80 119 > "$OUT/ladder_even.log" 2>&1
echo "ladder controls under racecheck: exit $?"
python3 $D/count.py "$OUT/ladder_even.log"
timeout 45 compute-sanitizer --tool racecheck --racecheck-report hazard --print-limit 100000 \
    python3 scripts/racecheck.py "one launch" > "$OUT/one_launch_racecheck.log" 2>&1
echo "one launch under racecheck: exit $?"
python3 $D/count.py "$OUT/one_launch_racecheck.log"
timeout 40 compute-sanitizer --tool memcheck --error-exitcode 9 python3 scripts/racecheck.py \
    "one launch" 2>&1 | tail -3
