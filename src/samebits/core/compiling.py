"""`trainer.compile=true`: training runs the model through `torch.compile`, where this machine can compile it.

Compiled kernels fuse and reorder floating-point work, so a compiled run and an eager run of the same config do
not match bit for bit (and `trainer.compile` is part of a run's name). A compiled run still repeats itself: the
same config, lock and machine give the same bits, through resumes too. Checkpoints hold the plain model's
weights, loadable with or without compiling; evaluation runs the plain model.
"""

from __future__ import annotations

import logging
import os
import shutil

import torch
from torch import nn

log = logging.getLogger(__name__)


def compiled(model: nn.Module, device: torch.device) -> nn.Module:
    """`torch.compile(model)`, or `model` itself, with one line saying why, where compiling cannot work here."""
    if (reason := why_not(device)) is not None:
        log.warning("trainer.compile=true, but %s: training without compiling", reason)
        return model
    log.info("compiling the model with torch.compile (the first steps take longer)")
    return torch.compile(model)  # type: ignore[return-value]


def why_not(device: torch.device) -> str | None:
    """Why torch.compile's default backend (inductor) cannot compile for `device` here, or None if it can."""
    if not torch._dynamo.is_dynamo_supported():
        return "torch.compile does not support this Python or platform"
    if device.type == "cpu" and not any(shutil.which(name) for name in _cpp_compilers()):
        return "inductor needs a C++ compiler on CPU and none was found (install g++, or set CXX)"
    if device.type == "cuda":
        from torch.utils._triton import has_triton

        if not has_triton():
            return "inductor needs Triton on CUDA and it is not installed"
    if device.type not in ("cpu", "cuda"):
        return f"inductor does not compile for {device.type}"
    return None


def _cpp_compilers() -> list[str]:
    return [os.environ["CXX"]] if os.environ.get("CXX") else ["g++", "clang++", "c++"]
