"""The run-folder source: `<runs>/<main_tag>/<run_name>/` read into records and metric curves.

Only files are read (config.yaml, provenance.json, status.json, summary.json, metrics.jsonl): nothing is locked,
so runs can be analysed while they train.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from ..core.files import read_json_object
from ..core.run_files import RunFiles
from ..core.runs import run_dirs
from ..launch.observe import Backends, observe, observe_all
from ..launch.status import FAST_LOADER
from .records import RunRecord, identity_settings


def records(runs_dir: Path, main_tag: str | None = None) -> list[RunRecord]:
    found = run_dirs(runs_dir, main_tag)
    return [read(run_dir, seen.state) for run_dir, seen in zip(found, observe_all(found), strict=True)]


def read(run_dir: Path, state: str | None = None) -> RunRecord:
    """One run's record; its state as `observe` decides it (pass it when already observed)."""
    files = RunFiles(run_dir)
    config, provenance, summary = _yaml(files.config), _json(files.provenance), _json(files.summary)
    # The last value of every logged metric; a finished run's final evaluation is the summary's.
    metrics = {key: value for line in lines(run_dir) for key, value in line.items() if key != "step"}
    metrics |= summary.get("metrics", {})
    return RunRecord(
        name=run_dir.name,
        main_tag=run_dir.parent.name,
        tags=tuple(config.get("tags") or ()),
        state=state or observe(run_dir, Backends()).state,
        commit=provenance.get("git", {}).get("commit"),
        config_sha256=provenance.get("run", {}).get("config_sha256"),
        settings=identity_settings(config),
        metrics=metrics,
        step=summary.get("step", _json(files.status).get("step")),
    )


def settings(run_dir: Path) -> dict[str, object]:
    return identity_settings(_yaml(RunFiles(run_dir).config))


def lines(run_dir: Path) -> list[dict[str, Any]]:
    """The lines of metrics.jsonl, in order; a line cut short by a crash is skipped."""
    try:
        text = RunFiles(run_dir).metrics.read_text()
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


def _yaml(path: Path) -> dict[str, Any]:
    try:
        found = yaml.load(path.read_text(), Loader=FAST_LOADER)
    except (OSError, yaml.YAMLError):
        return {}
    return found if isinstance(found, dict) else {}


def _json(path: Path) -> dict[str, Any]:
    return read_json_object(path) or {}
