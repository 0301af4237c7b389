"""A non-finite loss is found at the step it appeared, without reading each loss on the host."""

from __future__ import annotations

from importlib import import_module

import pytest
import torch

divergence = import_module("samebits.core.divergence")
distributed = import_module("samebits.core.distributed")

ALONE = distributed.Context(rank=0, local_rank=0, world_size=1)


def test_the_first_non_finite_step_is_named_even_past_the_buffer() -> None:
    watch = divergence.DivergenceWatch(4, torch.device("cpu"), ALONE)
    losses = [1.0, 0.9, 0.8, 0.7, 0.6, float("inf"), float("nan"), 0.5]
    with pytest.raises(divergence.Diverged, match="at step 6: the run diverged") as found:
        for step, loss in enumerate(losses, start=1):
            watch.record(step, torch.tensor(loss))
        watch.check()
    assert found.value.step == 6


def test_a_non_finite_first_loss_is_blamed_on_the_data_or_the_model_not_the_learning_rate() -> None:
    watch = divergence.DivergenceWatch(4, torch.device("cpu"), ALONE)
    watch.record(1, torch.tensor(float("nan")))
    with pytest.raises(divergence.Diverged, match="at step 1: before any update") as found:
        watch.check()
    assert "from the data or the model" in str(found.value) and "lower optim.lr" not in str(found.value)


def test_finite_losses_pass() -> None:
    watch = divergence.DivergenceWatch(3, torch.device("cpu"), ALONE)
    for step in range(1, 11):
        watch.record(step, torch.tensor(1.0 / step))
    watch.check()
    watch.check()  # nothing recorded since: nothing to do
