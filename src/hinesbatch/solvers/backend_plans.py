"""What every plan shares: a backend resolved once, prepared once per dtype."""
from __future__ import annotations

import numpy as np

from . import registry

__all__ = ["BackendPlan"]


class BackendPlan:
    """Base of :class:`~hinesbatch.solvers.plan.Plan` and
    :class:`~hinesbatch.solvers.tridiagonal.TridiagonalPlan`.

    Resolves ``backend`` (``"auto"`` included) in the registry for ``kind`` and builds the
    backend object for ``subject`` (a structure or a batch shape) lazily per dtype; the
    float64 one is built at once, so unknown options fail at plan time.
    """

    kind: str = "hines"

    def __init__(self, subject, backend: str, options: dict):
        cls, note = registry.resolve(backend, self.kind, subject)
        self.backend_name: str = cls.name
        self.note: str = note
        self._subject = subject
        self._asked = backend
        self._cls = cls
        self._options = dict(options)
        self._impl: dict[np.dtype, object] = {}
        self._implementation(np.dtype(np.float64))

    def _implementation(self, dtype: np.dtype):
        impl = self._impl.get(dtype)
        if impl is None:
            impl = self._impl[dtype] = self._cls(self._subject, dtype=dtype, **self._options)
        return impl

    def __reduce__(self):
        # copies and pickles plan again: the subject is validated again and the backend's
        # state (scratch, compiled kernels, device buffers) is built afresh, never shared
        return (_replan, (type(self), self._subject, self._asked, self._options))

    @classmethod
    def _from_subject(cls, subject, backend: str, options: dict) -> BackendPlan:
        raise NotImplementedError

    @property
    def xp(self):
        """The array module the backend computes with (``numpy`` or ``cupy``)."""
        return self._implementation(np.dtype(np.float64)).xp


def _replan(cls, subject, backend: str, options: dict) -> BackendPlan:
    return cls._from_subject(subject, backend, options)
