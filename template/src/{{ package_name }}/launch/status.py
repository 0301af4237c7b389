"""What every run is doing, read from the run folders: `<package> status [--tag MAIN_TAG]`.

A run folder's `status.json` says how its latest attempt stands (running, paused, preempted, interrupted,
failed or finished) and the step of its latest checkpoint, rewritten at every checkpoint. A process killed at
once (kill -9, a lost node) cannot update it, so a run that says "running" is checked: if the lock holder named
in `run.lock` was on this machine and its process is gone, the run is LOST, and starting it again resumes it
from its latest checkpoint. A holder on another machine cannot be checked from here: its run stays "running",
and the "updated" column shows how old that word is.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import yaml

from ..core import lock_holder
from ..core.errors import fail

TAIL_BYTES = 64 * 1024  # enough for the last evaluation line of metrics.jsonl
ORDER = ("running", "lost", "preempted", "paused", "interrupted", "failed", "finished", "new")


@dataclass(frozen=True)
class Run:
    tag: str
    name: str
    state: str
    step: int
    max_steps: int | None
    metrics: dict[str, float]
    updated_at: datetime | None
    reason: str = ""


def runs_dir(project_root: Path) -> Path:
    """Where runs live: RUNS_DIR (relative to the project), or runs/, as in configs/paths/default.yaml."""
    return project_root / (os.environ.get("RUNS_DIR") or "runs")


def read(run_dir: Path) -> Run:
    status = _json(run_dir / "status.json") or {}
    state = status.get("state", "new")  # a folder made, but no attempt recorded yet
    if state == "running" and lock_holder.is_gone(run_dir):
        state = "lost"
    updated = status.get("updated_at")
    return Run(
        tag=run_dir.parent.name,
        name=run_dir.name,
        state=state,
        step=int(status.get("step", 0)),
        max_steps=_max_steps(run_dir / "config.yaml"),
        metrics=_last_evaluation(run_dir / "metrics.jsonl"),
        updated_at=datetime.fromisoformat(updated) if updated else None,
        reason=status.get("reason", ""),
    )


def report(root: Path, tag: str | None = None) -> list[str]:
    """The status table of the runs under `root`, or of one main tag; an unknown tag is a one-line error."""
    tags = sorted(path.name for path in root.iterdir() if path.is_dir()) if root.is_dir() else []
    if tag is not None and tag not in tags:
        fail(
            [f"no runs with main_tag {tag!r} in {root}: " + (f"pick one of {', '.join(tags)}" if tags else "none yet")]
        )
    runs = collect(root, tag) if tags else []
    return table(runs) if runs else [f"no runs yet in {root}"]


def collect(root: Path, tag: str | None = None) -> list[Run]:
    """Every run under `root` (`<root>/<main_tag>/<run_name>/`), or under one main tag."""
    tags = [root / tag] if tag else sorted(path for path in root.iterdir() if path.is_dir())
    return [read(run_dir) for folder in tags for run_dir in sorted(folder.iterdir()) if _is_run(run_dir)]


def table(runs: list[Run], now: datetime | None = None) -> list[str]:
    """One row per run, then a line of counts per state."""
    now = now or datetime.now(UTC)
    header = ("run", "state", "step", "last evaluation", "updated")
    rows = [
        (
            f"{run.tag}/{run.name}",
            run.state,
            f"{run.step}/{run.max_steps}" if run.max_steps else str(run.step),
            "  ".join(f"{key} {value:.4g}" for key, value in run.metrics.items()) or "-",
            f"{_age(run.updated_at, now)} ago" if run.updated_at else "-",
        )
        for run in runs
    ]
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(len(header))]
    lines = [_line(row, widths) for row in [header, *rows]]
    lines += [f"  {run.tag}/{run.name}: {run.reason}" for run in runs if run.state == "failed" and run.reason]
    counts = Counter(run.state for run in runs)
    ordered = sorted(counts, key=lambda state: ORDER.index(state) if state in ORDER else len(ORDER))
    lines.append(f"{len(runs)} run{'s' * (len(runs) != 1)}: " + ", ".join(f"{counts[s]} {s}" for s in ordered))
    return lines


def _line(cells: tuple[str, ...], widths: list[int]) -> str:
    return "  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)).rstrip()


def _is_run(path: Path) -> bool:
    return path.is_dir() and any((path / name).exists() for name in ("status.json", "config.yaml"))


def _json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None  # missing, or cut short by a crash mid-write (writes are atomic, but not on every filesystem)


def _max_steps(config: Path) -> int | None:
    try:
        return int(yaml.safe_load(config.read_text())["trainer"]["max_steps"])
    except (OSError, ValueError, KeyError, TypeError, yaml.YAMLError):
        return None


def _last_evaluation(metrics: Path) -> dict[str, float]:
    """The validation metrics of the last line that has any."""
    try:
        with metrics.open("rb") as file:
            file.seek(max(0, file.seek(0, os.SEEK_END) - TAIL_BYTES))
            tail = file.read().decode(errors="replace").splitlines()
    except OSError:
        return {}
    for line in reversed(tail):
        try:
            record = json.loads(line)
        except ValueError:
            continue  # the first, partial line of the tail, or a line cut by a crash
        if found := {key: value for key, value in record.items() if key.startswith("val/")}:
            return found
    return {}


def _age(then: datetime, now: datetime) -> str:
    seconds = max(0, int((now - then).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
