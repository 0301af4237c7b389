"""How training and evaluation draw their batches, so that a run can stop anywhere and resume at the same batch.

The training order depends only on `(seed, epoch)`: each epoch is a permutation drawn from them, and the part
of an epoch already consumed is skipped on resume (`TrainStream.position` is two integers). A dataset receives
each training batch as a `BatchRequest` and draws any randomness (augmentation, crops, noise) from
`request.generator(...)`, never from a global RNG or a DataLoader worker. A batch is then a pure function of
`(seed, epoch, indices)`, the same for any `num_workers` and after any resume.

What a dataset class (research/datasets/) provides, for the loop to use through this module:
    train        a torch Dataset: `len(train)` samples, `train.__getitems__(request)` -> tuple of tensors
    val          a torch Dataset of fixed samples, e.g. `ArrayDataset(inputs, targets)`
    batch_size   samples per training step, over all processes
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor
from torch.utils.data import DataLoader, Dataset, Sampler

from . import preemption


@dataclass(frozen=True)
class BatchRequest:
    """Which samples make the next training batch, and the run's seed and epoch to draw their randomness from."""

    seed: int
    epoch: int
    indices: list[int]

    def generator(self, purpose: str) -> torch.Generator:
        """A generator seeded by `(seed, epoch, purpose)`: draw a whole epoch's randomness from it and index it
        by sample, so that a sample's randomness never depends on which batch or worker fetched it."""
        return torch.Generator().manual_seed(derive_seed(self.seed, self.epoch, purpose))


def derive_seed(seed: int, epoch: int, purpose: str) -> int:
    """One seed per (run seed, epoch, purpose): no two purposes or epochs share a random stream."""
    digest = hashlib.sha256(f"{seed}/{epoch}/{purpose}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1  # torch takes seeds below 2**63


class ArrayDataset(Dataset[tuple[Tensor, ...]]):
    """Tensors held in memory, indexed together; `__getitems__` fetches a whole batch in one indexing."""

    def __init__(self, *tensors: Tensor) -> None:
        if len({len(tensor) for tensor in tensors}) != 1:
            raise ValueError(f"tensors of different lengths: {[len(tensor) for tensor in tensors]}")
        self.tensors = tensors

    def __len__(self) -> int:
        return len(self.tensors[0])

    def __getitem__(self, index: int) -> tuple[Tensor, ...]:
        return tuple(tensor[index] for tensor in self.tensors)

    def __getitems__(self, indices: Sequence[int]) -> tuple[Tensor, ...]:
        index = torch.as_tensor(indices)
        return tuple(tensor[index] for tensor in self.tensors)


class EpochBatchSampler(Sampler[BatchRequest]):
    """Batches of a permutation drawn from `(seed, epoch)`, starting at batch `start` of that epoch.

    Under DDP every rank draws the same global batch and keeps its own slice `[rank::world_size]`.
    """

    def __init__(self, num_samples: int, batch_size: int, seed: int, rank: int = 0, world_size: int = 1) -> None:
        self.num_samples, self.batch_size, self.seed = num_samples, batch_size, seed
        self.rank, self.world_size = rank, world_size
        self.epoch, self.start = 0, 0

    def __len__(self) -> int:
        return self.num_samples // self.batch_size  # the last, partial batch is dropped

    def __iter__(self) -> Iterator[BatchRequest]:
        generator = torch.Generator().manual_seed(derive_seed(self.seed, self.epoch, "order"))
        order = torch.randperm(self.num_samples, generator=generator).tolist()
        for batch in range(self.start, len(self)):
            indices = order[batch * self.batch_size : (batch + 1) * self.batch_size]
            yield BatchRequest(self.seed, self.epoch, indices[self.rank :: self.world_size])


class TrainStream:
    """An endless iterator over training batches that knows its position as `(epoch, batch)`."""

    def __init__(
        self,
        dataset: Dataset[tuple[Tensor, ...]],
        batch_size: int,
        seed: int,
        num_workers: int,
        rank: int = 0,
        world_size: int = 1,
    ) -> None:
        self.sampler = EpochBatchSampler(len(dataset), batch_size, seed, rank, world_size)  # type: ignore[arg-type]
        self.dataset, self.num_workers = dataset, num_workers
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
        self._batches: Iterator[tuple[Tensor, ...]] | None = None

    @property
    def position(self) -> dict[str, int]:
        """Where the next batch comes from: enough to resume exactly."""
        return {"epoch": self.epoch, "batch": self.batch}

    def seek(self, epoch: int, batch: int) -> None:
        self.epoch, self.batch, self._batches = epoch, batch, None

    def __iter__(self) -> TrainStream:
        return self

    def __next__(self) -> tuple[Tensor, ...]:
        while True:
            if self._batches is None:
                self.sampler.epoch, self.sampler.start = self.epoch, self.batch
                self._batches = iter(self.loader) if self.num_workers else self._fetched_here()
            try:
                batch = next(self._batches)
            except StopIteration:
                self.epoch, self.batch, self._batches = self.epoch + 1, 0, None
                continue
            self.batch += 1
            return batch

    def _fetched_here(self) -> Iterator[tuple[Tensor, ...]]:
        """Without workers, the batches the DataLoader would give, fetched directly: its per-batch bookkeeping
        (a profiler scope, the fetcher, the collate call) was a measurable part of a small model's step
        (docs/decisions/0010-batches-fetched-without-dataloader.md)."""
        fetch = self.dataset.__getitems__  # type: ignore[attr-defined]
        return (fetch(request) for request in self.sampler)


def evaluation_batches(dataset: Dataset[tuple[Tensor, ...]], batch_size: int) -> DataLoader[tuple[Tensor, ...]]:
    """The fixed samples of `dataset` in order, `batch_size` at a time."""
    # A private generator: each evaluation would otherwise take a draw from the global torch RNG, and
    # `trainer.eval_every` would change the dropout masks of training.
    collate = _keep_batch if hasattr(dataset, "__getitems__") else None
    return DataLoader(dataset, batch_size=batch_size, collate_fn=collate, generator=torch.Generator())


def _keep_batch(batch: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
    return batch  # `__getitems__` already returned stacked tensors
