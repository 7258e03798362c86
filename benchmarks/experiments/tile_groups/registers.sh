#!/usr/bin/env bash
# Time registers.py on the code before groups (base_src/: `git archive bb27458 src | tar -x`,
# renamed) and on register-bound variants of the current kernel, made with sed:
#   A  as committed (__launch_bounds__(512, V > 1 ? 1 : 2))   B  (512, 3)   C  (512)
# (D, __syncthreads for one-group blocks, was a hand edit; its result is in registers/.)
set -u
E=benchmarks/experiments/tile_groups
K=src/hinesbatch/solvers/gpu/kernels/hines_tiled.cu
cp $K /tmp/hines_tiled.keep
[[ -d $E/base_src ]] && PYTHONPATH=$PWD/$E/base_src python3 $E/registers.py $OUT/reg_base.json base
declare -A BOUND=([A]="512, V > 1 ? 1 : 2" [B]="512, V > 1 ? 1 : 3" [C]="512")
for v in ${VARIANTS:-A B C}; do
  sed "s/__launch_bounds__(512, V > 1 ? 1 : 2)/__launch_bounds__(${BOUND[$v]})/" /tmp/hines_tiled.keep > $K
  PYTHONPATH=$PWD/src python3 $E/registers.py $OUT/reg_$v.json $v
done
cp /tmp/hines_tiled.keep $K
