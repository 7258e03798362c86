"""Writing files atomically: into a temporary file beside the target, renamed over it once
complete, so a reader (or a crash) never meets a half-written file."""
from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def atomic_write(path: str | os.PathLike, write: Callable[[str], object]) -> Path:
    """Call ``write(tmp)`` with the name of a new empty file in ``path``'s folder, then rename
    that file to ``path`` (``os.replace``). On any error the temporary file is removed and
    ``path`` is left as it was.

    Parameters
    ----------
    path : str or os.PathLike
        The file to write; its folder must exist.
    write : callable
        Writes the whole content into the file named by its argument (a str path with the
        same suffix as ``path``, so writers that infer a format from the suffix work).

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise FileNotFoundError(f"cannot write {path}: the folder {folder} does not exist")
    if path.is_dir():
        raise IsADirectoryError(f"cannot write {path}: it is a folder")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f".tmp{path.suffix}",
                               dir=folder)
    try:
        try:
            os.fchmod(fd, _new_file_mode())  # as open() would create it, not mkstemp's 0600
        finally:
            os.close(fd)
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise
    return path


def _new_file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask
