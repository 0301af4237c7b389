"""Several processes training one model (DDP): who am I, and the few collective steps the loop needs.

torchrun sets WORLD_SIZE, RANK and LOCAL_RANK; `srun` without torchrun sets SLURM_NTASKS, SLURM_PROCID and
SLURM_LOCALID. Both need MASTER_ADDR and MASTER_PORT (torchrun sets them; a job script sets them for srun).
With one process nothing distributed is started, and every function here is a no-op.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class Context:
    world_size: int = 1
    rank: int = 0
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1


def context_from_env(env: Mapping[str, str] = os.environ) -> Context:
    if "WORLD_SIZE" in env:
        return Context(int(env["WORLD_SIZE"]), int(env.get("RANK", 0)), int(env.get("LOCAL_RANK", 0)))
    if int(env.get("SLURM_NTASKS", 1)) > 1 and "SLURM_PROCID" in env:
        return Context(int(env["SLURM_NTASKS"]), int(env["SLURM_PROCID"]), int(env.get("SLURM_LOCALID", 0)))
    return Context()


def device_for(context: Context, device: str) -> str:
    """Each process on a node takes its own GPU; CPU processes share the CPU."""
    return f"cuda:{context.local_rank}" if context.enabled and device == "cuda" else device


def start(context: Context, device: torch.device) -> None:
    if not context.enabled:
        return
    if device.type == "cuda":
        torch.cuda.set_device(device)
    backend = "nccl" if device.type == "cuda" else "gloo"
    dist.init_process_group(backend, rank=context.rank, world_size=context.world_size)


def stop(context: Context) -> None:
    if context.enabled and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


def any_rank(context: Context, flag: bool, device: torch.device) -> bool:
    """True on every rank if it is true on any: all ranks must stop at the same step."""
    if not context.enabled:
        return flag
    value = torch.tensor(int(flag), device=device)
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    return bool(value.item())


def mean(context: Context, value: torch.Tensor) -> torch.Tensor:
    if not context.enabled:
        return value
    total = value.clone()
    dist.all_reduce(total)
    return total / context.world_size


def smallest(context: Context, value: torch.Tensor) -> torch.Tensor:
    if not context.enabled:
        return value
    least = value.clone()
    dist.all_reduce(least, op=dist.ReduceOp.MIN)
    return least


def gather(context: Context, obj: Any) -> list[Any]:
    """Every rank's `obj`, in rank order, on every rank."""
    if not context.enabled:
        return [obj]
    gathered: list[Any] = [None] * context.world_size
    dist.all_gather_object(gathered, obj)
    return gathered


def from_main(context: Context, obj: Any) -> Any:
    """Rank 0's `obj` on every rank, so that all ranks act on one decision."""
    if not context.enabled:
        return obj
    shared = [obj]
    dist.broadcast_object_list(shared, src=0)
    return shared[0]


def barrier(context: Context) -> None:
    if context.enabled:
        dist.barrier()
