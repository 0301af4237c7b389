"""What launchers know of a run: its launch record and its lease, both in the run folder.

- `launch.json`, the launch record, is written only by launchers (never by training): how the run was last
  submitted (backend, job id, commit, overrides), by which user (runs folders may be shared) and, for the local
  backend, whether it waits in the queue or how its job ended.
- `launch.lock`, the lease, is an exclusive `flock` that a launcher holds while it decides about a run and
  submits it, and that a local job holds while it runs. A launcher that finds the lease taken leaves the run to
  its holder, so concurrent launchers submit each run once. The kernel releases a lease when its holder dies.
  The lease decides who may submit, never whether a job is alive: that is read from the job's pid and start
  time (launch/local.py), which a launcher holding the lease itself cannot mistake for its own hold.

Both live beside `run.lock`, which the training process holds: the last line of defence, not the first.
"""

from __future__ import annotations

import os
import pwd
from functools import cache
from pathlib import Path
from typing import Any

from ..core.files import read_json_object, write_json
from ..core.locks import try_exclusive
from ..core.run_files import RunFiles


@cache  # asked once per run a plan decides about
def this_user() -> str:
    """The user a launch record names: the name of this process's uid (not $USER, which may be anyone's), as
    Slurm's `--user` takes it; the uid itself where it has no name."""
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def launched_by_someone_else(record: dict[str, Any]) -> str | None:
    """The user who launched the run, when that is not this user (records from before this field are ours)."""
    user = record.get("user")
    return str(user) if user and user != this_user() else None


def read(run_dir: Path) -> dict[str, Any] | None:
    return read_json_object(RunFiles(run_dir).launch_record)


def write(run_dir: Path, record: dict[str, Any]) -> None:
    """Replace the launch record atomically: a reader sees the old record or the new one, never half of one."""
    write_json(RunFiles(run_dir).launch_record, record)


class Lease:
    """An exclusive, non-blocking hold on one run; `take` returns None when another launcher or job holds it."""

    def __init__(self, run_dir: Path, descriptor: int) -> None:
        self.run_dir, self.descriptor = run_dir, descriptor

    @classmethod
    def take(cls, run_dir: Path) -> Lease | None:
        run_dir.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(RunFiles(run_dir).launch_lease, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        if not try_exclusive(descriptor):
            os.close(descriptor)
            return None
        return cls(run_dir, descriptor)

    def release(self) -> None:
        """Close this process's hold; a local job given the descriptor keeps holding the lease."""
        if self.descriptor >= 0:
            os.close(self.descriptor)
            self.descriptor = -1
