"""The best checkpoint: the one whose evaluation scored best on `trainer.best_metric`, kept past
`trainer.keep_last` for `<package> eval RUN_DIR --checkpoint best`.

`checkpoints/best.json` names it, and is written only once that checkpoint is durable:

    {"checkpoint": "step_000300.pt", "step": 300, "metric": "val/acc", "mode": "max", "value": 0.975}

An evaluation that beats the best so far makes the loop save a checkpoint at that step, if it would not anyway.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .files import write_json

log = logging.getLogger(__name__)

FILE = "best.json"
# `trainer.best_mode=auto`: lower is better for a metric named like one of these, higher for any other.
LOWER_IS_BETTER = ("loss", "bpc", "perplexity", "ppl", "error", "err", "nll", "mse", "mae", "rmse", "wer", "cer")


def resolve_mode(metric: str, mode: str) -> str:
    if mode != "auto":
        return mode
    name = metric.rpartition("/")[2].lower()
    return "min" if any(word in name.split("_") or name == word for word in LOWER_IS_BETTER) else "max"


class BestTracker:
    """The best value of one metric so far in a run, carried across resumes through best.json."""

    def __init__(self, folder: Path, metric: str, mode: str, resumed_step: int) -> None:
        self.folder, self.metric, self.mode = folder, metric, resolve_mode(metric, mode)
        self.value: float | None = None
        self.missing_reported = False
        found = read(folder)
        # A record past the checkpoint this attempt resumed from belongs to a rolled-back attempt: not carried.
        self.rolled_back = found["checkpoint"] if found and found["step"] > resumed_step else None
        if found and (found["metric"], found["mode"]) == (metric, self.mode) and not self.rolled_back:
            self.value = found["value"]

    def forget_rolled_back(self) -> None:
        """Remove a best.json that names a rolled-back attempt's checkpoint (the next save deletes that file): until
        this attempt evaluates, `eval --checkpoint best` finds no best rather than another attempt's."""
        if self.rolled_back:
            (self.folder / FILE).unlink(missing_ok=True)
            log.warning("best.json named %s, past the checkpoint this run resumed from: no best checkpoint until "
                        "the next evaluation", self.rolled_back)  # fmt: skip

    def improved_by(self, metrics: Mapping[str, float]) -> bool:
        """Whether `metrics` beat the best so far (and become the best)."""
        value = metrics.get(self.metric)
        if value is None:
            if not self.missing_reported:
                log.warning("trainer.best_metric=%s is not among the evaluation's metrics (%s): no best checkpoint",
                            self.metric, ", ".join(metrics))  # fmt: skip
                self.missing_reported = True
            return False
        if self.value is not None and not (value < self.value if self.mode == "min" else value > self.value):
            return False
        self.value = value
        return True

    def record(self, checkpoint: str, step: int, value: float) -> None:
        """Name `checkpoint`, durable now, as the best, with the `value` it scored (a later evaluation may have
        beaten it already, while it was being written)."""
        entry = {"checkpoint": checkpoint, "step": step, "metric": self.metric, "mode": self.mode, "value": value}
        write_json(self.folder / FILE, entry)


def read(folder: Path) -> dict[str, Any] | None:
    """The best checkpoint's record, or None when there is none or it is damaged."""
    path = folder / FILE
    try:
        found = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        log.warning("%s is damaged: no best checkpoint until the next improvement", path)
        return None
    keys = {"checkpoint", "step", "metric", "mode", "value"}
    return found if isinstance(found, dict) and keys <= found.keys() else None
