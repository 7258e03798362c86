"""The base of the GPU strategies: device uploads, layouts and the kernel-launch helpers.

Every strategy works on a :class:`~..device_parts.Part`. It has a
*native layout* (where it wants the values) and two entry points:

* ``solve_canonical(d, rhs, pivots, stream)``: values in the canonical order (a view of the
  caller's arrays); layouts other than the canonical one go through a device scratch buffer
  in chunks of cells (transpose in, solve, transpose out), sized by the memory budget;
* ``solve_native(d, rhs, pivots, stream)``: values already in the native layout (no transposes).

``pivots`` is ``(flag, values)``: the part's failure flag (uint64[1]) and one pivot slot per
cell (see kernels/hines_common.cuh).
"""
from __future__ import annotations

import numpy as np

from ..device import cupy_module
from ..device_parts import Part

__all__ = ["NULL", "Strategy", "allow_smem", "call_kernel", "i32", "i64"]

NULL = np.uint64(0)  # a null pointer argument


def i32(x) -> np.int32:
    """A kernel argument of type ``int``."""
    return np.int32(int(x))


def i64(x) -> np.int64:
    """A kernel argument of type ``long long``."""
    return np.int64(int(x))


def call_kernel(fn, grid, block, args, stream, shared_mem: int = 0) -> None:
    """Launch ``fn`` on ``stream`` (CuPy launches on the current stream)."""
    with stream:
        fn(grid, block, args, shared_mem=shared_mem)


def allow_smem(fn, nbytes: int, *, carveout: bool = False) -> None:
    """Raise a kernel's dynamic shared-memory limit when it needs more than the 48 KB default;
    ``carveout``: ask for the largest shared-memory part of L1 (kernels that stage in it)."""
    if nbytes > 48 * 1024 and fn.max_dynamic_shared_size_bytes < nbytes:
        fn.max_dynamic_shared_size_bytes = nbytes
    if carveout and fn.preferred_shared_memory_carveout != 100:
        fn.preferred_shared_memory_carveout = 100



class Strategy:
    """Base class: device uploads, transposes and the chunked canonical path.

    Subclasses set ``name`` and ``native_is_canonical`` and implement ``solve_native`` and
    ``solve_canonical``.
    """

    name = ""
    native_is_canonical = False
    options: tuple[str, ...] = ()

    def __init__(self, part: Part, dtype, device: int, options: dict, budget: int):
        self.part = part
        self.dtype = np.dtype(dtype)
        self.device = device
        self._dev: dict | None = None  # device arrays, uploaded on first use
        self._scratch = None

    # -- memory ------------------------------------------------------------------------------
    def structure_bytes(self) -> int:
        """Device bytes of the structure arrays this strategy keeps resident."""
        return 0

    def scratch_bytes(self) -> int:
        """Device bytes of the layout scratch of the canonical path (0: works in place)."""
        return 0

    def _arrays(self) -> dict:
        if self._dev is None:
            cupy = cupy_module()
            uploaded: dict[int, object] = {}  # one device copy per host array (l is u: same)
            with cupy.cuda.Device(self.device):
                self._dev = {}
                for key, value in self._host_arrays().items():
                    if id(value) not in uploaded:
                        uploaded[id(value)] = cupy.asarray(value)
                    self._dev[key] = uploaded[id(value)]
        return self._dev

    def _host_arrays(self) -> dict:
        return {}

    def _shared_cell_arrays(self) -> dict:
        """A shared structure's one cell as the kernels read it: parent (int32), u, l."""
        c = self.part.cell
        return {"parent": c.parent.astype(np.int32), "u": c.u.astype(self.dtype),
                "l": c.lower.astype(self.dtype)}

    # -- layouts -----------------------------------------------------------------------------
    def native_shape(self) -> tuple[int, ...]:
        return self.part.values_shape

    def to_native(self, a, stream):
        """A new array in the native layout from this part's canonical values ``a``."""
        return a.copy()

    def from_native(self, a, stream):
        """A new canonical array of this part from native values ``a``."""
        return a.copy()

    def describe(self) -> str:
        return self.name
