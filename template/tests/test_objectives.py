"""Objectives turn a batch into a loss and validation sums into metrics, whatever the model."""

from __future__ import annotations

import math
from importlib import import_module

import torch
from torch import nn

from helpers.project import PACKAGE

classification = import_module(f"{PACKAGE}.research.objectives.classification")
language_modeling = import_module(f"{PACKAGE}.research.objectives.language_modeling")


class Fixed(nn.Module):
    """Returns the given logits whatever its input."""

    def __init__(self, logits: torch.Tensor) -> None:
        super().__init__()
        self.logits = logits

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return self.logits


def test_classification_reports_loss_and_accuracy() -> None:
    objective = classification.Classification()
    logits = torch.tensor([[2.0, 0.0], [0.0, 2.0], [2.0, 0.0]])
    batch = (torch.zeros(3, 1), torch.tensor([0, 1, 1]))
    loss = objective.loss(Fixed(logits), batch)
    sums = {key: float(value) for key, value in objective.evaluation_sums(Fixed(logits), batch).items()}
    metrics = objective.metrics(sums)
    assert metrics["val/acc"] == 2 / 3
    assert math.isclose(metrics["val/loss"], float(loss), rel_tol=1e-6)
    assert objective.main_metric in metrics


def test_language_modeling_reports_bits_per_character() -> None:
    objective = language_modeling.LanguageModeling()
    vocab = 8
    uniform = torch.zeros(2, 5, vocab)  # every character equally likely: log2(8) = 3 bits each
    batch = (torch.zeros(2, 5, dtype=torch.long), torch.randint(vocab, (2, 5)))
    sums = {key: float(value) for key, value in objective.evaluation_sums(Fixed(uniform), batch).items()}
    metrics = objective.metrics(sums)
    assert sums["count"] == 10
    assert math.isclose(metrics["val/bpc"], 3.0, rel_tol=1e-6)
    assert math.isclose(metrics["val/loss"], math.log(8), rel_tol=1e-6)
    assert math.isclose(float(objective.loss(Fixed(uniform), batch)), math.log(8), rel_tol=1e-6)
    assert objective.main_metric == "val/bpc"
