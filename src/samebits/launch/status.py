"""What every run is doing: `<package> status [--tag MAIN_TAG]`, one row per run folder, then counts per state.

A run's state combines its run folder, its launch record and its backend's live jobs (launch/observe.py). Besides
the states of a training attempt (running, paused, preempted, interrupted, failed, finished), a run can be
queued (the local queue), pending (submitted; a requeued Slurm job is pending again), lost (says running, but its
process or job is gone: `launch` resumes it), unreadable (a damaged record, named in a warning line) or new (a
folder without an attempt).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import yaml

from ..core.run_files import RunFiles
from ..core.runs import run_dirs
from ..core.states import EXPLAINED, RUN_STATES, RunState
from . import local
from .observe import Backends, Observed, observe, observe_all

# libyaml where PyYAML has it, as status reads every config (docs/decisions/0008-status-reads-with-libyaml.md)
FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
TAIL_BYTES = 64 * 1024  # enough for the last evaluation line of metrics.jsonl


@dataclass(frozen=True)
class Run:
    tag: str
    name: str
    state: RunState
    step: int
    max_steps: int | None
    metrics: dict[str, float]
    updated_at: datetime | None
    reason: str = ""
    job_id: str | None = None
    restarts: int = 0
    trackers_off: dict[str, str] = field(default_factory=dict)


def read(run_dir: Path, backends: Backends | None = None, seen: Observed | None = None) -> Run:
    seen = seen or observe(run_dir, backends or Backends())
    return Run(
        tag=run_dir.parent.name,
        name=run_dir.name,
        state=seen.state,
        step=seen.step,
        max_steps=_max_steps(RunFiles(run_dir).config),
        metrics=_last_evaluation(RunFiles(run_dir).metrics),
        updated_at=seen.updated_at,
        reason=seen.reason,
        job_id=seen.job_id,
        restarts=seen.restarts,
        trackers_off=seen.trackers_off,
    )


def report(root: Path, tag: str | None = None) -> list[str]:
    """The status table of the runs under `root`, or of one main tag; an unknown tag is a one-line error."""
    found = run_dirs(root, tag)  # before anything starts: an unknown main tag stops here
    local.advance(root)  # a local job that ended since frees its place for the next queued run
    runs = collect(root, tag, found) if found else []
    return table(runs) if runs else [f"no runs yet in {root}"]


def collect(root: Path, tag: str | None = None, found: list[Path] | None = None) -> list[Run]:
    """Every run under `root` (`<root>/<main_tag>/<run_name>/`), or under one main tag; `found`: those run folders,
    already listed."""
    found = run_dirs(root, tag) if found is None else found
    return [read(run_dir, seen=seen) for run_dir, seen in zip(found, observe_all(found), strict=True)]


def table(runs: list[Run], now: datetime | None = None) -> list[str]:
    """One row per run, then a line of counts per state."""
    now = now or datetime.now(UTC)
    header = ("run", "state", "step", "last evaluation", "job", "restarts", "updated")
    rows = [
        (
            f"{run.tag}/{run.name}",
            run.state,
            f"{run.step}/{run.max_steps}" if run.max_steps else str(run.step),
            "  ".join(f"{key} {value:.4g}" for key, value in run.metrics.items()) or "-",
            run.job_id or "-",
            str(run.restarts),
            f"{_age(run.updated_at, now)} ago" if run.updated_at else "-",
        )
        for run in runs
    ]
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(len(header))]
    lines = [_line(row, widths) for row in [header, *rows]]
    lines += [f"  {run.tag}/{run.name}: {run.reason}" for run in runs if run.state in EXPLAINED and run.reason]
    lines += [
        f"  {run.tag}/{run.name}: tracker {tracker} switched off ({why}); it catches up at the next attempt"
        for run in runs
        for tracker, why in run.trackers_off.items()
    ]
    counts = Counter(run.state for run in runs)
    ordered = sorted(counts, key=lambda state: RUN_STATES.index(state) if state in RUN_STATES else len(RUN_STATES))
    lines.append(f"{len(runs)} run{'s' * (len(runs) != 1)}: " + ", ".join(f"{counts[s]} {s}" for s in ordered))
    return lines


def _line(cells: tuple[str, ...], widths: list[int]) -> str:
    return "  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)).rstrip()


def _max_steps(config: Path) -> int | None:
    """`trainer.max_steps` of a run's config.yaml, parsing its `trainer:` block only where it finds one: parsing
    the whole config of every finished run was most of what `status` spent on hundreds of them."""
    try:
        text = config.read_text()
        return int(yaml.load(_top_level_block(text, "trainer") or text, Loader=FAST_LOADER)["trainer"]["max_steps"])
    except (OSError, ValueError, KeyError, TypeError, yaml.YAMLError):
        return None


def _top_level_block(text: str, key: str) -> str | None:
    """The lines of a block-style top-level `key:` and its indented body, as config.yaml is written; None if none."""
    lines = text.splitlines()
    try:
        start = lines.index(f"{key}:")
    except ValueError:
        return None
    end = next((i for i in range(start + 1, len(lines)) if lines[i][:1] not in ("", " ", "\t")), len(lines))
    return "\n".join(lines[start:end])


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
