"""The training order depends only on (seed, epoch) and the noise on (seed, epoch, index): resumable anywhere."""

from __future__ import annotations

from importlib import import_module
from itertools import islice
from pathlib import Path

import torch

from conftest import PACKAGE

data = import_module(f"{PACKAGE}.data")


def stream(num_workers: int = 0, noise_std: float = 0.1, world: tuple[int, int] = (0, 1)) -> object:
    inputs = torch.arange(50, dtype=torch.float32)[:, None].repeat(1, 4)
    dataset = data.AugmentedDataset(inputs, torch.arange(50), noise_std=noise_std, seed=7)
    return data.TrainStream(dataset, batch_size=8, seed=0, num_workers=num_workers, rank=world[0], world_size=world[1])


def take(batches: object, count: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    return list(islice(batches, count))


def same(left: list, right: list) -> bool:
    if len(left) != len(right):
        return False
    return all(torch.equal(a, c) and torch.equal(b, d) for (a, b), (c, d) in zip(left, right, strict=True))


def test_each_epoch_is_a_permutation_drawn_from_seed_and_epoch() -> None:
    sampler = data.EpochBatchSampler(num_samples=50, batch_size=10, seed=3)
    first = [i for _, batch in sampler for i in batch]
    assert sorted(first) == list(range(50))
    sampler.epoch = 1
    assert [i for _, batch in sampler for i in batch] != first
    sampler.epoch = 0
    assert [i for _, batch in sampler for i in batch] == first


def test_stream_resumes_at_any_batch_even_across_epochs() -> None:
    expected = take(stream(), 20)  # 6 batches per epoch: crosses three epoch boundaries
    first_half = stream()
    head = take(first_half, 9)
    assert first_half.position == {"epoch": 1, "batch": 3}
    resumed = stream()
    resumed.seek(**first_half.position)
    assert same(head + take(resumed, 11), expected)


def test_noise_is_drawn_per_epoch_and_sample() -> None:
    batches = take(stream(), 12)
    noisy_inputs, labels = batches[0]
    assert not torch.equal(noisy_inputs, labels[:, None].float().repeat(1, 4))
    clean = take(stream(noise_std=0.0), 1)[0][0]
    assert torch.equal(clean, labels[:, None].float().repeat(1, 4))
    # the same sample gets different noise in another epoch
    first_epoch = {int(y): x for xs, ys in batches[:6] for x, y in zip(xs, ys, strict=True)}
    second_epoch = {int(y): x for xs, ys in batches[6:] for x, y in zip(xs, ys, strict=True)}
    common = first_epoch.keys() & second_epoch.keys()
    assert common and all(not torch.equal(first_epoch[i], second_epoch[i]) for i in common)


def test_worker_count_does_not_change_the_batches_or_their_noise() -> None:
    assert same(take(stream(num_workers=2), 10), take(stream(num_workers=0), 10))


def test_new_iterators_leave_the_global_torch_rng_alone() -> None:
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    resumed = stream(num_workers=0)
    resumed.seek(epoch=2, batch=3)
    take(resumed, 8)  # creates two iterators
    assert torch.equal(torch.rand(3), expected)


def test_ranks_split_each_global_batch() -> None:
    whole = take(stream(noise_std=0.0), 3)
    halves = [take(stream(noise_std=0.0, world=(rank, 2)), 3) for rank in (0, 1)]
    for step, (_, labels) in enumerate(whole):
        assert torch.equal(halves[0][step][1], labels[0::2]) and torch.equal(halves[1][step][1], labels[1::2])


def test_evaluation_leaves_the_global_torch_rng_alone(data_dir: Path) -> None:
    digits = data.Digits(
        data_dir, 64, 0.2, split_seed=0, noise_std=0.05, num_samples=1797, num_features=64, num_classes=10
    )
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    for _ in range(3):
        list(digits.val_batches())
    assert torch.equal(torch.rand(3), expected)
