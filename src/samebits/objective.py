"""The objective protocol: how a batch becomes a loss, and which metrics evaluation reports. A project's objectives
(`research/objectives/`) implement it; the loop calls only what it names, whatever the task."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from torch import Tensor, nn


class Objective(Protocol):
    main_metric: str  # the metric a finished run reports, e.g. "val/acc"

    def loss(self, model: nn.Module, batch: tuple[Tensor, ...]) -> Tensor:
        """The training loss of one batch, averaged over it."""
        ...

    def evaluation_sums(self, model: nn.Module, batch: tuple[Tensor, ...]) -> dict[str, Tensor]:
        """Sums over one validation batch (e.g. summed loss, correct answers, count), added up by the loop."""
        ...

    def metrics(self, sums: dict[str, float]) -> dict[str, float]:
        """The reported metrics, named `val/<metric>`, from the sums over the whole validation set."""
        ...
