#!/usr/bin/env bash
# run.py on: base (base_src/: `git archive c0a0e3e src | tar -x`, renamed; one tile per group
# and block), persistent (the kernel's staggered start removed with sed), staggered (as
# committed). OUT: where the JSON goes.
set -u
E=benchmarks/experiments/staggered_groups
K=src/hinesbatch/solvers/gpu/kernels/hines_tiled.cu
[[ -d $E/base_src ]] && PYTHONPATH=$PWD/$E/base_src python3 $E/run.py $OUT/base.json base
cp $K /tmp/hines_tiled.keep
sed "s/if (GROUPS \&\& g > 0 \&\& tile < n_tiles) {/if (false) {/" /tmp/hines_tiled.keep > $K
grep -q "if (false) {" $K && PYTHONPATH=$PWD/src python3 $E/run.py $OUT/persistent.json persistent
cp /tmp/hines_tiled.keep $K
PYTHONPATH=$PWD/src python3 $E/run.py $OUT/staggered.json staggered
