"""Classification: cross-entropy on class labels; evaluation reports loss and accuracy."""

from __future__ import annotations

from torch import Tensor, nn
from torch.nn import functional


class Classification:
    """Batches are `(inputs, labels)`; the model maps inputs to one logit per class."""

    main_metric = "val/acc"  # what a finished run reports (and returns, for Hydra's sweepers)

    def loss(self, model: nn.Module, batch: tuple[Tensor, ...]) -> Tensor:
        inputs, labels = batch
        return functional.cross_entropy(model(inputs), labels)

    def evaluation_sums(self, model: nn.Module, batch: tuple[Tensor, ...]) -> dict[str, Tensor]:
        """Sums over one validation batch; the loop adds them up over the validation set."""
        inputs, labels = batch
        logits = model(inputs)
        return {
            "loss": functional.cross_entropy(logits, labels, reduction="sum"),
            "correct": (logits.argmax(dim=1) == labels).sum(),
            "count": labels.new_tensor(labels.numel()),
        }

    def metrics(self, sums: dict[str, float]) -> dict[str, float]:
        return {"val/loss": sums["loss"] / sums["count"], "val/acc": sums["correct"] / sums["count"]}
