"""Content hashes that let two runs be compared bit for bit, months apart.

torch is imported by the hashes of tensors only: naming a run (`config_sha256`) must not load it, so that the
commands that only read run folders (`status`, `launch`'s plan) start in a fraction of a second."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch


def params_sha256(model: torch.nn.Module) -> str:
    """SHA-256 over the state_dict tensors, in key order, as contiguous CPU bytes."""
    digest = hashlib.sha256()
    for tensor in model.state_dict().values():
        digest.update(_raw_bytes(tensor))
    return digest.hexdigest()


def rng_sha256(states: Any) -> str:
    """SHA-256 over RNG states as `determinism.capture_rng_state` gives them (one per process, in rank order).

    Equal hashes at the end of two runs mean that any further draw, from any generator, would be equal too.
    """
    import torch

    digest = hashlib.sha256()

    def feed(value: Any) -> None:
        if isinstance(value, torch.Tensor):
            digest.update(_raw_bytes(value))
        elif isinstance(value, dict):
            for key in sorted(value):
                digest.update(repr(key).encode())
                feed(value[key])
        elif isinstance(value, list | tuple):
            digest.update(f"[{len(value)}".encode())
            for item in value:
                feed(item)
        else:
            digest.update(repr(value).encode())

    feed(states)
    return digest.hexdigest()


def config_sha256(settings: dict[str, Any]) -> str:
    """SHA-256 of resolved settings, independent of key order."""
    canonical = json.dumps(settings, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _raw_bytes(tensor: torch.Tensor) -> bytes:
    import torch

    return tensor.detach().to("cpu").contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
