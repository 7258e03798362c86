"""The ``strategy="auto"`` rule of the GPU backend (no GPU needed: it is a pure function)."""
import numpy as np
import pytest

from hinesbatch.solvers.gpu.auto import SMALL_FRACTION, auto_strategy, choose
from hinesbatch.solvers.gpu.backend import STRATEGIES
from hinesbatch.tree import random_trees as rt
from hinesbatch.tree.structure import HinesStructure, MonoBatch

H200 = 132 * 2048  # resident threads of an H200


def test_shared_structure_gets_tiled_at_every_size():
    for n in (1, 100, 3000, 256000, 10**7):
        name, why = auto_strategy(MonoBatch(rt.chain(5, rng=0), n), resident_threads=H200)
        assert name == "tiled" and "MonoBatch" in why


def test_per_cell_batches_get_dhs_when_small_and_tiled_when_they_fill_the_device():
    limit = int(SMALL_FRACTION * H200)
    cells = HinesStructure.concatenate([rt.random_tree(7, rng=1), rt.chain(3, rng=2)])
    name, why = auto_strategy(cells, resident_threads=H200)
    assert name == "dhs" and "2 cells" in why
    assert choose(mono=False, n_cells=limit - 1, resident_threads=H200)[0] == "dhs"
    name, why = choose(mono=False, n_cells=limit, resident_threads=H200)
    assert name == "tiled" and str(limit) in why
    assert choose(mono=False, n_cells=256000, resident_threads=H200)[0] == "tiled"
    # a smaller device reaches "fills the device" sooner
    assert choose(mono=False, n_cells=25600, resident_threads=20 * 2048)[0] == "tiled"


def test_every_pick_is_a_registered_strategy():
    for mono in (True, False):
        for n in np.unique(np.logspace(0, 6, 25).astype(int)):
            assert choose(mono=mono, n_cells=int(n), resident_threads=H200)[0] in STRATEGIES


@pytest.mark.parametrize("bad", [0, -5, True])
def test_bad_resident_threads_is_refused(bad):
    with pytest.raises(ValueError, match="resident_threads"):
        choose(mono=False, n_cells=10, resident_threads=bad)
