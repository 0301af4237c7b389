"""The training order depends only on (seed, epoch), and a batch only on (seed, epoch, indices): resumable anywhere."""

from __future__ import annotations

from importlib import import_module
from itertools import islice

import torch
from torch import Tensor

batches = import_module("samebits.core.batches")


class Noisy(batches.ArrayDataset):
    """A dataset that draws per-sample randomness as the BatchRequest contract asks: from (seed, epoch, index)."""

    def __init__(self, size: int, noise_std: float) -> None:
        super().__init__(torch.arange(size, dtype=torch.float32)[:, None].repeat(1, 4), torch.arange(size))
        self.noise_std = noise_std

    def __getitems__(self, request: object) -> tuple[Tensor, ...]:
        inputs, labels = super().__getitems__(request.indices)
        noise = torch.randn((len(self), 4), generator=request.generator("noise"))
        return inputs + self.noise_std * noise[torch.as_tensor(request.indices)], labels


def stream(num_workers: int = 0, noise_std: float = 0.1, world: tuple[int, int] = (0, 1)) -> object:
    return batches.TrainStream(Noisy(50, noise_std), 8, seed=0, num_workers=num_workers, rank=world[0],
                               world_size=world[1])  # fmt: skip


def take(source: object, count: int) -> list[tuple[Tensor, ...]]:
    return list(islice(source, count))


def same(left: list, right: list) -> bool:
    if len(left) != len(right):
        return False
    return all(torch.equal(a, c) and torch.equal(b, d) for (a, b), (c, d) in zip(left, right, strict=True))


def test_each_epoch_is_a_permutation_drawn_from_seed_and_epoch() -> None:
    sampler = batches.EpochBatchSampler(num_samples=50, batch_size=10, seed=3)
    first = [i for request in sampler for i in request.indices]
    assert sorted(first) == list(range(50))
    sampler.epoch = 1
    assert [i for request in sampler for i in request.indices] != first
    sampler.epoch = 0
    assert [i for request in sampler for i in request.indices] == first


def test_derived_seeds_differ_by_seed_epoch_and_purpose() -> None:
    seeds = {batches.derive_seed(s, e, p) for s in (0, 1) for e in (0, 1) for p in ("order", "noise")}
    assert len(seeds) == 8 and all(0 <= seed < 2**63 for seed in seeds)


def test_stream_resumes_at_any_batch_even_across_epochs() -> None:
    expected = take(stream(), 20)  # 6 batches per epoch: crosses three epoch boundaries
    first_half = stream()
    head = take(first_half, 9)
    assert first_half.position == {"epoch": 1, "batch": 3}
    resumed = stream()
    resumed.seek(**first_half.position)
    assert same(head + take(resumed, 11), expected)


def test_noise_is_drawn_per_epoch_and_sample() -> None:
    drawn = take(stream(), 12)
    noisy_inputs, labels = drawn[0]
    assert not torch.equal(noisy_inputs, labels[:, None].float().repeat(1, 4))
    clean = take(stream(noise_std=0.0), 1)[0][0]
    assert torch.equal(clean, labels[:, None].float().repeat(1, 4))
    # the same sample gets different noise in another epoch
    first_epoch = {int(y): x for xs, ys in drawn[:6] for x, y in zip(xs, ys, strict=True)}
    second_epoch = {int(y): x for xs, ys in drawn[6:] for x, y in zip(xs, ys, strict=True)}
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


def test_evaluation_batches_are_in_order_and_leave_the_global_torch_rng_alone() -> None:
    dataset = batches.ArrayDataset(torch.arange(10.0), torch.arange(10))
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    for _ in range(3):
        seen = [labels.tolist() for _, labels in batches.evaluation_batches(dataset, batch_size=4)]
    assert seen == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert torch.equal(torch.rand(3), expected)
