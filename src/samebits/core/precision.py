"""Mixed precision (`trainer.precision`): how forward passes, backward passes and optimizer steps run.

- `32`: float32 throughout: the same operations, and the same bits, as a loop without this module.
- `bf16`: forward passes under `torch.autocast` in bfloat16, on CPU and GPU. bfloat16 has float32's range, so
  gradients need no scaling.
- `fp16`: forward passes under autocast in float16, with a gradient scaler against underflow. The scaler's state
  (its scale and growth count) goes into every checkpoint: a resumed run must carry on with the same scale to
  repeat the uninterrupted one. CUDA only (core/checks.py says so before anything loads).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Any

import torch
from torch import nn

from .config import PrecisionName

DTYPES: dict[PrecisionName, torch.dtype | None] = {"32": None, "bf16": torch.bfloat16, "fp16": torch.float16}


class Precision:
    def __init__(self, precision: PrecisionName, device: torch.device) -> None:
        self.dtype, self.device_type = DTYPES[precision], device.type
        # Disabled (32 and bf16), the scaler passes every call straight through: scale() returns the loss as it
        # is and step() calls optimizer.step().
        self.scaler = torch.amp.GradScaler(device.type, enabled=precision == "fp16")

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        if self.dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device_type, dtype=self.dtype)

    def backward(self, loss: torch.Tensor) -> None:
        self.scaler.scale(loss).backward()

    def step(self, optimizer: torch.optim.Optimizer, parameters: Iterable[nn.Parameter], clip: float | None) -> None:
        """Clip the true gradients (unscaled first), then step; under fp16 a step whose gradients overflowed is
        skipped and the scale lowered, as GradScaler does."""
        if clip is not None:
            self.scaler.unscale_(optimizer)
            nn.utils.clip_grad_norm_(parameters, clip)
        self.scaler.step(optimizer)
        self.scaler.update()

    def state_dict(self) -> dict[str, Any]:
        return self.scaler.state_dict()  # empty unless fp16

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        if state:  # checkpoints from before fp16 existed, and those of 32 and bf16 runs, hold none
            self.scaler.load_state_dict(state)
