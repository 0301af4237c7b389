"""Seeding and the switches that make a run repeat bit for bit on the same hardware and lock."""

from __future__ import annotations

import os
import random
from typing import Any

import numpy as np
import torch


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device


def make_deterministic(num_threads: int, device: str) -> torch.device:
    """Fix the thread count and ask torch for deterministic kernels; return the device to train on.

    The thread count is part of the result: a sum split over 1 or 2 threads rounds differently.
    """
    if device.startswith("cuda"):
        # cuBLAS needs a fixed workspace to be deterministic; it is read when CUDA initialises.
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
    torch.set_num_threads(num_threads)
    torch.use_deterministic_algorithms(True)
    return torch.device(device)


def capture_rng_state(device: torch.device) -> dict[str, Any]:
    """Every random generator a step can draw from, in a form `torch.load(weights_only=True)` accepts.

    NumPy's and Python's states are tuples holding arrays and big ints: they become int64 tensors and plain
    numbers, because `weights_only` refuses NumPy objects.
    """
    numpy_kind, numpy_keys, numpy_pos, numpy_has_gauss, numpy_gauss = np.random.get_state()
    python_version, python_internal, python_gauss = random.getstate()
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state(device) if device.type == "cuda" else None,  # this process's GPU only
        "numpy": {
            "kind": numpy_kind,
            "keys": torch.from_numpy(numpy_keys.astype(np.int64)),
            "pos": int(numpy_pos),
            "has_gauss": int(numpy_has_gauss),
            "gauss": float(numpy_gauss),
        },
        "python": {"version": python_version, "internal": torch.tensor(python_internal), "gauss": python_gauss},
    }


def restore_rng_state(state: dict[str, Any], device: torch.device) -> None:
    torch.set_rng_state(state["torch"])
    if state["cuda"] is not None:
        torch.cuda.set_rng_state(state["cuda"], device)
    numpy = state["numpy"]
    keys = numpy["keys"].numpy().astype(np.uint32)
    np.random.set_state((numpy["kind"], keys, numpy["pos"], numpy["has_gauss"], numpy["gauss"]))
    python = state["python"]
    random.setstate((python["version"], tuple(python["internal"].tolist()), python["gauss"]))
