#!/usr/bin/env bash
# The change: lu_global.patch applied to the working tree (git apply).
# Twelfth session, third run: quick GPU tests of the tiled kernels, then lug.py.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src
timeout 200 python3 -m pytest -q -x -p no:cacheprovider tests/gpu -k "tiled and not slot" \
  2>&1 | tail -3
timeout 330 python3 benchmarks/experiments/class_rates/lug.py $OUT/lug.json 2>&1 | grep -v Warn
