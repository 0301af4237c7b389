"""The runs folder: where runs live, its main tags, and which folders in it are runs. Every command that lists
runs (status, tags, collect, plot, launch's local queue) asks here, so that they all count the same runs.

- The runs folder is RUNS_DIR (relative to the project) or `runs/`, as in configs/paths/default.yaml.
- A main tag is a folder directly under it; dot-folders (`.launch`, the local queue's) are bookkeeping.
- A run is a folder under a main tag holding a run's record (status.json, config.yaml or launch.json). A folder
  that `launch --force` set aside, `<run>.replaced-<time>`, is kept whole for reference and is not a run.
"""

from __future__ import annotations

import os
from pathlib import Path

from . import run_files
from .errors import UsageError

REPLACED = ".replaced-"


def runs_root(project_root: Path) -> Path:
    """The runs folder; RUNS_DIR naming something that is not a folder is a one-line error."""
    root = project_root / (os.environ.get("RUNS_DIR") or "runs")
    if root.exists() and not root.is_dir():
        raise UsageError(f"RUNS_DIR={root} is a file, not a folder: point RUNS_DIR at the folder that holds your runs")
    return root


def main_tags(root: Path) -> list[str]:
    if not root.is_dir():
        return []
    return sorted(path.name for path in root.iterdir() if path.is_dir() and not path.name.startswith("."))


def run_dirs(root: Path, main_tag: str | None = None) -> list[Path]:
    """Every run folder under `root`, or under one main tag (an unknown one is a one-line error), sorted."""
    tags = main_tags(root)
    if main_tag is not None and main_tag not in tags:
        known = f"pick one of {', '.join(tags)}" if tags else "none yet"
        raise UsageError(f"no runs with main_tag {main_tag!r} in {root}: {known}")
    chosen = [main_tag] if main_tag is not None else tags
    return [run_dir for tag in chosen for run_dir in sorted((root / tag).iterdir()) if is_run(run_dir)]


def is_run(path: Path) -> bool:
    return REPLACED not in path.name and path.is_dir() and any((path / name).exists() for name in run_files.RECORDS)
