"""Writing files atomically: into a temporary file beside the target, flushed to disk and
renamed over it once complete, so a reader (or a crash, or Ctrl-C) never meets a
half-written file and an earlier file survives a failed write.

Every file the package writes for a user (results ``.npz``, SONATA spike reports, figures,
the command line's outputs) goes through :func:`atomic_write`. Temporary files are hidden
(``.NAME.XXXX.tmp.SUFFIX``), keep the target's suffix (writers that choose the format by the
suffix, like matplotlib and ``numpy.savez``, write the right one) and get the permissions a
plain ``open(path, "w")`` would give, not ``mkstemp``'s 0600.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

__all__ = ["atomic_write", "check_writable", "remove_file", "temporary_file"]


def atomic_write(path: str | os.PathLike, write: Callable[[str], object]) -> Path:
    """Call ``write(tmp)`` with the name of a new empty file in ``path``'s folder, flush it to
    disk (``os.fsync``) and rename it to ``path`` (``os.replace``). On any error, and on
    ``KeyboardInterrupt``, the temporary file is removed and ``path`` is left as it was.

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

    Raises
    ------
    FileNotFoundError
        The folder does not exist (the message names it).
    IsADirectoryError
        ``path`` is a folder.
    """
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise FileNotFoundError(f"cannot write {path}: the folder {folder} does not exist")
    if path.is_dir():
        raise IsADirectoryError(f"cannot write {path}: it is a folder")
    tmp = temporary_file(path, f".tmp{path.suffix}")
    try:
        write(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        remove_file(tmp)
        raise
    return path


def temporary_file(path: str | os.PathLike, suffix: str) -> str:
    """A new empty file in ``path``'s folder, hidden and named after ``path``
    (``.NAME.XXXX<suffix>``), with the permissions ``open()`` would give it. The caller
    removes it (:func:`remove_file`)."""
    folder, name = os.path.split(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=suffix, dir=folder)
    try:
        os.fchmod(fd, _new_file_mode())  # as open() would create it, not mkstemp's 0600
    finally:
        os.close(fd)
    return tmp


def remove_file(path: str | os.PathLike) -> None:
    """Remove ``path`` if it exists."""
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


def check_writable(path: str | os.PathLike) -> None:
    """``OSError`` naming ``path`` unless a file can be created in its folder (checked by
    creating and removing a temporary file there)."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise OSError(f"cannot write {path}: the folder {folder} does not exist")
    if os.path.isdir(path):
        raise OSError(f"cannot write {path}: it is a folder")
    try:
        remove_file(temporary_file(path, ".check"))
    except OSError as exc:
        raise OSError(f"cannot write {path}: {exc.strerror or exc} in {folder}") from None


def _new_file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask
