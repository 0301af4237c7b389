"""Where metrics go: `metrics.jsonl` always, and wandb or MLflow when `logger=[jsonl,wandb,mlflow]` names them.

A tracker is a class with `record(provenance)`, `log(step, metrics)`, `flush()`, `publish(step)` and
`close(state)`, one file per tracker in this folder, built with `hydra.utils.instantiate` from its
`configs/logger/` entry.

Each step reaches every tracker exactly once, through kills, preemptions and requeues:
- `log` only buffers: a step's metrics stay in the process until the checkpoint that covers the step is durable.
- `flush` runs before each checkpoint: the JSONL lines reach the disk first, so a checkpoint never covers a step
  that `metrics.jsonl` lacks. A resumed run drops the lines past its checkpoint.
- `publish(step)` runs once the checkpoint at `step` is durable: the other trackers send the steps up to it. A
  service keeps what it was sent, so a resumed attempt first asks it for the last step it holds, and sends the
  lines of `metrics.jsonl` after that step (lost in a kill between checkpoint and sending) before anything new.
The live view of wandb or MLflow therefore lags training by at most `trainer.ckpt_every` steps.

A tracker that fails, or does not answer within its `timeout_s`, is reported once (a warning, and a line in
`status.json`) and switched off for the rest of the attempt, so the others and training carry on. Only JSONL,
the run's own record, stops the run when it fails.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from ..core.config import flatten, identity
from ..core.states import AttemptState

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunInfo:
    """What a tracker is told about the run it records."""

    run_dir: Path
    name: str
    main_tag: str
    tags: tuple[str, ...]
    config: dict[str, Any]  # the resolved config, as config.yaml holds it
    settings: dict[str, Any]  # the identity settings (core/config.py), flattened to dotted keys
    start_step: int  # the step of the checkpoint this attempt resumed from; 0 for a fresh run
    history: tuple[dict[str, float], ...]  # the lines of metrics.jsonl up to start_step


class Tracker(Protocol):
    def record(self, provenance: Mapping[str, Any]) -> None: ...
    def log(self, step: int, metrics: Mapping[str, float]) -> None: ...
    def flush(self) -> None: ...
    def publish(self, step: int) -> None: ...
    def close(self, state: AttemptState) -> None: ...


class Tracking:
    """Fans each call out to every tracker, and switches off a tracker that fails."""

    def __init__(self, trackers: dict[str, Tracker], on_failure: Callable[[str, str], None] | None = None) -> None:
        self.trackers = trackers
        self.on_failure = on_failure

    @classmethod
    def from_config(
        cls, cfg: DictConfig, run_dir: Path, start_step: int, on_failure: Callable[[str, str], None] | None = None
    ) -> Tracking:
        """JSONL first (it trims the lines past `start_step`, and its lines are what the others may lack), then
        every other tracker that `cfg.logger` sets."""
        jsonl = instantiate(cfg.logger.jsonl, run_dir=run_dir, start_step=start_step)
        services = {name: node for name, node in cfg.logger.items() if name != "jsonl" and node}
        if not services:  # JSONL alone (the default) needs no RunInfo: nothing more to do at start
            return cls({"jsonl": jsonl}, on_failure)
        config = OmegaConf.to_container(cfg, resolve=True)
        assert isinstance(config, dict)
        run = RunInfo(
            run_dir=run_dir,
            name=cfg.run_name,
            main_tag=cfg.main_tag,
            tags=tuple(cfg.tags),
            config=config,
            settings=flatten(identity(cfg)),
            start_step=start_step,
            history=tuple(jsonl.rows),
        )
        # partial: `run` holds configs with `_target_`s, which instantiate must not build
        others = {name: instantiate(node, _partial_=True)(run=run) for name, node in services.items()}
        return cls({"jsonl": jsonl, **others}, on_failure)

    def record(self, provenance: Mapping[str, Any] | None) -> None:
        if provenance is not None:  # None on ranks other than 0, which track nothing
            self._each("record", shareable(provenance))

    def log(self, step: int, metrics: Mapping[str, float]) -> None:
        self._each("log", step, metrics)

    def flush(self) -> None:
        self._each("flush")

    def publish(self, step: int) -> None:
        self._each("publish", step)

    def close(self, state: AttemptState) -> None:
        self._each("close", state)

    def _each(self, method: str, *args: object) -> None:
        for name, tracker in list(self.trackers.items()):
            try:
                getattr(tracker, method)(*args)
            except Exception as error:  # one broken service must not stop the run or the other trackers
                if getattr(tracker, "required", False):
                    raise
                reason = f"failed in {method}: {str(error).splitlines()[0] if str(error) else type(error).__name__}"
                log.warning("tracker %s %s; it is switched off for the rest of this attempt", name, reason)
                del self.trackers[name]
                if self.on_failure is not None:
                    self.on_failure(name, reason)


def shareable(provenance: Mapping[str, Any]) -> dict[str, Any]:
    """What trackers may receive of `provenance.json`: not the environment, the command line or the remote's URL,
    which can hold secrets (a token in a URL), and which `provenance.json` in the run folder keeps."""
    git = {key: value for key, value in provenance.get("git", {}).items() if key != "remote_url"}
    kept = {key: value for key, value in provenance.items() if key not in ("environment", "command", "git")}
    return kept | {"git": git}
