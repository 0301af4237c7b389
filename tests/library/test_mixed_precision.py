"""`trainer.precision`, seen inside the forward passes: under bf16 the layers compute in bfloat16, in training
steps and in evaluation, and under 32 in float32. A finished run alone would not show it: a run whose autocast
was switched off trains just as well (test_trainer_switches.py compares the weights such a run ends with)."""

from __future__ import annotations

from importlib import import_module

import pytest
import torch
from torch import nn

from library.helpers.project import PACKAGE

train = import_module("samebits.train")
precision = import_module("samebits.core.precision")
evaluation = import_module("samebits.core.evaluation")
mlp = import_module(f"{PACKAGE}.research.models.mlp")
classification = import_module(f"{PACKAGE}.research.objectives.classification")

CPU = torch.device("cpu")
EXPECTED = {"32": torch.float32, "bf16": torch.bfloat16}


def watched(model: nn.Module) -> list[torch.dtype]:
    """The dtypes of every Linear layer's output, in the order the layers run."""
    seen: list[torch.dtype] = []
    for layer in model.modules():
        if isinstance(layer, nn.Linear):
            layer.register_forward_hook(lambda module, args, output: seen.append(output.dtype))
    return seen


def batch(size: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return torch.randn(size, 16, generator=generator), torch.randint(0, 4, (size,), generator=generator)


@pytest.mark.parametrize("mixed", ["32", "bf16"])
def test_training_steps_and_evaluation_compute_in_the_run_s_precision(mixed: str) -> None:
    torch.manual_seed(0)
    model = mlp.MLP(16, 4, [32], dropout=0.0)
    seen = watched(model)
    objective, chosen = classification.Classification(), precision.Precision(mixed, CPU)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train.train_step(model, objective, optimizer, iter([batch(), batch()]), 2, chosen, 1.0)
    assert seen == [EXPECTED[mixed]] * 4, f"training: {seen}"  # two layers, two micro-batches
    assert all(parameter.dtype == torch.float32 for parameter in model.parameters())  # the weights stay float32
    seen.clear()
    evaluation.evaluate(model, objective, [batch(16)], CPU, chosen)
    assert seen == [EXPECTED[mixed]] * 2, f"evaluation: {seen}"
