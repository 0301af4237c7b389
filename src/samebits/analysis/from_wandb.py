"""The W&B source: the same run records as the run folders give, rebuilt from what wandb holds of each run.

Two places hold it: the W&B server, for runs that trained online or were uploaded with `wandb sync`, and wandb's
own run files (`.../wandb/[offline-]run-<time>-<id>/run-<id>.wandb`), the very records `wandb sync` uploads, for a
copy of the runs' `wandb/` folders kept where the run folders were not. Either way a record is made from what the
wandb tracker (tracking/wandb_tracker.py) sends: the resolved config (run name, main tag and tags included), the
provenance and the state it closed with in the summary, and the last value of every metric.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core.errors import ServiceUnreachable, UsageError
from ..tracking import wandb_files
from .records import RunRecord, identity_settings

UNFINISHED = "unfinished"  # the latest attempt never closed: it still runs, or it was killed
NOT_METRICS = ("global_step", "state", "provenance")  # what the tracker adds to the summary beside the metrics
TIMEOUT_S = 30


def from_files(folder: Path, main_tag: str | None = None) -> list[RunRecord]:
    """One record per wandb run whose files lie under `folder`, its attempts read oldest first."""
    if not folder.is_dir():
        raise UsageError(f"--wandb-dir {folder}: no such folder")
    found = [_from_attempts(paths) for paths in wandb_files.runs_under(folder).values()]
    return [record for record in found if record is not None and main_tag in (None, record.main_tag)]


def from_server(path: str, main_tag: str | None = None) -> list[RunRecord]:
    """One record per run of the W&B project at `path` (`[entity/]project`) that this project's tracker made."""
    import wandb

    try:
        api = wandb.Api(timeout=TIMEOUT_S)
        runs = api.runs(path, filters={"group": main_tag} if main_tag else {}, lazy=False)
        found = [_from_server_run(run) for run in runs]
    except Exception as error:  # wandb raises its own errors, and requests' when the host does not answer
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        fix = "log in (`wandb login`, or WANDB_API_KEY), or read copied run files with --wandb-dir DIR"
        # At once: wandb's exit handler waits for its service process, which may go on retrying a host that does
        # not answer for minutes after the API gave up (docs/decisions/0009-wandb-collect-exits-at-once.md). The
        # service exits once this process is gone.
        raise ServiceUnreachable(f"W&B server: {reason}; {fix}") from None
    return [record for record in found if record is not None]


def record(config: Mapping[str, Any], summary: Mapping[str, Any], state: str) -> RunRecord | None:
    """A run as the wandb tracker described it; None for a wandb run that it did not make (no `main_tag`)."""
    if "main_tag" not in config:
        return None
    provenance = summary.get("provenance") or {}
    return RunRecord(
        name=str(config.get("run_name")),
        main_tag=str(config["main_tag"]),
        tags=tuple(config.get("tags") or ()),
        state=str(summary.get("state") or state) if state != "running" else state,
        commit=(provenance.get("git") or {}).get("commit"),
        config_sha256=(provenance.get("run") or {}).get("config_sha256"),
        settings=identity_settings({key: value for key, value in config.items() if not key.startswith("_")}),
        metrics={
            key: value
            for key, value in summary.items()
            if key not in NOT_METRICS and not key.startswith("_") and _is_number(value)
        },
        step=int(summary["global_step"]) if "global_step" in summary else None,
    )


def _from_attempts(paths: list[Path]) -> RunRecord | None:
    """The records of every attempt, folded oldest first: the config and the summary as wandb keeps them, and the
    state as the newest attempt closed with (none: it never closed)."""
    config: dict[str, Any] = {}
    summary: dict[str, Any] = {}
    for path in paths:
        closed = None
        for item in wandb_files.records(path):
            kind = item.WhichOneof("record_type")
            if kind == "run":
                config |= wandb_files.items(item.run.config.update)
            elif kind == "config":
                config |= wandb_files.items(item.config.update)
            elif kind == "summary":
                updates = wandb_files.items(item.summary.update)
                summary |= updates
                closed = updates.get("state", closed)
        summary["state"] = closed
    return record(config, summary, UNFINISHED)


def _from_server_run(run: Any) -> RunRecord | None:
    """A run the server holds: every attempt's history and summary are already merged into it there. While an
    attempt runs, the summary still holds how the one before it closed, so wandb's own state wins."""
    return record(run.config, run.summary_metrics, run.state)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
