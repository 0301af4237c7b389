"""The run-folder source: `<runs>/<main_tag>/<run_name>/` read into records and metric curves.

Only files are read (config.yaml, provenance.json, status.json, summary.json, metrics.jsonl): nothing is locked,
so runs can be analysed while they train.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from ..core.errors import fail
from ..launch.status import FAST_LOADER
from .records import RunRecord, identity_settings

REPLACED = ".replaced-"  # `launch --force` keeps an old run folder aside under `<run>.replaced-<time>`


def main_tags(runs_dir: Path) -> list[str]:
    """The main tags that have a folder under `runs_dir`; `.launch` and other dot-folders are bookkeeping."""
    if not runs_dir.is_dir():
        return []
    return sorted(path.name for path in runs_dir.iterdir() if path.is_dir() and not path.name.startswith("."))


def run_dirs(runs_dir: Path, main_tag: str | None = None) -> list[Path]:
    """Every run folder under `runs_dir`, or under one main tag; an unknown main tag is a one-line error."""
    tags = main_tags(runs_dir)
    if main_tag is not None and main_tag not in tags:
        known = f"pick one of {', '.join(tags)}" if tags else "none yet"
        fail([f"no runs with main_tag {main_tag!r} in {runs_dir}: {known}"])
    return [
        run_dir
        for tag in ([main_tag] if main_tag is not None else tags)
        for run_dir in sorted((runs_dir / tag).iterdir())
        if is_run(run_dir)
    ]


def records(runs_dir: Path, main_tag: str | None = None) -> list[RunRecord]:
    return [read(run_dir) for run_dir in run_dirs(runs_dir, main_tag)]


def read(run_dir: Path) -> RunRecord:
    config = _yaml(run_dir / "config.yaml")
    provenance = _json(run_dir / "provenance.json")
    summary = _json(run_dir / "summary.json")
    # The last value of every logged metric; a finished run's final evaluation is the summary's.
    metrics = {key: value for line in lines(run_dir) for key, value in line.items() if key != "step"}
    metrics |= summary.get("metrics", {})
    return RunRecord(
        name=run_dir.name,
        main_tag=run_dir.parent.name,
        tags=tuple(config.get("tags") or ()),
        state=state(run_dir),
        commit=provenance.get("git", {}).get("commit"),
        config_sha256=provenance.get("run", {}).get("config_sha256"),
        settings=identity_settings(config),
        metrics=metrics,
        step=summary.get("step", _json(run_dir / "status.json").get("step")),
    )


def settings(run_dir: Path) -> dict[str, object]:
    return identity_settings(_yaml(run_dir / "config.yaml"))


def state(run_dir: Path) -> str:
    """How the run's latest attempt ended (or that it is running), from its files alone; "new" before any attempt.
    (`<package> status` also asks the launchers, to tell a lost run from a running one.)"""
    if (run_dir / "summary.json").exists():
        return "finished"
    return str(_json(run_dir / "status.json").get("state", "new"))


def lines(run_dir: Path) -> list[dict[str, Any]]:
    """The lines of metrics.jsonl, in order; a line cut short by a crash is skipped."""
    try:
        text = (run_dir / "metrics.jsonl").read_text()
    except OSError:
        return []
    found = []
    for line in text.splitlines():
        try:
            found.append(json.loads(line))
        except ValueError:
            continue
    return found


def curve(run_lines: list[dict[str, Any]], metric: str) -> dict[int, float]:
    """{step: value} of one metric."""
    return {line["step"]: line[metric] for line in run_lines if metric in line and "step" in line}


def is_run(path: Path) -> bool:
    return (
        path.is_dir()
        and REPLACED not in path.name
        and any((path / name).exists() for name in ("status.json", "config.yaml", "launch.json"))
    )


def _yaml(path: Path) -> dict[str, Any]:
    try:
        found = yaml.load(path.read_text(), Loader=FAST_LOADER)
    except (OSError, yaml.YAMLError):
        return {}
    return found if isinstance(found, dict) else {}


def _json(path: Path) -> dict[str, Any]:
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}
