#!/usr/bin/env bash
# Eleventh session, first run of the slot-order kernel: its GPU tests, then bench hines
# --tiled-only (native = slot order, canonical as before), racecheck and memcheck, and the
# minimal barrier kernels of ../one_launch/racecheck_named.py on blocks of 256-1024 threads.
set -u
export PYTHONPATH=$PWD/src
timeout 300 python3 -m pytest -q -x -p no:cacheprovider tests/gpu/test_tiled_slots_gpu.py \
  tests/gpu/test_gpu_plumbing.py -k "tiled or native or slot" 2>&1 | tail -15
[[ ${PIPESTATUS[0]} == 0 ]] || exit 1
timeout 240 python3 -m hinesbatch.cli bench hines --tiled-only --cells 256000 --out $OUT/h200 2>&1 | tail -4
grep -E "^\| (mono|multi) \| float64 \| tiled" $OUT/h200/*.md
OUT=$OUT scripts/gpu-check racecheck 2>&1 | grep -E "^(ok|BAD)|SUMMARY|exit" 
timeout 120 compute-sanitizer --tool racecheck --racecheck-report hazard python3 \
  benchmarks/experiments/one_launch/racecheck_named.py 256 960 1024 2>&1 | tail -18
