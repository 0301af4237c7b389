"""Durable writes (core/files.py), in the order a crash needs: the new file's content is fsynced before the rename
that puts it in place (else a crash can keep the rename and lose the content: an empty or half file under the
real name), and the folder is fsynced after the rename (else the rename itself can be lost).

The system calls run for real; the test only notes, in order, which file or folder each fsync was given."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from importlib import import_module
from pathlib import Path

import pytest

files = import_module("samebits.core.files")

Calls = list[tuple[str, int | str]]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Calls:
    """("fsync", inode) and ("replace", name) as they happen; a folder's fsync is noted with its inode too."""
    noted: Calls = []
    fsync, replace = os.fsync, os.replace

    def noting_fsync(descriptor: int) -> None:
        noted.append(("fsync", os.fstat(descriptor).st_ino))
        fsync(descriptor)

    def noting_replace(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
        noted.append(("replace", Path(target).name))
        replace(source, target)

    monkeypatch.setattr(os, "fsync", noting_fsync)
    monkeypatch.setattr(os, "replace", noting_replace)
    return noted


WRITERS: dict[str, Callable[[Path], None]] = {
    "write_atomic": lambda path: files.write_atomic(path, lambda out: out.write(b"new content")),
    "write_text": lambda path: files.write_text(path, "new content"),
    "write_json": lambda path: files.write_json(path, {"new": "content"}),
}


@pytest.mark.parametrize("writer", WRITERS)
def test_the_file_is_fsynced_before_its_rename_and_the_folder_after(tmp_path: Path, calls: Calls, writer: str) -> None:
    target = tmp_path / "status.json"
    target.write_text("old content")
    WRITERS[writer](target)
    file_inode, folder_inode = target.stat().st_ino, tmp_path.stat().st_ino  # a rename keeps the file's inode
    assert stat.S_ISDIR(tmp_path.stat().st_mode)
    assert calls == [("fsync", file_inode), ("replace", "status.json"), ("fsync", folder_inode)]
    assert target.read_text() != "old content"


def test_without_sync_folder_the_file_is_still_fsynced_before_its_rename(tmp_path: Path, calls: Calls) -> None:
    """Checkpoints write several files, then fsync the folder once (core/checkpoint.py): each file's own fsync
    still comes before its rename."""
    target = tmp_path / "manifest.json"
    files.write_json(target, {"step_000100.pt": "0" * 64}, sync_folder=False)
    assert calls == [("fsync", target.stat().st_ino), ("replace", "manifest.json")]
    files.write_text(tmp_path / "latest", "step_000100.pt")
    assert calls[2:] == [("fsync", (tmp_path / "latest").stat().st_ino), ("replace", "latest"),
                         ("fsync", tmp_path.stat().st_ino)]  # fmt: skip
