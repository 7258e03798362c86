"""The GPU backend's host streaming, CPU side: chunk ranges and the chunks' structures."""
from __future__ import annotations

import numpy as np
import pytest

from hinesbatch.solvers.gpu.streaming import _cell_offsets, chunk_ranges
from hinesbatch.tree import random_trees as rt
from hinesbatch.tree.structure import MonoBatch


def brute_force(costs, room):
    """Reference: grow each chunk one cell at a time while it fits."""
    out, a = [], 0
    while a < len(costs):
        b, total = a, 0
        while b < len(costs) and total + costs[b] <= room:
            total += costs[b]
            b += 1
        out.append((a, b))
        a = b
    return out


@pytest.mark.parametrize("seed", range(20))
def test_chunk_ranges_cover_the_cells_greedily_within_room(seed):
    rng = np.random.default_rng(seed)
    costs = rng.integers(1, 200, size=int(rng.integers(1, 300)))
    room = int(rng.integers(costs.max(), costs.sum() + 2))
    ranges = chunk_ranges(costs, room)
    assert ranges == brute_force(costs.tolist(), room)
    assert ranges[0][0] == 0 and ranges[-1][1] == costs.size
    assert all(b0 == a1 for (_, b0), (a1, _) in zip(ranges, ranges[1:]))
    assert all(a < b and costs[a:b].sum() <= room for a, b in ranges)
    # maximal: the next cell would not have fitted
    assert all(costs[a:b + 1].sum() > room for a, b in ranges[:-1])


def test_chunk_ranges_edge_cases():
    assert chunk_ranges(np.zeros(0, dtype=np.int64), 10) == []
    assert chunk_ranges([5, 5, 5, 5], 10) == [(0, 2), (2, 4)]
    assert chunk_ranges([5, 5, 5, 5], 9) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert chunk_ranges([5, 5, 5, 5], 100) == [(0, 4)]
    with pytest.raises(ValueError, match="cell 2 alone needs 11 bytes"):
        chunk_ranges([5, 5, 11, 5], 10)


def test_cell_offsets_of_both_kinds_of_batch():
    rng = np.random.default_rng(3)
    batch = rt.random_batch(9, rng=rng, max_nodes=30)
    assert np.array_equal(_cell_offsets(batch), batch.cell_offsets)
    mono = MonoBatch(rt.random_tree(12, rng=rng), 7)
    assert np.array_equal(_cell_offsets(mono), np.arange(8) * 12)


# -- the streamer and Plan.solve's hook, on the CPU: a stand-in device backend ------------------
class _DeviceArray(np.ndarray):
    """A host array playing a device array: ``get()`` copies it back, as CuPy's does."""

    def get(self):
        return np.array(self)


class _FakeDevice:
    """Stands in for the CuPy module: ``asarray`` copies, ``cuda.Device().id`` is 0."""

    ndarray = _DeviceArray

    @staticmethod
    def asarray(a):
        return np.array(a).view(_DeviceArray)

    class cuda:  # noqa: N801
        class Device:
            id = 0


class _FakeStrategy:
    def structure_bytes(self):
        return 0

    def scratch_bytes(self):
        return 0


class _FakeGpu:
    """The parts of GpuBackend the streamer uses; solves with the serial backend."""

    xp = _FakeDevice
    chunks_solved: list = []

    def __init__(self, structure, *, dtype, strategy="tiled", devices=None, max_bytes=None,
                 check_pivots=True, **options):
        from hinesbatch.solvers.gpu.streaming import HostStreamer

        self.structure, self.dtype, self.max_bytes = structure, np.dtype(dtype), max_bytes
        self.strategy, self.devices, self.check_pivots = strategy, devices, check_pivots
        self._parts = [type("P", (), {"strategy": _FakeStrategy()})()]
        self._streamer = HostStreamer(self, options)

    def _budget(self, device):
        return self.max_bytes

    def solve(self, d, rhs):
        import hinesbatch

        _FakeGpu.chunks_solved.append(self.structure.n_cells)
        rhs[...] = hinesbatch.plan(self.structure, backend="serial").solve(np.asarray(d), np.asarray(rhs))

    def streams_host(self):
        return self._streamer.needed()

    def solve_host(self, d, rhs, out):
        return self._streamer.solve(d, rhs, out)


def _values(structure, rng):
    d = rng.uniform(4.0, 5.0, structure.values_shape)
    return d, rng.standard_normal(structure.values_shape)


@pytest.mark.parametrize("kind", ("mono", "multi"))
def test_plan_streams_numpy_values_through_a_device_backend_in_chunks(kind):
    import hinesbatch
    from hinesbatch.errors import SingularSystemError

    rng = np.random.default_rng(5)
    structure = (MonoBatch(rt.random_tree(20, rng=rng), 50) if kind == "mono"
                 else rt.random_batch(50, rng=rng, max_nodes=30))
    d, rhs = _values(structure, rng)
    ref = hinesbatch.plan(structure, backend="serial").solve(d, rhs)
    plan = hinesbatch.plan(structure, backend="serial")
    fake = _FakeGpu(structure, dtype=np.float64, max_bytes=2 * 8 * structure.n_nodes // 5)
    plan._impl[np.dtype(np.float64)] = fake
    _FakeGpu.chunks_solved = []
    d0, rhs0 = d.copy(), rhs.copy()
    x = plan.solve(d, rhs)
    assert len(_FakeGpu.chunks_solved) >= 5 and sum(_FakeGpu.chunks_solved) == structure.n_cells
    assert np.array_equal(x, ref) and x is not rhs
    assert np.array_equal(d, d0) and np.array_equal(rhs, rhs0)
    r = rhs.copy()
    assert plan.solve(d, r, overwrite=True) is r and np.array_equal(r, ref)
    # a zero pivot in the last chunk is named by the batch's cell
    c = structure.n_cells - 2
    bad = d.copy()
    cell = structure.cell if kind == "mono" else structure.cell(c)
    leaf = int(np.setdiff1d(np.arange(cell.n_nodes), cell.parent[cell.parent >= 0])[-1])
    if kind == "mono":  # a leaf's pivot is its d
        bad[c, leaf] = 0.0
    else:
        bad[structure.cell_offsets[c] + leaf] = 0.0
    with pytest.raises(SingularSystemError) as serial:
        hinesbatch.plan(structure, backend="serial").solve(bad, rhs)
    with pytest.raises(SingularSystemError) as streamed:
        plan.solve(bad, rhs)
    assert (streamed.value.cell, streamed.value.node) == (serial.value.cell, serial.value.node)
    assert streamed.value.cell == c and f"at cell {c}," in str(streamed.value)
    bad[...] = np.inf
    with pytest.raises(ValueError, match="d must be finite"):
        plan.solve(bad, rhs)
