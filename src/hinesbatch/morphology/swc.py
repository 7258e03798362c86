"""Reading SWC files into a :class:`~hinesbatch.morphology.model.Morphology`."""
from __future__ import annotations

import io
import os
from typing import IO, Union

import numpy as np

from .model import Morphology

__all__ = ["read_swc"]

Source = Union[str, "os.PathLike[str]", IO[str], IO[bytes]]


def read_swc(source: Source) -> Morphology:
    """Read an SWC file (path or text/binary stream) into a :class:`Morphology`."""
    if isinstance(source, (str, os.PathLike)):
        name = os.fspath(source)
        with open(name, "rb") as fh:
            data = fh.read()
    else:
        name = getattr(source, "name", "<stream>")
        data = source.read()
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    rows, lines, header = [], [], []
    for k, raw in enumerate(text.splitlines(), start=1):
        body, _, comment = raw.partition("#")
        if _ and not body.strip():
            header.append(comment.rstrip("\r\n"))
        tok = body.split()
        if tok:
            rows.append(tok[:7])
            lines.append(k)
    arr = np.array(rows, dtype=np.float64)
    ids = arr[:, 0].astype(np.int64)
    par_ids = arr[:, 6].astype(np.int64)
    order = np.argsort(ids)
    pos = np.searchsorted(ids, par_ids, sorter=order)
    parents = np.where(par_ids < 0, -1, order[np.minimum(pos, ids.size - 1)])
    return Morphology(ids=ids, types=arr[:, 1].astype(np.int32), xyz=arr[:, 2:5].copy(),
                      radii=arr[:, 5].copy(), parents=parents.astype(np.int64),
                      lines=np.asarray(lines, dtype=np.int64), source=str(name),
                      header=tuple(header))
