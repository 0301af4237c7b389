"""Every RNG state survives a checkpoint round trip through torch.save / torch.load(weights_only=True)."""

from __future__ import annotations

import io
import random
from collections.abc import Callable
from importlib import import_module

import numpy as np
import torch

determinism = import_module("samebits.core.determinism")
hashing = import_module("samebits.core.hashing")
CPU = torch.device("cpu")


def draws() -> tuple[list[float], list[float], list[float]]:
    return torch.rand(4).tolist(), np.random.rand(4).tolist(), [random.random() for _ in range(4)]


def test_rng_states_round_trip_through_a_weights_only_checkpoint() -> None:
    determinism.seed_everything(123)
    draws()
    np.random.normal()  # leaves a cached Gaussian in NumPy's state
    buffer = io.BytesIO()
    torch.save({"rng": determinism.capture_rng_state(CPU)}, buffer)
    expected = draws()
    determinism.seed_everything(999)
    buffer.seek(0)
    determinism.restore_rng_state(torch.load(buffer, weights_only=True)["rng"], CPU)
    assert draws() == expected


def test_seeding_is_repeatable() -> None:
    determinism.seed_everything(5)
    first = draws()
    determinism.seed_everything(5)
    assert draws() == first


def test_the_rng_hash_changes_with_one_draw_from_any_generator() -> None:
    def hash_after(draw: Callable[[], object]) -> str:
        determinism.seed_everything(7)
        draw()
        return hashing.rng_sha256([determinism.capture_rng_state(CPU)])

    untouched = hash_after(lambda: None)
    assert hash_after(lambda: None) == untouched
    hashes = {hash_after(draw) for draw in (lambda: torch.rand(1), np.random.random, random.random)}
    assert len(hashes) == 3 and untouched not in hashes
