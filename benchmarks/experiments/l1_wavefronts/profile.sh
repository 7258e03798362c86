#!/usr/bin/env bash
# Nsight Compute on `tiled` solves (benchmarks/experiments/class_overlap/profile.py): where the
# L1 data pipe's wavefronts go (shared vs global, loads vs stores), bank conflicts, stalls.
# OUT/ncu_<cell>_<count>.txt per case. Run from the repository root on a GPU machine.
set -u
export PYTHONPATH=$PWD/src
P=benchmarks/experiments/class_overlap/profile.py
M="regex:l1tex__data_pipe_lsu_wavefronts.*\.sum$,regex:l1tex__data_bank_conflicts_pipe_lsu.*\.sum$"
M+=",regex:l1tex__t_requests_pipe_lsu_mem_global.*\.sum$,regex:l1tex__t_sectors_pipe_lsu_mem_global.*\.sum$"
M+=",regex:l1tex__m_.*\.sum$,l1tex__throughput.avg.pct_of_peak_sustained_active"
M+=",l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_active,gpu__time_duration.sum"
M+=",regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$"
M+=",regex:smsp__inst_executed_op_.*\.sum$,smsp__inst_executed.sum,dram__bytes.sum"
for c in ${CASES:-"morph_ca1_n120.swc 256000" "v_e_purk2.CNG.swc 15015"}; do
  set -- $c
  timeout 240 ncu --clock-control none -k regex:hines_tiled_mono --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --metrics "$M" \
    python3 $P $1 $2 > $OUT/ncu_${1%%.*}_$2.txt 2>&1
  echo "ncu $1 $2 rc $?"
done
