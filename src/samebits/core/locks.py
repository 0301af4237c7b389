"""Exclusive `flock`s, the one kind of lock the library takes: the kernel releases one however its holder ends
(kill -9 included), so a lock never outlives a dead process.

Who holds what: a training process its run folder's `run.lock` (core/run_folder.py), a launcher or local job a
run's `launch.lock` (launch/records.py), the local queue its `.launch/local-queue.lock` (launch/local.py), a job
its checkout's `.used` marker (launch/jobs_cache.py), whoever creates an MLflow store its `.lock`
(tracking/mlflow_store.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path


def try_exclusive(descriptor: int) -> bool:
    """Take an exclusive lock on the open file without waiting: False if another open file of it holds one."""
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


@contextlib.contextmanager
def exclusive(path: Path, flags: int = 0) -> Iterator[int]:
    """Hold an exclusive lock on `path` (made if missing) for the block, after waiting for any other holder."""
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | flags, 0o666)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield descriptor
    finally:
        os.close(descriptor)  # releases the lock
