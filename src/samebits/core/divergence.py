"""Divergence: a non-finite loss stops the run as failed, naming the first step it appeared at.

Reading each step's loss on the host would force a device sync per step. Instead the losses wait on the device
in a small buffer, which is read only where the loop syncs anyway (at logged steps and before each checkpoint),
so that a diverged state never reaches a checkpoint, and the last good one is kept.
"""

from __future__ import annotations

import torch

from . import distributed

NONE = torch.iinfo(torch.int64).max


class Diverged(Exception):
    def __init__(self, step: int) -> None:
        # The first step's loss is computed before any update: the learning rate cannot have made it non-finite.
        cause = (
            "before any update, so it comes from the data or the model (a nan or inf in the inputs, the initial "
            "weights, the objective), not from the learning rate: check them"
            if step == 1
            else "the run diverged; lower optim.lr, or clip gradients with trainer.grad_clip_norm"
        )
        super().__init__(f"the loss became non-finite (nan or inf) at step {step}: {cause}")
        self.step = step


class DivergenceWatch:
    def __init__(self, capacity: int, device: torch.device, context: distributed.Context) -> None:
        self.losses = torch.zeros(capacity, device=device)
        self.context, self.count, self.first_step = context, 0, 0

    def record(self, step: int, loss: torch.Tensor) -> None:
        if self.count == len(self.losses):
            self.check()
        if self.count == 0:
            self.first_step = step
        self.losses[self.count] = loss
        self.count += 1

    def check(self) -> None:
        """Raise Diverged on every rank if any rank saw a non-finite loss since the last check."""
        if self.count:
            steps = torch.arange(self.first_step, self.first_step + self.count, device=self.losses.device)
            finite = torch.isfinite(self.losses[: self.count])
            first = torch.where(finite, NONE, steps).min()
            self.count = 0
            step = int(distributed.smallest(self.context, first).item())
            if step != NONE:
                raise Diverged(step)
