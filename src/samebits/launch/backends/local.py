"""The local backend: detached processes on this machine, at most `max_concurrent` at once (launch/local.py)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import local
from . import Backend, Planned


class LocalJobs:
    def check(self) -> None:
        pass  # nothing to ask: jobs/job.sh runs here

    def submit(self, planned: Sequence[Planned], limit: int | None) -> None:
        for run in planned:
            local.queue(run.lease, run.record, limit or 1)
        for run in planned:
            run.lease.release()  # the queue takes each lease again as it starts the run's job
        started = local.advance(Path(planned[0].record["environment"]["RUNS_DIR"]))
        print(f"queued {len(planned)} run(s) locally, {len(started)} started now (at most {limit or 1} at once)")

    def is_live(self, record: dict[str, Any]) -> bool | None:
        return record.get("state") == "queued" or (record.get("state") == "started" and local.job_alive(record))


def backend() -> Backend:
    return LocalJobs()
