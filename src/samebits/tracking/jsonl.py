"""The run's own record of its metrics: `metrics.jsonl`, one JSON line per logged step."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import run_files
from ..core.files import appending, write_atomic
from ..core.states import AttemptState


@dataclass
class JsonlConfig:
    _target_: str = "samebits.tracking.jsonl.JsonlTracker"
    filename: str = run_files.METRICS


class JsonlTracker:
    """One JSON line per logged step in `<run_dir>/<filename>`.

    Lines are buffered and written on `flush` (before each checkpoint and at exit), because a write per step
    costs about a tenth of a small model's step. A run resumed at `start_step` first drops the lines that the
    interrupted attempt wrote past its checkpoint, so that each step is logged exactly once.
    """

    required = True  # the run's own record, and what the reproducibility proof compares: losing it is fatal

    def __init__(self, run_dir: Path, filename: str, start_step: int = 0) -> None:
        self.path = Path(run_dir) / filename
        self._pending: list[str] = []
        self.rows: list[dict[str, float]] = []  # what the file holds from earlier attempts, up to start_step
        if self.path.exists():
            kept = [line for line in _complete_lines(self.path) if json.loads(line)["step"] <= start_step]
            write_atomic(self.path, lambda out: out.write("".join(f"{line}\n" for line in kept).encode()))
            self.rows = [json.loads(line) for line in kept]

    def record(self, provenance: Mapping[str, Any]) -> None:
        """Nothing to do: `provenance.json` beside `metrics.jsonl` is this tracker's copy."""

    def log(self, step: int, metrics: Mapping[str, float]) -> None:
        self._pending.append(json.dumps({"step": step, **metrics}))

    def flush(self) -> None:
        if self._pending:
            with appending(self.path) as out:
                out.write("\n".join(self._pending) + "\n")
            self._pending.clear()

    def publish(self, step: int) -> None:
        """Nothing to do: `flush` wrote the lines before the checkpoint."""

    def close(self, state: AttemptState) -> None:
        self.flush()


def _complete_lines(path: Path) -> list[str]:
    """The file's lines, without a last line cut short by a kill in the middle of a write."""
    lines = path.read_text().splitlines()
    try:
        json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        lines.pop()
    return lines
