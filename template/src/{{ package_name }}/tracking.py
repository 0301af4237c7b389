"""Where metrics go. Every tracker named in `configs/logger/` receives every logged step.

A tracker that fails is reported once and dropped, so the others, and training, carry on.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from hydra.utils import instantiate
from omegaconf import DictConfig

log = logging.getLogger(__name__)


class Tracker(Protocol):
    def log(self, step: int, metrics: Mapping[str, float]) -> None: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...


class JsonlTracker:
    """One JSON line per logged step in `<run_dir>/<filename>`.

    Lines are buffered and written on `flush` (at each evaluation and at exit), because a write per step
    costs about a tenth of a small model's step. A run that starts at `start_step` first drops the lines a
    previous, interrupted attempt wrote past it, so that each step is logged exactly once.
    """

    def __init__(self, run_dir: Path, filename: str, start_step: int = 0) -> None:
        self.path = Path(run_dir) / filename
        self._pending: list[str] = []
        if self.path.exists():
            kept = [line for line in self.path.read_text().splitlines() if json.loads(line)["step"] <= start_step]
            self.path.write_text("".join(f"{line}\n" for line in kept))

    def log(self, step: int, metrics: Mapping[str, float]) -> None:
        self._pending.append(json.dumps({"step": step, **metrics}))

    def flush(self) -> None:
        if self._pending:
            with self.path.open("a") as out:
                out.write("\n".join(self._pending) + "\n")
            self._pending.clear()

    def close(self) -> None:
        self.flush()


class Tracking:
    """Fans each call out to every tracker."""

    def __init__(self, trackers: dict[str, Tracker]) -> None:
        self.trackers = trackers

    @classmethod
    def from_config(cls, logger_cfg: DictConfig, run_dir: Path, start_step: int = 0) -> Tracking:
        nodes = {name: node for name, node in logger_cfg.items() if node is not None}
        return cls({name: instantiate(node, run_dir=run_dir, start_step=start_step) for name, node in nodes.items()})

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
            except Exception as error:  # one broken tracker must not stop the run or the other trackers
                log.warning("tracker %s failed in %s (%s); it is switched off for this run", name, method, error)
                del self.trackers[name]
