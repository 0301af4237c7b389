"""The training order depends only on (seed, epoch), so a stream can resume at any batch."""

from __future__ import annotations

from importlib import import_module
from itertools import islice

import torch

from conftest import PACKAGE

data = import_module(f"{PACKAGE}.data")


def dataset(n: int = 50) -> object:
    return data.ArrayDataset(torch.arange(n, dtype=torch.float32)[:, None], torch.arange(n))


def labels(batches: object, count: int) -> list[list[int]]:
    return [batch[1].tolist() for batch in islice(batches, count)]


def test_each_epoch_is_a_permutation_drawn_from_seed_and_epoch() -> None:
    sampler = data.EpochBatchSampler(num_samples=50, batch_size=10, seed=3)
    first = [i for batch in sampler for i in batch]
    assert sorted(first) == list(range(50))
    sampler.epoch = 1
    assert [i for batch in sampler for i in batch] != first
    sampler.epoch = 0
    assert [i for batch in sampler for i in batch] == first


def test_stream_resumes_at_any_batch_even_across_epochs() -> None:
    straight = data.TrainStream(dataset(), batch_size=8, seed=0, num_workers=0)
    expected = labels(straight, 20)  # 6 batches per epoch: crosses three epoch boundaries
    first_half = data.TrainStream(dataset(), batch_size=8, seed=0, num_workers=0)
    head = labels(first_half, 9)
    resumed = data.TrainStream(dataset(), batch_size=8, seed=0, num_workers=0)
    resumed.seek(**first_half.position)
    assert first_half.position == {"epoch": 1, "batch": 3}
    assert head + labels(resumed, 11) == expected


def test_worker_count_does_not_change_the_batches() -> None:
    in_process = labels(data.TrainStream(dataset(), batch_size=8, seed=0, num_workers=0), 10)
    with_workers = labels(data.TrainStream(dataset(), batch_size=8, seed=0, num_workers=2), 10)
    assert with_workers == in_process
