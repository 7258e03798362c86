"""Plan once, solve many times: the one interface in front of every Hines backend."""
from __future__ import annotations

import numpy as np

from ..array_modules import array_module
from ..tree.structure import HinesStructure, MonoBatch, as_batch
from .backend_plans import BackendPlan
from .values import (SUPPORTED_DTYPES, as_values, deliver, may_alias, result_dtype, scratch,
                     to_module)
from .values import check_finite as check_finite_values

__all__ = ["Plan", "plan", "solve"]


class Plan(BackendPlan):
    """A structure analysed once for a backend; :meth:`solve` is the per-step hot path.

    Create with :func:`hinesbatch.plan`. The backend's preparation (orderings, layouts,
    compiled kernels, device buffers) happens per dtype on first use and is cached.

    One plan may be solved from several threads at once: the CPU backends keep no state that
    a solve writes, the GPU backends let calls take turns. ``copy.deepcopy`` and ``pickle``
    plan again from the (validated) structure; no backend state is copied.
    """

    kind = "hines"

    def __init__(self, structure, backend: str = "auto", **options):
        self.structure: HinesStructure | MonoBatch = as_batch(structure)
        super().__init__(self.structure, backend, options)

    @classmethod
    def _from_subject(cls, subject, backend: str, options: dict) -> Plan:
        return cls(subject, backend, **options)

    def describe(self) -> str:
        """What was planned: structure, backend, the reason for the choice, backend details."""
        s = self.structure
        if isinstance(s, MonoBatch):
            shape = f"mono-morphology batch: {s.n_cells} cells x {s.nodes_per_cell} nodes (shared structure)"
        else:
            shape = f"batch of {s.n_cells} cells, {s.n_nodes} nodes in all (per-cell structure)"
        impl = self._implementation(np.dtype(np.float64))
        return f"{shape}; backend {self.backend_name} ({self.note}); {impl.describe()}"

    def __repr__(self) -> str:
        return f"<hinesbatch.Plan {self.describe()}>"

    def solve(self, d, rhs, *, overwrite: bool = False, check_finite: bool = True):
        """Solve the batch for diagonal ``d`` and right-hand side ``rhs``.

        Parameters
        ----------
        d, rhs : array_like, shape ``structure.values_shape``
            ``(n_nodes,)`` for a :class:`HinesStructure`, ``(n_cells, n_nodes)`` for a
            :class:`MonoBatch`. NumPy or CuPy arrays; float32 if both are float32, else float64.
        overwrite : bool
            Allow the solver to use ``d`` and ``rhs`` as scratch; the solution is then written
            into ``rhs`` when its dtype and memory allow it (and returned). With ``False``
            (default) the inputs are never modified.
        check_finite : bool
            Check that the inputs hold only finite numbers (``ValueError`` naming the argument
            and location otherwise). Disabling it saves a pass over the data.

        Returns
        -------
        x : array of ``rhs``'s kind (NumPy in, NumPy out; CuPy in, CuPy out)

        Raises
        ------
        SingularSystemError
            A zero or non-finite pivot; the error names the cell and node.
        """
        if overwrite and not check_finite:
            impl = self._ready(d, rhs)
            if impl is not None:  # the time loop's case: nothing to convert, check or copy
                impl.solve(d, rhs)
                return rhs
        in_xp = array_module(d, rhs)
        d_in, rhs_in = d, rhs
        dtype = result_dtype(in_xp.asarray(d), in_xp.asarray(rhs))
        impl = self._implementation(dtype)
        xp = impl.xp
        shape = self.structure.values_shape
        offsets = None if isinstance(self.structure, MonoBatch) else self.structure.cell_offsets
        if in_xp is np and xp is not np and getattr(impl, "streams_host", _never)():
            return self._solve_streamed(impl, d, rhs, dtype, offsets, overwrite=overwrite,
                                        check_finite=check_finite)
        if xp is not in_xp:  # host <-> device transfer: fresh arrays, nothing aliases the input
            d, rhs = to_module(in_xp.asarray(d), xp), to_module(in_xp.asarray(rhs), xp)
        d_w = as_values(xp, d, "d", shape, dtype)
        rhs_w = as_values(xp, rhs, "rhs", shape, dtype)
        if check_finite:
            check_finite_values(xp, d_w, "d", offsets)
            check_finite_values(xp, rhs_w, "rhs", offsets)
        # the backend destroys d and writes x over rhs: protect the caller's arrays unless
        # overwrite, and never hand it one buffer as both d and rhs
        rhs_w = scratch(xp, rhs_w, rhs_in, overwrite=overwrite)
        d_w = scratch(xp, d_w, d_in, overwrite=overwrite, avoid=(rhs_w,))
        impl.solve(d_w, rhs_w)
        return deliver(rhs_w, xp, in_xp, rhs_in, overwrite=overwrite)

    def _solve_streamed(self, impl, d, rhs, dtype, offsets, *, overwrite: bool,
                        check_finite: bool):
        """NumPy values too large to move to the backend's device whole: validated on the host,
        then streamed by the backend (``impl.solve_host(d, rhs, out)``, which only reads ``d``
        and ``rhs``). ``x`` goes into the caller's ``rhs`` under the rules of :func:`deliver`."""
        shape = self.structure.values_shape
        d_h = as_values(np, d, "d", shape, dtype)
        rhs_h = as_values(np, rhs, "rhs", shape, dtype)
        if check_finite:
            check_finite_values(np, d_h, "d", offsets)
            check_finite_values(np, rhs_h, "rhs", offsets)
        into_rhs = (overwrite and isinstance(rhs, np.ndarray) and rhs.dtype == dtype
                    and rhs.shape == shape and rhs.flags.writeable)
        return impl.solve_host(d_h, rhs_h, rhs if into_rhs else np.empty(shape, dtype))

    # -- values kept in the backend's layout ---------------------------------------------------
    def to_layout(self, a, dtype=None):
        """Canonical values rearranged into the backend's *native layout*, for :meth:`solve_layout`.

        A time loop that keeps its state in the native layout skips the reordering that
        :meth:`solve` does on every call. On the CPU backends the native layout is the
        canonical order itself; on the GPU backend it is the strategy's (interleaved blocks,
        slot order, ...), one array per device part.

        Parameters
        ----------
        a : array_like, shape ``structure.values_shape``
            Values in the canonical order (NumPy or CuPy).
        dtype : {None, numpy.float32, numpy.float64}
            The dtype of the plan to solve with; by default ``a``'s (float32 if ``a`` is
            float32, else float64).

        Returns
        -------
        native : array or list of arrays
            A new array (NumPy on the CPU backends, CuPy on the GPU backend) of ``dtype`` in
            the native layout, C-contiguous; a list of one such array per device when the GPU
            plan spans several devices.

        Raises
        ------
        ValueError
            ``a`` does not have the structure's ``values_shape``.
        """
        in_xp = array_module(a)
        dtype = result_dtype(in_xp.asarray(a)) if dtype is None else _solver_dtype(dtype)
        impl = self._implementation(dtype)
        xp = impl.xp
        a = to_module(in_xp.asarray(a), xp) if xp is not in_xp else a
        values = as_values(xp, a, "a", self.structure.values_shape, dtype)
        if hasattr(impl, "to_layout"):
            return impl.to_layout(values)
        return values.copy() if may_alias(xp, values, a) else values

    def from_layout(self, native):
        """Values in the backend's native layout (as :meth:`to_layout` returns them) back in
        the canonical order.

        Parameters
        ----------
        native : array or list of arrays
            As :meth:`to_layout` or :meth:`solve_layout` return them.

        Returns
        -------
        values : array, shape ``structure.values_shape``
            A new array in the canonical order, of ``native``'s dtype and array module (CuPy
            on the GPU backend, on the first device part's device).
        """
        first = native[0] if isinstance(native, (list, tuple)) else native
        impl = self._implementation(_solver_dtype(first.dtype))
        if hasattr(impl, "from_layout"):
            return impl.from_layout(native)
        return as_values(impl.xp, native, "native", self.structure.values_shape,
                         first.dtype).copy()

    def solve_layout(self, d, rhs):
        """Solve values kept in the native layout, in place: ``x`` is written over ``rhs``.

        The hot path of a time loop: no reordering, no copies, no finiteness check. ``d`` is
        used as scratch (it holds the pivots afterwards).

        Parameters
        ----------
        d, rhs : array or list of arrays
            Two distinct, writeable arrays as :meth:`to_layout` returns them, of one dtype.

        Returns
        -------
        rhs : array or list of arrays
            ``rhs`` itself, now holding the solution in the native layout.

        Raises
        ------
        SingularSystemError
            A zero or non-finite pivot; the error names the cell and node.
        ValueError, TypeError
            ``d`` or ``rhs`` is not an array of the layout (shape, dtype, order, array kind).
        """
        first = rhs[0] if isinstance(rhs, (list, tuple)) else rhs
        impl = self._implementation(_solver_dtype(first.dtype))
        if hasattr(impl, "solve_layout"):
            return impl.solve_layout(d, rhs)
        shape = self.structure.values_shape
        for name, a in (("d", d), ("rhs", rhs)):
            if (not isinstance(a, impl.xp.ndarray) or a.shape != shape or a.dtype != first.dtype
                    or not a.flags.c_contiguous or not a.flags.writeable):
                raise ValueError(f"{name} must be a writeable C-contiguous {impl.xp.__name__} "
                                 f"array of {first.dtype} and shape {shape} (as to_layout "
                                 f"returns), got {type(a).__name__} "
                                 f"{getattr(a, 'dtype', '')} {getattr(a, 'shape', '')}")
        if impl.xp.may_share_memory(d, rhs):
            raise ValueError("d and rhs must not share memory")
        impl.solve(d, rhs)
        return rhs

    def _ready(self, d, rhs):
        """The backend for ``d`` and ``rhs`` if they can go to it as they are, else ``None``.

        As they are: two distinct, non-overlapping, writeable, C-contiguous arrays of the
        backend's array type and of one dtype it was already prepared for, of the right shape.
        """
        impl = self._impl.get(getattr(d, "dtype", None))
        if impl is None:
            return None
        kind = impl.xp.ndarray
        if not (type(d) is kind and type(rhs) is kind and d.dtype == rhs.dtype
                and d.shape == rhs.shape == self.structure.values_shape):
            return None
        fd, fr = d.flags, rhs.flags
        if not (fd.c_contiguous and fr.c_contiguous  # CuPy arrays have no writeable flag
                and getattr(fd, "writeable", True) and getattr(fr, "writeable", True)):
            return None
        if impl.xp.may_share_memory(d, rhs):
            return None
        return impl


def _never() -> bool:
    return False


def _solver_dtype(dtype) -> np.dtype:
    """``dtype`` if the solvers compute in it (float32 or float64); ``TypeError`` otherwise."""
    dtype = np.dtype(dtype)
    if dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"plans solve float32 or float64 values, got {dtype}")
    return dtype


def plan(structure, backend: str = "auto", **options) -> Plan:
    """Analyse ``structure`` once for ``backend``; returns a :class:`Plan` to solve with.

    Parameters
    ----------
    structure : HinesStructure or MonoBatch
        The canonical batched structure (:mod:`hinesbatch.tree`).
    backend : str
        ``"auto"`` (GPU when CuPy and a device are present, else multicore CPU), or a name
        from :func:`hinesbatch.backends`; an unknown name raises ``ValueError`` listing them.
    **options
        Backend options, checked here (``TypeError`` naming an unknown one): ``threads=`` and
        ``lockstep=`` for ``multicore``, ``lockstep=`` for ``serial`` (cells of a
        :class:`MonoBatch` advanced together; results are identical for any value),
        ``strategy=`` for the GPU backend.
    """
    return Plan(structure, backend, **options)


def solve(structure, d, rhs, *, backend: str = "auto", overwrite: bool = False,
          check_finite: bool = True, **options):
    """One-shot convenience: ``plan(structure, backend, **options).solve(d, rhs, ...)``."""
    return plan(structure, backend, **options).solve(
        d, rhs, overwrite=overwrite, check_finite=check_finite
    )
