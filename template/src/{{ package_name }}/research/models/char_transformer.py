"""A small causal transformer over characters: embeddings, pre-norm blocks, and a head tied to the embedding."""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn import functional


class CharTransformer(nn.Module):
    """Maps token ids `(batch, time)` to next-token logits `(batch, time, vocab_size)`; position t sees only
    positions up to t. `context_length` is the longest input it takes (learned position embeddings)."""

    def __init__(
        self, vocab_size: int, context_length: int, width: int, depth: int, heads: int, dropout: float
    ) -> None:
        super().__init__()
        if width % heads:
            raise ValueError(f"model.width={width} must be a multiple of model.heads={heads}")
        self.context_length = context_length
        self.tokens = nn.Embedding(vocab_size, width)
        self.positions = nn.Embedding(context_length, width)
        self.dropout = nn.Dropout(dropout)
        self.blocks = nn.Sequential(*(Block(width, heads, dropout) for _ in range(depth)))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab_size, bias=False)
        self.head.weight = self.tokens.weight  # tied: one matrix reads and writes characters
        self.apply(_init)
        self.register_buffer("_steps", torch.arange(context_length), persistent=False)

    def forward(self, ids: Tensor) -> Tensor:
        hidden = self.dropout(self.tokens(ids) + self.positions(self._steps[: ids.shape[1]]))
        return self.head(self.norm(self.blocks(hidden)))


class Block(nn.Module):
    """Causal self-attention, then an MLP, each behind a LayerNorm and added to the residual stream."""

    def __init__(self, width: int, heads: int, dropout: float) -> None:
        super().__init__()
        self.heads, self.dropout_p = heads, dropout
        self.attention_norm = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.mlp_norm = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        batch, time, width = x.shape
        q, k, v = (
            part.view(batch, time, self.heads, width // self.heads).transpose(1, 2)
            for part in self.qkv(self.attention_norm(x)).split(width, dim=2)
        )
        attended = functional.scaled_dot_product_attention(
            q, k, v, is_causal=True, dropout_p=self.dropout_p if self.training else 0.0
        )
        x = x + self.dropout(self.out(attended.transpose(1, 2).reshape(batch, time, width)))
        return x + self.dropout(self.mlp(self.mlp_norm(x)))


def _init(module: nn.Module) -> None:
    if isinstance(module, nn.Linear | nn.Embedding):
        nn.init.normal_(module.weight, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)
