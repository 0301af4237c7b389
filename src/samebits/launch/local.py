"""The local backend: each run is a detached process (launch/local_job.py) that runs jobs/job.sh at the launch
commit, with the job's output in `<run folder>/job.log`.

At most `max_concurrent` local jobs run at once; the other runs wait as `queued` in their launch records. A job
that ends starts the next queued runs itself, and so do `launch` and `status`, in case a job was killed. Queued
runs start oldest first. The queue's lock (`<runs folder>/.launch/local-queue.lock`) lets one process at a time
start jobs; each run's lease is handed to its job, which holds it until it ends.

Whether a job is alive is judged from its pid and start time, recorded as it starts (core/processes.py), never by
probing its lease: a launcher holding that lease itself would take its own hold for a live job's.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from ..core import lock_holder, processes
from ..core.locks import exclusive
from ..core.run_files import RunFiles
from ..core.runs import run_dirs
from ..project import current
from . import records


def queue(lease: records.Lease, record: dict[str, Any], max_concurrent: int) -> None:
    """Put a run in the local queue; `advance` starts it when a place is free."""
    (Path(record["environment"]["RUNS_DIR"]) / ".launch").mkdir(parents=True, exist_ok=True)  # the queue's lock
    records.write(lease.run_dir, record | {"state": "queued", "max_concurrent": max_concurrent, "job_id": None})


def advance(runs_dir: Path) -> list[Path]:
    """Start queued runs, oldest first, while fewer local jobs run than their `max_concurrent`."""
    if not (runs_dir / ".launch").is_dir():
        return []  # nothing was ever launched locally here
    started: list[Path] = []
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(exclusive(runs_dir / ".launch" / "local-queue.lock", os.O_CLOEXEC))
        except OSError:
            return []  # a runs folder this user cannot write: nothing of theirs to start
        found = [(run_dir, record) for run_dir in run_dirs(runs_dir) if (record := records.read(run_dir))]
        local = [(run_dir, record) for run_dir, record in found if record.get("backend") == "local"]
        running = sum(takes_a_place(run_dir, record) for run_dir, record in local)
        waiting = sorted(
            (found for found in local if found[1].get("state") == "queued"),
            key=lambda found: (found[1].get("submitted_at", ""), found[1].get("position", 0)),
        )
        for run_dir, record in waiting:
            if running >= int(record.get("max_concurrent", 1)):
                break
            if (lease := records.Lease.take(run_dir)) is None:
                continue  # a launcher is deciding about it right now
            try:
                if (current := records.read(run_dir)) and current.get("state") == "queued":
                    start(lease, current)
                    started.append(run_dir)
                    running += 1
            finally:
                lease.release()
    return started


def start(lease: records.Lease, record: dict[str, Any]) -> None:
    """Start the run's job as a detached process that inherits the lease, and record its id."""
    run_dir = lease.run_dir
    with RunFiles(run_dir).job_log.open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "samebits.launch.local_job", str(run_dir), str(lease.descriptor)],
            cwd=current().root,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            pass_fds=(lease.descriptor,),
            start_new_session=True,  # survives the launcher, its terminal and its Ctrl-C
        )
    job = {"job_id": f"{socket.gethostname()}:{process.pid}", "job_token": processes.start_token(process.pid)}
    records.write(run_dir, record | {"state": "started"} | job)


def job_alive(record: dict[str, Any]) -> bool | None:
    """Whether a started local job's process is alive (None: it was started on another machine)."""
    host, _, pid = str(record.get("job_id") or "").rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return None
    return processes.is_alive(int(pid), record.get("job_token"))  # records made before tokens: the pid alone


def takes_a_place(run_dir: Path, record: dict[str, Any]) -> bool:
    """Whether a run counts against `max_concurrent`: its job may be alive, or its training process is (a job
    whose wrapper was killed leaves training going on its own)."""
    started = record.get("state") == "started" and job_alive(record) is not False
    return started or lock_holder.holder_alive(run_dir) is True
