"""A run's state, decided here once for every command that shows or acts on it (status, tags, collect, launch,
search): its run folder, its launch record, its training process and its backend's live jobs, combined.

The run folder says how the latest training attempt stands (`status.json`, rewritten at every checkpoint and on a
heartbeat timer; `summary.json` once finished). `run.lock` names the training process, which is alive or not
whatever became of the job that started it. The launch record says how the run was submitted. The backend says
whether that job is still queued or running: the local job's pid and start time, or one `squeue` call for all
Slurm jobs (no slurmdbd needed). Combined:

- finished: its summary.json is there;
- running: its training process is alive, or it says running and its job is alive (on another machine);
- queued / pending: submitted, not training yet (a requeued Slurm job is pending again);
- lost: says running, but its training process and its job are gone, or (elsewhere, without a job record) its
  heartbeat is older than STALE_AFTER_S;
- unreadable: its status.json or summary.json is damaged (named in `damaged`): it is never taken for new;
- new: never submitted, or submitted and refused before training started (failed then, with the job's reason).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..core import lock_holder
from ..core.files import read_json_record
from ..core.run_files import RunFiles
from ..core.states import RunState
from . import backends, records

STALE_AFTER_S = 3 * lock_holder.HEARTBEAT_S  # three missed heartbeats


@dataclass(frozen=True)
class Observed:
    state: RunState
    step: int
    reason: str
    updated_at: datetime | None
    record: dict[str, Any] | None
    live: bool | None  # its job is queued or running (None: the backend cannot be asked)
    restarts: int
    trackers_off: dict[str, str] = field(default_factory=dict)  # tracker -> why its latest attempt dropped it
    damaged: tuple[str, ...] = ()  # one line per record of the run that cannot be read

    @property
    def job_id(self) -> str | None:
        return self.record.get("job_id") if self.record else None


class Backends:
    """The backends of one command: each asks its scheduler at most once (and again after `refresh`)."""

    def __init__(self) -> None:
        self._asked: dict[str, backends.Backend] = {}

    def refresh(self) -> None:
        self._asked.clear()

    def is_live(self, run_dir: Path, record: dict[str, Any]) -> bool | None:
        name = record.get("backend")
        if name not in backends.names():
            return None  # a record this launcher cannot read: never taken for a live job
        if name not in self._asked:
            self._asked[name] = backends.named(name)
        return self._asked[name].is_live(record)


def observe(run_dir: Path, backends: Backends, now: datetime | None = None) -> Observed:
    files = RunFiles(run_dir)
    status, status_damage = _json(files.status)
    summary, summary_damage = _json(files.summary)
    record = records.read(run_dir)
    damaged = tuple(line for line in (summary_damage, status_damage) if line)
    if record is None and files.launch_record.exists():
        damaged += (f"{files.launch_record} is damaged: the launcher cannot tell how the run was submitted",)
    live = backends.is_live(run_dir, record) if record else None
    training = lock_holder.holder_alive(run_dir)  # None: no process named, or another machine's
    state = str(status.get("state", "new")) if status else "new"
    reason = str(status.get("reason", "")) if status else ""
    updated = _time(status.get("updated_at")) if status else None
    if summary is not None:
        state = "finished"
    elif training:
        state = "running"  # whatever happened to the job that started it
    elif summary_damage or status_damage:
        state, reason = "unreadable", "; ".join(damaged[:2])
    elif record and record.get("state") == "queued":
        state = "queued"
    elif live:
        state = "running" if state == "running" and training is None else "pending"
    elif state == "running":
        stale = updated is not None and ((now or datetime.now(UTC)) - updated).total_seconds() > STALE_AFTER_S
        if training is False or (record and live is False) or (stale and not record):
            state, reason = "lost", "its process or job is gone: launch again to resume from its latest checkpoint"
    elif record and live is False and state != "finished" and (updated is None or _before(updated, record)):
        code = record.get("exit_code")  # its job ended without starting an attempt: refused, or broken
        state = "failed"
        reason = f"its job ended{f' with exit code {code}' if code is not None else ''} before training started"
        reason += f": {line}" if (line := _last_line(Path(record.get("log") or RunFiles(run_dir).job_log))) else ""
    step = _step(summary) if summary is not None else _step(status)
    off = status.get("trackers_off", {}) if status else {}
    return Observed(state, step, reason, updated, record, live, _restarts(run_dir), off, damaged)


def observe_all(run_dirs: list[Path]) -> list[Observed]:
    """Observe many runs with one look at each backend; say once, on stderr, which of their records are damaged."""
    backends = Backends()
    found = [observe(run_dir, backends) for run_dir in run_dirs]
    for line in (line for seen in found for line in seen.damaged):
        print(f"warning: {line}", file=sys.stderr, flush=True)
    return found


def _before(updated: datetime, record: dict[str, Any]) -> bool:
    """Whether the run's status was last written before the record's job was submitted."""
    try:
        return updated < datetime.fromisoformat(record["submitted_at"])
    except (KeyError, TypeError, ValueError):
        return False


def _restarts(run_dir: Path) -> int:
    """Attempts after the first: the first writes provenance.json, each later one a line of attempts.jsonl."""
    try:
        with RunFiles(run_dir).attempts.open("rb") as file:
            return sum(1 for _ in file)
    except OSError:
        return 0


def _json(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """(the record, None), (None, None) when there is none, or (None, a line saying why it cannot be read)."""
    found, damage = read_json_record(path)
    return found, damage and f"{damage}: restore it, or remove it and launch the run again"


def _time(value: object) -> datetime | None:
    try:
        return datetime.fromisoformat(str(value)) if value else None
    except ValueError:
        return None


def _step(record: dict[str, Any] | None) -> int:
    try:
        return int((record or {}).get("step", 0))
    except (TypeError, ValueError):
        return 0


def _last_line(path: Path) -> str:
    try:
        with path.open("rb") as file:
            file.seek(max(0, file.seek(0, os.SEEK_END) - 4096))
            lines = [line.strip() for line in file.read().decode(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1][:300] if lines else ""
