"""Datasets, and the order in which training sees them.

The training order depends only on `(seed, epoch)`, never on worker processes or on how many batches were
drawn before, so a run can stop anywhere and resume at the same batch (see `TrainStream.position`).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import DataLoader, Dataset, Sampler


class ArrayDataset(Dataset[tuple[Tensor, Tensor]]):
    """Inputs and labels held in memory; `__getitems__` lets the DataLoader fetch a batch in one indexing."""

    def __init__(self, inputs: Tensor, labels: Tensor) -> None:
        self.inputs, self.labels = inputs, labels

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[Tensor, Tensor]:
        return self.inputs[index], self.labels[index]

    def __getitems__(self, indices: Sequence[int]) -> tuple[Tensor, Tensor]:
        index = torch.as_tensor(indices)
        return self.inputs[index], self.labels[index]


class EpochBatchSampler(Sampler[list[int]]):
    """Batches of a permutation drawn from `(seed, epoch)`, starting at batch `start` of that epoch."""

    def __init__(self, num_samples: int, batch_size: int, seed: int) -> None:
        self.num_samples, self.batch_size, self.seed = num_samples, batch_size, seed
        self.epoch, self.start = 0, 0

    def __len__(self) -> int:
        return self.num_samples // self.batch_size  # the last, partial batch is dropped

    def __iter__(self) -> Iterator[list[int]]:
        generator = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
        order = torch.randperm(self.num_samples, generator=generator).tolist()
        for batch in range(self.start, len(self)):
            yield order[batch * self.batch_size : (batch + 1) * self.batch_size]


class TrainStream:
    """An endless iterator over training batches that knows its position as `(epoch, batch)`."""

    def __init__(self, dataset: ArrayDataset, batch_size: int, seed: int, num_workers: int) -> None:
        self.sampler = EpochBatchSampler(len(dataset), batch_size, seed)
        self.loader = DataLoader(dataset, batch_sampler=self.sampler, num_workers=num_workers, collate_fn=_keep_batch)
        self.epoch, self.batch = 0, 0
        self._batches: Iterator[tuple[Tensor, Tensor]] | None = None

    @property
    def position(self) -> dict[str, int]:
        """Where the next batch comes from: enough to resume exactly."""
        return {"epoch": self.epoch, "batch": self.batch}

    def seek(self, epoch: int, batch: int) -> None:
        self.epoch, self.batch, self._batches = epoch, batch, None

    def __iter__(self) -> TrainStream:
        return self

    def __next__(self) -> tuple[Tensor, Tensor]:
        while True:
            if self._batches is None:
                self.sampler.epoch, self.sampler.start = self.epoch, self.batch
                self._batches = iter(self.loader)
            try:
                batch = next(self._batches)
            except StopIteration:
                self.epoch, self.batch, self._batches = self.epoch + 1, 0, None
                continue
            self.batch += 1
            return batch


class Digits:
    """scikit-learn's bundled 8x8 handwritten digits (1,797 images, 10 classes): no download needed.

    The arrays are cached as `digits.npz` under `root` on first use, so later runs skip importing
    scikit-learn (about 4 s). The train/validation split depends only on `split_seed`.
    """

    def __init__(
        self,
        root: str | Path,
        batch_size: int,
        val_fraction: float,
        split_seed: int,
        num_samples: int,
        num_features: int,
        num_classes: int,
    ) -> None:
        inputs, labels = _cached_digits(Path(root) / "digits.npz")
        if inputs.shape != (num_samples, num_features) or int(labels.max()) + 1 != num_classes:
            raise ValueError(f"digits data has shape {tuple(inputs.shape)}, not ({num_samples}, {num_features})")
        order = torch.randperm(num_samples, generator=torch.Generator().manual_seed(split_seed))
        num_val = round(num_samples * val_fraction)
        self.val = ArrayDataset(inputs[order[:num_val]], labels[order[:num_val]])
        self.train = ArrayDataset(inputs[order[num_val:]], labels[order[num_val:]])
        self.batch_size = batch_size

    def train_stream(self, seed: int, num_workers: int) -> TrainStream:
        return TrainStream(self.train, self.batch_size, seed, num_workers)

    def val_batches(self) -> DataLoader[tuple[Tensor, Tensor]]:
        return DataLoader(self.val, batch_size=512, collate_fn=_keep_batch)


def _keep_batch(batch: tuple[Tensor, Tensor]) -> tuple[Tensor, Tensor]:
    return batch  # `__getitems__` already returned stacked tensors


def _cached_digits(path: Path) -> tuple[Tensor, Tensor]:
    if not path.exists():
        from sklearn.datasets import load_digits  # slow import, paid once per data folder

        digits = load_digits()
        path.parent.mkdir(parents=True, exist_ok=True)
        # Write to a temporary file and rename, so that a concurrent or killed run never leaves half a file.
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".npz.tmp", delete=False) as tmp:
            np.savez(tmp, inputs=(digits.data / 16.0).astype(np.float32), labels=digits.target.astype(np.int64))
        os.replace(tmp.name, path)
    with np.load(path) as arrays:
        return torch.from_numpy(arrays["inputs"]), torch.from_numpy(arrays["labels"])
