"""Seeding and the switches that make a run repeat bit for bit on the same hardware and lock."""

from __future__ import annotations

import os
import random

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
