"""A multilayer perceptron classifier (configs/model/mlp.yaml)."""

from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor, nn


class MLP(nn.Module):
    """A multilayer perceptron: Linear, ReLU and Dropout per hidden layer, then a linear classifier."""

    def __init__(self, in_features: int, num_classes: int, hidden_sizes: Sequence[int], dropout: float) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = in_features
        for hidden in hidden_sizes:
            layers += [nn.Linear(width, hidden), nn.ReLU(), nn.Dropout(dropout)]
            width = hidden
        layers.append(nn.Linear(width, num_classes))
        self.net = nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)
