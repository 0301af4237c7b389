"""Content hashes that let two runs be compared bit for bit, months apart."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import torch


def params_sha256(model: torch.nn.Module) -> str:
    """SHA-256 over the state_dict tensors, in key order, as contiguous CPU bytes."""
    digest = hashlib.sha256()
    for tensor in model.state_dict().values():
        flat = tensor.detach().to("cpu").contiguous().reshape(-1)
        digest.update(flat.view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def config_sha256(settings: dict[str, Any]) -> str:
    """SHA-256 of resolved settings, independent of key order."""
    canonical = json.dumps(settings, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()
