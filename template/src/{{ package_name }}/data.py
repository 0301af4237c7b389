"""Datasets, and the order in which training sees them.

The training order depends only on `(seed, epoch)`, and augmentation noise only on `(seed, epoch, index)`:
never on DataLoader worker processes or on how many batches were drawn before. So a run can stop anywhere and
resume at the same batch (see `TrainStream.position`), with any `num_workers`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import DataLoader, Dataset, Sampler

from . import preemption
from .files import write_atomic


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


class AugmentedDataset(ArrayDataset):
    """Training samples with Gaussian input noise drawn from `(seed, epoch, index)`.

    Batches arrive as `(epoch, indices)`. Each epoch's noise is drawn once for the whole set from a generator
    seeded by `(seed, epoch)` (about 1 ms per epoch here), and sample `index` takes row `index` of it.
    """

    def __init__(self, inputs: Tensor, labels: Tensor, noise_std: float, seed: int) -> None:
        super().__init__(inputs, labels)
        self.noise_std, self.seed = noise_std, seed
        self._noise_epoch, self._noise = -1, torch.empty(0)

    def __getitems__(self, batch: tuple[int, Sequence[int]]) -> tuple[Tensor, Tensor]:  # type: ignore[override]
        epoch, indices = batch
        inputs, labels = super().__getitems__(indices)
        if self.noise_std == 0:
            return inputs, labels
        if self._noise_epoch != epoch:
            generator = torch.Generator().manual_seed(_mix(self.seed, epoch, salt=2))
            self._noise_epoch, self._noise = epoch, torch.randn(self.inputs.shape, generator=generator)
        return inputs + self.noise_std * self._noise[torch.as_tensor(indices)], labels


class EpochBatchSampler(Sampler[tuple[int, list[int]]]):
    """Batches of a permutation drawn from `(seed, epoch)`, starting at batch `start` of that epoch.

    Under DDP every rank draws the same global batch and keeps its own slice `[rank::world_size]`.
    """

    def __init__(self, num_samples: int, batch_size: int, seed: int, rank: int = 0, world_size: int = 1) -> None:
        self.num_samples, self.batch_size, self.seed = num_samples, batch_size, seed
        self.rank, self.world_size = rank, world_size
        self.epoch, self.start = 0, 0

    def __len__(self) -> int:
        return self.num_samples // self.batch_size  # the last, partial batch is dropped

    def __iter__(self) -> Iterator[tuple[int, list[int]]]:
        generator = torch.Generator().manual_seed(_mix(self.seed, self.epoch, salt=1))
        order = torch.randperm(self.num_samples, generator=generator).tolist()
        for batch in range(self.start, len(self)):
            indices = order[batch * self.batch_size : (batch + 1) * self.batch_size]
            yield self.epoch, indices[self.rank :: self.world_size]


class TrainStream:
    """An endless iterator over training batches that knows its position as `(epoch, batch)`."""

    def __init__(
        self,
        dataset: AugmentedDataset,
        batch_size: int,
        seed: int,
        num_workers: int,
        rank: int = 0,
        world_size: int = 1,
    ) -> None:
        self.sampler = EpochBatchSampler(len(dataset), batch_size, seed, rank, world_size)
        self.loader = DataLoader(
            dataset,
            batch_sampler=self.sampler,
            num_workers=num_workers,
            collate_fn=_keep_batch,
            worker_init_fn=preemption.ignore_in_worker,  # the main process handles preemption signals
            # Each new iterator draws a worker seed; from the global torch RNG, that draw would make a run that
            # resumes mid-epoch (one more iterator) diverge from one that did not. This generator is private.
            generator=torch.Generator().manual_seed(seed),
        )
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
        noise_std: float,
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
        self.train_inputs, self.train_labels = inputs[order[num_val:]], labels[order[num_val:]]
        self.batch_size, self.noise_std = batch_size, noise_std

    def train_stream(self, seed: int, num_workers: int, rank: int = 0, world_size: int = 1) -> TrainStream:
        train = AugmentedDataset(self.train_inputs, self.train_labels, self.noise_std, seed)
        return TrainStream(train, self.batch_size, seed, num_workers, rank, world_size)

    def val_batches(self) -> DataLoader[tuple[Tensor, Tensor]]:
        # A private generator: each evaluation would otherwise take a draw from the global torch RNG, and
        # `trainer.eval_every` would change the dropout masks of training.
        return DataLoader(self.val, batch_size=512, collate_fn=_keep_batch, generator=torch.Generator())


def _mix(seed: int, epoch: int, salt: int) -> int:
    """One generator seed per (seed, epoch, purpose), so that no two of them share a stream."""
    return (seed * 1_000_003 + epoch) * 7 + salt


def _keep_batch(batch: tuple[Tensor, Tensor]) -> tuple[Tensor, Tensor]:
    return batch  # `__getitems__` already returned stacked tensors


def _cached_digits(path: Path) -> tuple[Tensor, Tensor]:
    if not path.exists():
        from sklearn.datasets import load_digits  # slow import, paid once per data folder

        digits = load_digits()
        inputs, labels = (digits.data / 16.0).astype(np.float32), digits.target.astype(np.int64)
        write_atomic(path, lambda out: np.savez(out, inputs=inputs, labels=labels))  # safe against concurrent runs
    with np.load(path) as arrays:
        return torch.from_numpy(arrays["inputs"]), torch.from_numpy(arrays["labels"])
