"""Gradient accumulation, in-process: a step over N micro-batches is a step over their concatenation, and under
DDP the gradients are averaged across processes once per step, at the window's last micro-batch.

Plain SGD without clipping, so that a gradient N times too large moves the weights N times too far: AdamW
normalises the gradient's scale away and clipping to a norm hides it, so a run with the default optimiser and
clipping trains about as well with the division by N missing."""

# No `from __future__ import annotations`: DDP checks a communication hook's annotations as objects, not text.
import socket
from collections.abc import Iterator
from importlib import import_module

import pytest
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from library.helpers.project import PACKAGE

train = import_module("samebits.train")
precision = import_module("samebits.core.precision")
mlp = import_module(f"{PACKAGE}.research.models.mlp")
classification = import_module(f"{PACKAGE}.research.objectives.classification")

CPU = torch.device("cpu")
WINDOW, MICRO = 3, 8
Batch = tuple[torch.Tensor, torch.Tensor]


def micro_batches() -> list[Batch]:
    generator = torch.Generator().manual_seed(0)
    return [(torch.randn(MICRO, 16, generator=generator), torch.randint(0, 4, (MICRO,), generator=generator))
            for _ in range(WINDOW)]  # fmt: skip


def model() -> nn.Module:
    torch.manual_seed(0)
    return mlp.MLP(16, 4, [32], dropout=0.0)  # no dropout: both sides compute the very same function


def one_step(net: nn.Module, batches: list[Batch], window: int) -> torch.Tensor:
    optimizer = torch.optim.SGD(net.parameters(), lr=0.5)
    objective = classification.Classification()
    return train.train_step(net, objective, optimizer, iter(batches), window, precision.Precision("32", CPU), None)


def test_an_accumulated_step_is_one_step_over_the_concatenated_batch() -> None:
    batches = micro_batches()
    whole = (torch.cat([inputs for inputs, _ in batches]), torch.cat([labels for _, labels in batches]))
    untrained = model()
    with torch.no_grad():
        micro_losses = [classification.Classification().loss(untrained, batch) for batch in batches]

    accumulated, concatenated = model(), model()
    accumulated_loss = one_step(accumulated, batches, WINDOW)
    concatenated_loss = one_step(concatenated, [whole], 1)

    for (name, left), right in zip(accumulated.named_parameters(), concatenated.parameters(), strict=True):
        torch.testing.assert_close(left.grad, right.grad, msg=lambda why, name=name: f"{name}.grad: {why}")
        torch.testing.assert_close(left, right, msg=lambda why, name=name: f"{name} after the step: {why}")
    torch.testing.assert_close(accumulated_loss, torch.stack(micro_losses).mean())  # the mean, not the sum
    torch.testing.assert_close(accumulated_loss, concatenated_loss)


@pytest.fixture
def process_group() -> Iterator[None]:
    """A real gloo process group of one process: DDP's reducer, no_sync and comm hooks run as with several."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("window", [1, WINDOW])
def test_under_ddp_gradients_are_averaged_once_per_step_at_the_last_micro_batch(
    process_group: None, window: int
) -> None:
    """DDP's communication hook runs when the gradients are all-reduced: here it records which micro-batch's
    backward pass did so. Outside `no_sync()` every backward pass would; inside it, none does."""
    inner = model()
    wrapped = DistributedDataParallel(inner)
    running: list[int] = []  # the micro-batch whose forward ran last: its backward follows it
    inner.register_forward_pre_hook(lambda module, args: running.append(len(running)))
    synced: list[int] = []

    def record(state: object, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
        synced.append(running[-1])
        done: torch.futures.Future[torch.Tensor] = torch.futures.Future()
        done.set_result(bucket.buffer())  # one process: the average is the gradient itself
        return done

    wrapped.register_comm_hook(None, record)
    one_step(wrapped, micro_batches()[:window], window)
    assert running == list(range(window))
    assert synced and set(synced) == {window - 1}, f"gradients all-reduced in micro-batches {synced}"
