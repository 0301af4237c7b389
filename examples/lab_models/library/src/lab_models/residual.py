"""A residual MLP classifier: a projection, then blocks of LayerNorm, Linear, GELU, Dropout added to the stream."""

from __future__ import annotations

from torch import Tensor, nn


class ResidualMLP(nn.Module):
    def __init__(self, in_features: int, num_classes: int, width: int, depth: int, dropout: float) -> None:
        super().__init__()
        self.project = nn.Linear(in_features, width)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(width), nn.Linear(width, width), nn.GELU(), nn.Dropout(dropout))
            for _ in range(depth)
        )
        self.head = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, num_classes))

    def forward(self, x: Tensor) -> Tensor:
        hidden = self.project(x)
        for block in self.blocks:
            hidden = hidden + block(hidden)
        return self.head(hidden)
