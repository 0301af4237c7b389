"""What `logger=[...]` may hold: each tracker's settings, typed beside the tracker (configs/logger/ sets them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .jsonl import JsonlConfig
from .mlflow_tracker import MlflowConfig
from .wandb_tracker import WandbConfig


@dataclass
class LoggerConfig:
    jsonl: JsonlConfig = field(default_factory=JsonlConfig)  # always on: the run's own record, which proofs read
    wandb: WandbConfig | None = None
    mlflow: MlflowConfig | None = None
