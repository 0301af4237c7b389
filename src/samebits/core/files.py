"""Durable writes: a file is either its old content or its new content, never half of either.

Write to a temporary file in the same folder, fsync it, rename it over the target, then fsync the folder so the
rename itself survives a crash. Under kill -9 during `torch.save`, a plain write left unloadable files and this
sequence none (docs/decisions/0003-durable-writes.md).

The temporary file is created with mode 0o666, as a plain `open()` creates a file, so that the kernel applies the
umask (or the folder's default ACL): a run's config, status and checkpoints are as readable to a shared group as
its `metrics.jsonl`. (`tempfile` would create them 0600, readable by their owner alone.)
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import secrets
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

TEMP_SUFFIX = ".tmp"

log = logging.getLogger(__name__)


def temporary_name(path: Path) -> Path:
    """A name in the same folder that no other writer picks, and that `remove_stale_temporaries` removes."""
    return path.parent / f".{path.name}.{secrets.token_hex(6)}{TEMP_SUFFIX}"


def write_atomic(path: Path, write: Callable[[IO[bytes]], object], *, sync_folder: bool = True) -> None:
    """Call `write(file)` on a temporary file, then put it at `path` in one rename. With `sync_folder=False` the
    rename is durable once the folder is fsynced, by the caller or by the next write_atomic there without it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_name(path)
    # Readable too, for the writer to hash what it wrote (core/checksums.py); 0o666: the mode of a plain open()
    descriptor = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(descriptor, "wb") as out:
            write(out)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)
    if sync_folder:
        fsync_dir(path.parent)


def write_text(path: Path, text: str, *, sync_folder: bool = True) -> None:
    write_atomic(path, lambda out: out.write(text.encode()), sync_folder=sync_folder)


def write_json(path: Path, data: Any, *, sync_folder: bool = True) -> None:
    write_text(path, json.dumps(data, indent=2) + "\n", sync_folder=sync_folder)


def read_json_object(path: Path) -> dict[str, Any] | None:
    """A JSON object from a file; None when the file is missing, unreadable, not JSON, or holds something else."""
    return read_json_record(path)[0]


def read_json_record(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """(the object, None); (None, None) when there is no such file; (None, a line saying why) when the file cannot
    be read or holds no JSON object. Records are written atomically, so the last is damage from outside."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None, None
    except OSError as error:
        return None, f"{path} cannot be read ({error.strerror})"
    try:
        found = json.loads(text)
    except ValueError:
        found = None
    if not isinstance(found, dict):
        return None, f"{path} is damaged (not a JSON object)"
    return found, None


def utc_now() -> str:
    """The time every record of a run is stamped with: UTC, ISO 8601, to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def file_sha256(path: Path) -> str | None:
    """The SHA-256 of a file, read in blocks; None if there is no such file."""
    if not path.exists():
        return None
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def delete_later(paths: list[Path]) -> threading.Thread | None:
    """Delete files on a thread, and return it (None if there was nothing to delete). Deleting a large file
    takes time (its blocks are freed: docs/decisions/0002-pruned-checkpoints-deleted-on-a-thread.md), so each is
    first renamed to a temporary name, at once: its own name is free, and `remove_stale_temporaries` removes it if
    the process dies before."""
    doomed = []
    for path in paths:
        hidden = temporary_name(path)
        try:
            os.replace(path, hidden)
        except FileNotFoundError:
            continue
        doomed.append(hidden)
    if not doomed:
        return None
    worker = threading.Thread(target=_delete, args=(doomed,), name="delete-later")  # not a daemon: exit waits
    worker.start()
    return worker


def _delete(paths: list[Path]) -> None:
    for path in paths:
        try:
            path.unlink(missing_ok=True)  # missing: another process's `remove_stale_temporaries` got there first
        except OSError as error:  # it stays a temporary file, which the next start removes
            log.warning("could not delete %s: %s", path, error)


def fsync_dir(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def remove_stale_temporaries(folder: Path) -> list[Path]:
    """Delete temporary files left by a process killed mid-write; return what was removed."""
    stale = sorted(folder.glob(f".*{TEMP_SUFFIX}")) if folder.is_dir() else []
    for path in stale:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    return stale


@contextlib.contextmanager
def appending(path: Path) -> Iterator[IO[str]]:
    """Append to `path` and make the appended lines durable before returning."""
    with path.open("a") as out:
        yield out
        out.flush()
        os.fsync(out.fileno())
