"""A tracker backed by a service (wandb, MLflow), which talks to it from its own thread.

The loop only appends to a list: starting the service (slow for wandb, up to its init timeout online),
sending and closing happen on a daemon thread, so a slow or hung service never stalls a step and never holds the
process at exit. The thread works through its jobs in order; the loop checks on it at each call, and reports it
as failed (the fan-out then switches it off) once a job has raised, or has run for more than `timeout_s`.

Exactly once: `Service.open` reports the last step the service already holds for this run. The thread sends the
lines of earlier attempts (`RunInfo.history`) after that step, then only steps after the last one sent.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from ..core.files import write_json
from ..core.run_files import RunFiles
from ..core.states import AttemptState
from . import RunInfo

Row = dict[str, float]  # {"step": 10, "train/loss": 0.5, ...}: one line of metrics.jsonl


class TrackerFailed(RuntimeError):
    pass


class Service(Protocol):
    def open(self) -> int:
        """Start, or reopen, this run's record in the service; return the last step it holds (0: none)."""
        ...

    def record(self, provenance: Mapping[str, Any]) -> None: ...

    def send(self, rows: list[Row]) -> None:
        """Send rows of increasing steps. A call the service stores whole or not at all lets `open` be exact."""
        ...

    def close(self, state: AttemptState) -> None: ...


class RemoteTracker:
    def __init__(self, service: Service, run: RunInfo, timeout_s: float) -> None:
        self.service, self.timeout_s = service, timeout_s
        self._pending: list[Row] = []  # logged, not yet covered by a durable checkpoint
        self._jobs: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self._busy_since: float | None = None
        self._error: str | None = None
        self._abandoned = False
        self._closed = threading.Event()
        self._jobs.put(("open", [row for row in run.history if row["step"] <= run.start_step]))
        threading.Thread(target=self._work, name=f"tracker-{type(service).__name__}", daemon=True).start()

    def record(self, provenance: Mapping[str, Any]) -> None:
        self._check()
        self._jobs.put(("record", provenance))

    def log(self, step: int, metrics: Mapping[str, float]) -> None:
        self._check()
        self._pending.append({"step": step, **metrics})

    def flush(self) -> None:
        self._check()

    def publish(self, step: int) -> None:
        self._check()
        covered = [row for row in self._pending if row["step"] <= step]
        if covered:
            self._pending = self._pending[len(covered) :]
            self._jobs.put(("send", covered))

    def close(self, state: AttemptState) -> None:
        self.publish(self._pending[-1]["step"] if self._pending else 0)
        self._jobs.put(("close", state))
        if not self._closed.wait(self.timeout_s):
            self._abandoned = True
            raise TrackerFailed(f"did not finish within timeout_s={self.timeout_s:g} s; it was left behind")
        self._check()

    def _check(self) -> None:
        if self._error is not None:
            raise TrackerFailed(self._error)
        started = self._busy_since
        if started is not None and time.monotonic() - started > self.timeout_s:
            self._abandoned = True
            self._error = f"no answer within timeout_s={self.timeout_s:g} s"
            raise TrackerFailed(self._error)

    def _work(self) -> None:
        last = 0  # the last step the service holds
        while not self._abandoned:
            job, argument = self._jobs.get()
            self._busy_since = time.monotonic()
            try:
                if job == "open":
                    last = self.service.open()
                    job, argument = "send", argument
                if job == "send":
                    rows = [row for row in argument if row["step"] > last]
                    if rows:
                        self.service.send(rows)
                        last = int(rows[-1]["step"])
                elif job == "record":
                    self.service.record(argument)
                elif job == "close":
                    self.service.close(argument)
                    self._closed.set()
                    return
            except Exception as error:  # reported by the loop's thread at its next call
                self._error = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
                self._closed.set()
                return
            finally:
                self._busy_since = None


def stored_id(run_dir: Path, tracker: str) -> str | None:
    """The id of this run in a tracker, kept in `<run folder>/trackers.json`, so that every attempt reopens it."""
    path = RunFiles(run_dir).tracker_ids
    return json.loads(path.read_text()).get(tracker) if path.exists() else None


_ids_lock = threading.Lock()  # two trackers' threads may store their ids at once


def store_id(run_dir: Path, tracker: str, run_id: str) -> None:
    with _ids_lock:
        path = RunFiles(run_dir).tracker_ids
        ids = json.loads(path.read_text()) if path.exists() else {}
        write_json(path, ids | {tracker: run_id})
