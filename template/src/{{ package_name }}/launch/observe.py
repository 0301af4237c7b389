"""A run's state as launchers see it: its run folder, its launch record and its backend's live jobs, combined.

The run folder says how the latest training attempt stands (`status.json`, rewritten at every checkpoint and on a
heartbeat timer). The launch record says how the run was submitted. The backend says whether that job is still
queued or running: the local queue and the local job's lease, or one `squeue` call for all Slurm jobs (no
slurmdbd needed). Combined:

- queued / pending: submitted, not training yet (a requeued Slurm job is pending again);
- running: training, and its process or job is alive;
- lost: says running, but its job is gone, its process on this machine is gone, or (elsewhere, without a job
  record) its heartbeat is older than STALE_AFTER_S;
- new: never submitted, or submitted and refused before training started (failed then, with the job's reason).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..core import lock_holder
from . import records

STALE_AFTER_S = 3 * lock_holder.HEARTBEAT_S  # three missed heartbeats


@dataclass(frozen=True)
class Observed:
    state: str
    step: int
    reason: str
    updated_at: datetime | None
    record: dict[str, Any] | None
    live: bool | None  # its job is queued or running (None: the backend cannot be asked)
    restarts: int
    trackers_off: dict[str, str] = field(default_factory=dict)  # tracker -> why its latest attempt dropped it

    @property
    def job_id(self) -> str | None:
        return self.record.get("job_id") if self.record else None


class Backends:
    """The live jobs of each backend, asked at most once per command (and again after `refresh`)."""

    def __init__(self) -> None:
        self._slurm: dict[str, str] | None = None
        self._asked_at: str | None = None

    def refresh(self) -> None:
        self._asked_at = None

    def slurm_jobs(self) -> dict[str, str] | None:
        """Job id -> state of every job Slurm still knows as queued or running, array tasks one by one."""
        if self._asked_at is None:
            self._asked_at, self._slurm = records.now(), _squeue()
        return self._slurm

    def is_live(self, run_dir: Path, record: dict[str, Any]) -> bool | None:
        if record.get("backend") == "local":
            return record.get("state") == "queued" or (record.get("state") == "started" and records.is_held(run_dir))
        if record.get("backend") == "slurm":
            jobs = self.slurm_jobs()
            newer = record.get("submitted_at", "") >= (self._asked_at or "")
            if jobs is not None and record.get("job_id") not in jobs and newer:
                self.refresh()  # submitted by another launcher since squeue was asked: ask again
                jobs = self.slurm_jobs()
            return None if jobs is None else record.get("job_id") in jobs
        return None


def observe(run_dir: Path, backends: Backends, now: datetime | None = None) -> Observed:
    status = _json(run_dir / "status.json")
    record = records.read(run_dir)
    live = backends.is_live(run_dir, record) if record else None
    state = status.get("state", "new") if status else "new"
    reason = status.get("reason", "") if status else ""
    updated = datetime.fromisoformat(status["updated_at"]) if status and status.get("updated_at") else None
    if record and record.get("state") == "queued":
        state = "queued"
    elif live:
        state = "running" if state == "running" and not lock_holder.is_gone(run_dir) else "pending"
    elif state == "running":
        stale = updated is not None and ((now or datetime.now(UTC)) - updated).total_seconds() > STALE_AFTER_S
        if lock_holder.is_gone(run_dir) or (record and live is False) or (stale and not record):
            state, reason = "lost", "its process or job is gone: launch again to resume from its latest checkpoint"
    elif record and live is False and state != "finished" and (updated is None or _before(updated, record)):
        code = record.get("exit_code")  # its job ended without starting an attempt: refused, or broken
        state = "failed"
        reason = f"its job ended{f' with exit code {code}' if code is not None else ''} before training started"
        reason += f": {line}" if (line := _last_line(Path(record.get("log") or run_dir / "job.log"))) else ""
    step = int(status.get("step", 0)) if status else 0
    off = status.get("trackers_off", {}) if status else {}
    return Observed(state, step, reason, updated, record, live, _restarts(run_dir), off)


def _before(updated: datetime, record: dict[str, Any]) -> bool:
    """Whether the run's status was last written before the record's job was submitted."""
    try:
        return updated < datetime.fromisoformat(record["submitted_at"])
    except (KeyError, TypeError, ValueError):
        return False


def _restarts(run_dir: Path) -> int:
    """Attempts after the first: the first writes provenance.json, each later one a line of attempts.jsonl."""
    try:
        with (run_dir / "attempts.jsonl").open("rb") as file:
            return sum(1 for _ in file)
    except OSError:
        return 0


def _squeue() -> dict[str, str] | None:
    if shutil.which("squeue") is None:
        return None
    command = ["squeue", "--noheader", "--array", "--format=%i|%T", f"--user={os.getuid()}"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0:
        return None
    return dict(line.split("|", 1) for line in done.stdout.split() if "|" in line)


def _json(path: Path) -> dict[str, Any] | None:
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return None  # missing, or cut short by a crash mid-write (writes are atomic, but not on every filesystem)
    return found if isinstance(found, dict) else None


def _last_line(path: Path) -> str:
    try:
        with path.open("rb") as file:
            file.seek(max(0, file.seek(0, os.SEEK_END) - 4096))
            lines = [line.strip() for line in file.read().decode(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1][:300] if lines else ""
