"""Characters of an English text as token ids, for a causal language model: predict each next character."""

from __future__ import annotations

import torch
from samebits import ArrayDataset, BatchRequest
from torch import Tensor
from torch.utils.data import Dataset

from . import pydoc_topics


class PydocText:
    """The text of `pydoc_data.topics` (see pydoc_topics.py), split by topic, as windows of `context_length`
    characters whose targets are the same characters shifted by one.

    `encode` and `decode` map text to token ids and back, over the alphabet of the whole text.
    """

    def __init__(
        self,
        root: str,
        batch_size: int,
        eval_batch_size: int,
        context_length: int,
        val_every: int,
        vocab_size: int,
        test_every: int = 0,
    ) -> None:
        del root  # nothing to download or cache: the text comes with Python
        self.alphabet = pydoc_topics.alphabet()
        if len(self.alphabet) != vocab_size:
            raise ValueError(f"the text has {len(self.alphabet)} symbols, not data.vocab_size={vocab_size}")
        self._ids = {char: index for index, char in enumerate(self.alphabet)}
        train, val, test = (self.encode(text) for text in pydoc_topics.held_out_splits(val_every, test_every))
        self.batch_size, self.eval_batch_size, self.context_length = batch_size, eval_batch_size, context_length
        self.train = RandomOffsetWindows(train, context_length)
        self.val = fixed_windows(val, context_length)
        self.test = fixed_windows(test, context_length) if test_every else None  # `<package> eval --split test`

    def encode(self, text: str) -> Tensor:
        unknown = sorted(set(text) - self._ids.keys())
        if unknown:
            raise ValueError(f"characters not in the text's alphabet: {''.join(unknown)!r}")
        return torch.tensor([self._ids[char] for char in text], dtype=torch.long)

    def decode(self, ids: Tensor) -> str:
        return "".join(self.alphabet[index] for index in ids.tolist())


class RandomOffsetWindows(Dataset[tuple[Tensor, Tensor]]):
    """Consecutive windows of the training text, shifted each epoch by an offset drawn from `(seed, epoch)`, so
    that each epoch cuts the text at other places. Sample i is the window starting at `offset + i * length`."""

    def __init__(self, tokens: Tensor, context_length: int) -> None:
        self.tokens, self.context_length = tokens, context_length
        self._span = torch.arange(context_length + 1)

    def __len__(self) -> int:
        return pydoc_topics.windows(len(self.tokens), self.context_length)

    def __getitems__(self, request: BatchRequest) -> tuple[Tensor, Tensor]:
        offset = int(torch.randint(self.context_length, (), generator=request.generator("offset")))
        starts = offset + torch.as_tensor(request.indices) * self.context_length
        windows = self.tokens[starts[:, None] + self._span]
        return windows[:, :-1], windows[:, 1:]


def fixed_windows(tokens: Tensor, context_length: int) -> ArrayDataset:
    """Evaluation windows: fixed, side by side from the start of the held-out text."""
    count = (len(tokens) - 1) // context_length
    starts = torch.arange(count)[:, None] * context_length + torch.arange(context_length + 1)
    return ArrayDataset(tokens[starts][:, :-1], tokens[starts][:, 1:])
