"""The one atomic file writer (:mod:`hinesbatch.io.atomic`) that results, spike reports,
figures and the command line's outputs all go through: a failed or interrupted write keeps
the earlier file and leaves no temporary file; what it writes is flushed to disk before the
rename and gets the permissions ``open()`` would give."""
from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from hinesbatch.io import atomic
from hinesbatch.io.atomic import atomic_write, check_writable, temporary_file


def _earlier(tmp_path: Path) -> Path:
    path = tmp_path / "out.npz"
    path.write_bytes(b"earlier")
    return path


@pytest.mark.parametrize("error", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_a_failing_write_keeps_the_earlier_file_and_no_temporary(tmp_path, error):
    path = _earlier(tmp_path)

    def half_written(tmp):
        Path(tmp).write_bytes(b"half")
        raise error

    with pytest.raises(type(error)):
        atomic_write(path, half_written)
    assert path.read_bytes() == b"earlier"
    assert os.listdir(tmp_path) == ["out.npz"]


@pytest.mark.skipif(not hasattr(signal, "SIGINT"), reason="needs SIGINT")
def test_ctrl_c_during_the_write_leaves_no_temporary_file(tmp_path):
    path = _earlier(tmp_path)

    def interrupted(tmp):
        Path(tmp).write_bytes(b"half")
        os.kill(os.getpid(), signal.SIGINT)  # Python's handler raises KeyboardInterrupt
        for _ in range(10_000):  # the handler runs between bytecodes
            pass

    with pytest.raises(KeyboardInterrupt):
        atomic_write(path, interrupted)
    assert path.read_bytes() == b"earlier" and os.listdir(tmp_path) == ["out.npz"]


def test_written_beside_the_target_with_its_suffix_and_synced_before_the_rename(
        tmp_path, monkeypatch):
    path = tmp_path / "fig.svg"
    seen, synced = [], []
    real_fsync = os.fsync

    def fsync(fd):
        synced.append(os.path.exists(path))
        real_fsync(fd)

    monkeypatch.setattr(atomic.os, "fsync", fsync)
    assert atomic_write(path, lambda tmp: (seen.append(tmp), Path(tmp).write_text("x"))) == path
    tmp = Path(seen[0])
    assert tmp.parent == tmp_path and tmp.name.startswith(".fig.svg.") and tmp.suffix == ".svg"
    assert synced == [False]  # flushed once, before the target existed
    assert path.read_text() == "x" and os.listdir(tmp_path) == ["fig.svg"]


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_permissions_are_those_of_a_plain_open(tmp_path, mask):
    old = os.umask(mask)
    try:
        atomic_write(tmp_path / "a.npz", lambda tmp: Path(tmp).write_bytes(b"a"))
        with open(tmp_path / "b.npz", "wb") as f:
            f.write(b"b")
    finally:
        os.umask(old)
    mode = lambda name: (tmp_path / name).stat().st_mode & 0o777  # noqa: E731
    assert mode("a.npz") == mode("b.npz") == 0o666 & ~mask


def test_a_missing_folder_or_a_folder_as_target_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"the folder .*nowhere does not exist"):
        atomic_write(tmp_path / "nowhere" / "x.npz", lambda tmp: None)
    with pytest.raises(IsADirectoryError, match="it is a folder"):
        atomic_write(tmp_path, lambda tmp: None)
    with pytest.raises(OSError, match=r"the folder .*nowhere does not exist"):
        check_writable(tmp_path / "nowhere" / "x.npz")
    check_writable(tmp_path / "x.npz")
    assert os.listdir(tmp_path) == []  # the check's file is gone


def test_temporary_file_is_hidden_and_new(tmp_path):
    a, b = temporary_file(tmp_path / "x.npz", ".v.npy"), temporary_file(tmp_path / "x.npz", ".v.npy")
    assert a != b and all(Path(p).name.startswith(".x.npz.") and p.endswith(".v.npy")
                          for p in (a, b))
