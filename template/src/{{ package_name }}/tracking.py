"""Where metrics go. Every tracker named in `configs/logger/` receives every logged step.

A tracker that fails is reported once and dropped, so the others, and training, carry on; only a tracker
marked `required` (the JSONL file) stops the run.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from hydra.utils import instantiate
from omegaconf import DictConfig

from .files import appending, write_atomic

log = logging.getLogger(__name__)


class Tracker(Protocol):
    def record(self, provenance: Mapping[str, Any]) -> None: ...
    def log(self, step: int, metrics: Mapping[str, float]) -> None: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...


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
        if self.path.exists():
            kept = [line for line in _complete_lines(self.path) if json.loads(line)["step"] <= start_step]
            write_atomic(self.path, lambda out: out.write("".join(f"{line}\n" for line in kept).encode()))

    def record(self, provenance: Mapping[str, Any]) -> None:
        """Nothing to do: `provenance.json` beside `metrics.jsonl` is this tracker's copy."""

    def log(self, step: int, metrics: Mapping[str, float]) -> None:
        self._pending.append(json.dumps({"step": step, **metrics}))

    def flush(self) -> None:
        if self._pending:
            with appending(self.path) as out:
                out.write("\n".join(self._pending) + "\n")
            self._pending.clear()

    def close(self) -> None:
        self.flush()


def _complete_lines(path: Path) -> list[str]:
    """The file's lines, without a last line cut short by a kill in the middle of a write."""
    lines = path.read_text().splitlines()
    try:
        json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        lines.pop()
    return lines


class Tracking:
    """Fans each call out to every tracker."""

    def __init__(self, trackers: dict[str, Tracker]) -> None:
        self.trackers = trackers

    @classmethod
    def from_config(cls, logger_cfg: DictConfig, run_dir: Path, start_step: int = 0) -> Tracking:
        nodes = {name: node for name, node in logger_cfg.items() if node is not None}
        return cls({name: instantiate(node, run_dir=run_dir, start_step=start_step) for name, node in nodes.items()})

    def record(self, provenance: Mapping[str, Any] | None) -> None:
        if provenance is not None:  # None on ranks other than 0, which track nothing
            self._each("record", provenance)

    def log(self, step: int, metrics: Mapping[str, float]) -> None:
        self._each("log", step, metrics)

    def flush(self) -> None:
        self._each("flush")

    def close(self) -> None:
        self._each("close")

    def _each(self, method: str, *args: object) -> None:
        for name, tracker in list(self.trackers.items()):
            try:
                getattr(tracker, method)(*args)
            except Exception as error:  # one broken service must not stop the run or the other trackers
                if getattr(tracker, "required", False):
                    raise
                log.warning("tracker %s failed in %s (%s); it is switched off for this run", name, method, error)
                del self.trackers[name]
