"""Language modelling: predict each next token; evaluation reports loss (nats per token) and bits per character."""

from __future__ import annotations

import math

from torch import Tensor, nn
from torch.nn import functional


class LanguageModeling:
    """Batches are `(inputs, targets)` of token ids, targets being the inputs shifted by one; the model maps
    `(batch, time)` ids to `(batch, time, vocab)` logits. With one token per character, the loss in bits is
    the bits per character: what an ideal coder driven by the model would spend on the text."""

    main_metric = "val/bpc"

    def loss(self, model: nn.Module, batch: tuple[Tensor, ...]) -> Tensor:
        inputs, targets = batch
        return functional.cross_entropy(model(inputs).flatten(0, 1), targets.flatten())

    def evaluation_sums(self, model: nn.Module, batch: tuple[Tensor, ...]) -> dict[str, Tensor]:
        inputs, targets = batch
        loss = functional.cross_entropy(model(inputs).flatten(0, 1), targets.flatten(), reduction="sum")
        return {"loss": loss, "count": targets.new_tensor(targets.numel())}

    def metrics(self, sums: dict[str, float]) -> dict[str, float]:
        nats = sums["loss"] / sums["count"]
        return {"val/loss": nats, "val/bpc": nats / math.log(2)}
