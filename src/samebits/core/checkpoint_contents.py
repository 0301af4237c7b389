"""What a checkpoint holds and where it came from: the state of every component a step depends on (`snapshot`),
what a run resuming from it must share with the run that wrote it (`Origin`, `resume_problems`), and putting each
component back (`restore`). How a checkpoint is written and found whole is core/checkpoint.py's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.optim import Optimizer
from torch.optim.lr_scheduler import LRScheduler

from .batches import TrainStream
from .determinism import restore_rng_state
from .precision import Precision


@dataclass(frozen=True)
class Origin:
    """What made a checkpoint, and what a run resuming from it must share (or be told to ignore)."""

    config_sha256: str
    commit: str | None  # None outside a git checkout
    uv_lock_sha256: str | None

    @classmethod
    def of(cls, provenance: dict[str, Any]) -> Origin:
        return cls(provenance["run"]["config_sha256"], provenance["git"]["commit"], provenance["uv_lock_sha256"])

    def as_dict(self) -> dict[str, str | None]:
        return {"config_sha256": self.config_sha256, "commit": self.commit, "uv_lock_sha256": self.uv_lock_sha256}


def snapshot(
    model: nn.Module,
    optimizer: Optimizer,
    scheduler: LRScheduler,
    precision: Precision,
    stream: TrainStream,
    rng: list[Any],
    origin: Origin,
) -> dict[str, Any]:
    """Everything a step depends on, and where it came from. `rng` holds one RNG state per process, in rank order."""
    return {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "scaler": precision.state_dict(),  # fp16's gradient scale; empty otherwise
        "data": stream.position,
        "rng": rng,
        "origin": origin.as_dict(),
    }


def resume_problems(state: dict[str, Any], origin: Origin, world_size: int, allow_code_change: bool) -> list[str]:
    """Why this run may not continue from `state`, one line each (nothing when it may). A run's config never
    changes (what it learns would no longer match its config.yaml); its code may, when the user says so. New code
    may add or retire settings, which changes the config hash: the run folder's claim has then compared every
    setting both sides share, by value (core/run_folder.py)."""
    made, step, found = state["origin"], state["step"], []
    if made["config_sha256"] != origin.config_sha256 and not allow_code_change:
        found.append(
            f"the checkpoint at step {step} was made with config {made['config_sha256'][:12]}, not with this "
            f"config {origin.config_sha256[:12]}: pick another run name (or, if new code added or retired a setting, "
            "pass trainer.allow_code_change=true)"
        )
    for key, what in (("commit", "commit"), ("uv_lock_sha256", "uv.lock")):
        if made[key] != origin.as_dict()[key] and not allow_code_change:
            found.append(
                f"the checkpoint at step {step} was made by {what} {str(made[key])[:12]}, not by this {what} "
                f"{str(origin.as_dict()[key])[:12]}: check out that commit, or pass trainer.allow_code_change=true"
            )
    if len(state["rng"]) != world_size:
        found.append(f"the checkpoint was made by {len(state['rng'])} processes, not {world_size}: resume with as many")
    return found


def restore(
    state: dict[str, Any],
    model: nn.Module,
    optimizer: Optimizer,
    scheduler: LRScheduler,
    precision: Precision,
    stream: TrainStream,
    rank: int,
    device: torch.device,
) -> int:
    """Put every component back where the checkpoint left it; return its step."""
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    precision.load_state_dict(state.get("scaler"))  # checkpoints from before precision existed hold none
    stream.seek(**state["data"])
    restore_rng_state(state["rng"][rank], device)
    return state["step"]
