"""Resuming is exact, checked in-process in seconds: 60 steps equal 30 steps, a checkpoint, and 30 more, in float32
and with bfloat16 autocast over accumulated micro-batches.

Every tensor is compared with torch.equal: the weights, the optimizer's moments, the scheduler, every loss and
the random generators. Dropout and the noisy batches draw from the generators, and 30 steps stop in the middle
of an epoch, so a restore that skipped the optimizer, the batch position or an RNG fails here, without waiting
for the slower reproducibility proof.
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from library.helpers.project import PACKAGE

checkpoint = import_module("samebits.core.checkpoint")
contents = import_module("samebits.core.checkpoint_contents")
determinism = import_module("samebits.core.determinism")
hashing = import_module("samebits.core.hashing")
precision = import_module("samebits.core.precision")
batches = import_module("samebits.core.batches")
train = import_module("samebits.train")
digits = import_module(f"{PACKAGE}.research.datasets.digits")
mlp = import_module(f"{PACKAGE}.research.models.mlp")
classification = import_module(f"{PACKAGE}.research.objectives.classification")
schedules = import_module(f"{PACKAGE}.research.schedules")

CPU = torch.device("cpu")
ORIGIN = contents.Origin("c" * 64, "a" * 40, "l" * 64)


class Parts:
    """One run's components, built as the loop builds them."""

    def __init__(self, data_dir: Path, window: int = 1, mixed: str = "32") -> None:
        determinism.seed_everything(0)
        self.window, self.precision = window, precision.Precision(mixed, CPU)
        data = digits.Digits(data_dir, 64, 512, 0.2, 0, 0.05, 1797, 64, 10)
        self.model = mlp.MLP(64, 10, [32], dropout=0.1)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=3e-3)
        self.scheduler = schedules.warmup_cosine(self.optimizer, 10, 60, 0.05)
        self.stream = batches.TrainStream(data.train, 64, seed=0, num_workers=0)
        self.objective = classification.Classification()

    def steps(self, count: int) -> list[torch.Tensor]:
        losses = []
        for _ in range(count):
            batches = (next(self.stream) for _ in range(self.window))
            args = (self.model, self.objective, self.optimizer, batches, self.window, self.precision, 1.0)
            losses.append(train.train_step(*args))
            self.scheduler.step()
        return losses

    def state(self) -> dict[str, Any]:
        rng = [determinism.capture_rng_state(CPU)]
        parts = (self.model, self.optimizer, self.scheduler, self.precision, self.stream)
        return contents.snapshot(*parts, rng, ORIGIN)


def assert_same(left: Any, right: Any, where: str = "") -> None:
    """Equal in every tensor, bit for bit, and in every other value, recursively."""
    if isinstance(left, torch.Tensor):
        assert isinstance(right, torch.Tensor) and torch.equal(left, right), f"{where} differs"
    elif isinstance(left, dict):
        assert left.keys() == right.keys(), f"{where} keys differ"
        for key in left:
            assert_same(left[key], right[key], f"{where}.{key}")
    elif isinstance(left, list | tuple):
        assert len(left) == len(right), f"{where} lengths differ"
        for index, (a, b) in enumerate(zip(left, right, strict=True)):
            assert_same(a, b, f"{where}[{index}]")
    else:
        assert left == right, f"{where}: {left!r} != {right!r}"


@pytest.mark.parametrize(("window", "mixed"), [(1, "32"), (2, "bf16")])
def test_sixty_steps_equal_thirty_then_a_resume_then_thirty(
    data_dir: Path, tmp_path: Path, window: int, mixed: str
) -> None:
    straight = Parts(data_dir, window, mixed)
    straight_losses = straight.steps(60)

    first = Parts(data_dir, window, mixed)
    first_losses = first.steps(30)  # 22 batches per epoch: this stops in the middle of an epoch
    saved = checkpoint.CheckpointDir(tmp_path / "checkpoints", keep_last=1)
    saved.save(first.state(), 30)

    determinism.seed_everything(123)  # a new process would start from other generator states
    resumed = Parts(data_dir, window, mixed)
    state = saved.load_latest()
    parts = (resumed.model, resumed.optimizer, resumed.scheduler, resumed.precision, resumed.stream)
    assert contents.restore(state, *parts, 0, CPU) == 30
    assert state["data"] == {"epoch": 30 * window // 22, "batch": 30 * window % 22}  # a window's every batch
    resumed_losses = resumed.steps(30)

    assert_same(first_losses + resumed_losses, straight_losses, "losses")
    assert_same(resumed.state(), straight.state(), "state")
    assert hashing.params_sha256(resumed.model) == hashing.params_sha256(straight.model)


def test_the_parameter_hash_sees_one_element_of_the_last_tensor() -> None:
    model = nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2))
    before = hashing.params_sha256(model)
    with torch.no_grad():
        last = list(model.state_dict().values())[-1]
        last.view(-1)[-1] += 1e-6
    assert hashing.params_sha256(model) != before
