"""Where metrics go. Every tracker named in `configs/logger/` receives every logged step.

A tracker is a class with `record(provenance)`, `log(step, metrics)`, `flush()` and `close()`, one file per
tracker in this folder, built with `hydra.utils.instantiate` from its `configs/logger/` entry. A tracker that
fails is reported once and dropped, so the others, and training, carry on; only a tracker marked `required`
(the JSONL file) stops the run.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from hydra.utils import instantiate
from omegaconf import DictConfig

log = logging.getLogger(__name__)


class Tracker(Protocol):
    def record(self, provenance: Mapping[str, Any]) -> None: ...
    def log(self, step: int, metrics: Mapping[str, float]) -> None: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...


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
