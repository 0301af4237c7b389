"""The baseline: the same training as the generated loop, written as a bare PyTorch loop with nothing around it.

    python benchmarks/bare_loop.py CONFIG.yaml [--first-step-marker FILE]

CONFIG.yaml is a resolved config of the generated project (loop.py writes it). The components are built from it
as the loop builds them (same model, data, batch, objective, optimizer, schedule, clipping, thread count and input
noise); then a plain loop trains for `trainer.max_steps` steps, reads the loss every `log_every` steps and
evaluates every `eval_every` steps, and that is all: no checkpoints, no determinism settings, no metric files,
no progress bar. lightning_loop.py reuses `components` and `train_batches`, so the three contenders differ only
in their loop.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from torch import nn


def components(cfg: DictConfig) -> dict[str, Any]:
    torch.set_num_threads(cfg.trainer.num_threads)
    torch.manual_seed(cfg.seed)
    data = instantiate(cfg.data, root=cfg.paths.data_dir, _convert_="all")
    model = instantiate(cfg.model, _convert_="all")
    optimizer = instantiate(cfg.optim, _convert_="all")(model.parameters())
    return {
        "data": data,
        "model": model,
        "objective": instantiate(cfg.objective, _convert_="all"),
        "optimizer": optimizer,
        "scheduler": instantiate(cfg.sched, _convert_="all")(optimizer),
    }


def train_batches(data: Any, seed: int) -> Iterator[tuple[torch.Tensor, ...]]:
    """Endless shuffled batches, the last partial batch of an epoch dropped; the dataset draws the input noise."""
    request = _batch_request_class(data)
    epoch = 0
    while True:
        order = torch.randperm(len(data.train), generator=torch.Generator().manual_seed(seed + epoch)).tolist()
        for start in range(0, len(order) - data.batch_size + 1, data.batch_size):
            yield data.train.__getitems__(request(seed, epoch, order[start : start + data.batch_size]))
        epoch += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", type=Path)
    parser.add_argument("--first-step-marker", type=Path)
    args = parser.parse_args()
    cfg = OmegaConf.load(args.config)
    parts = components(cfg)
    model, objective, optimizer, scheduler = (parts[key] for key in ("model", "objective", "optimizer", "scheduler"))
    trainer, data = cfg.trainer, parts["data"]
    # The datasets fetch a whole batch at once (`__getitems__`), already stacked: nothing to collate.
    val = torch.utils.data.DataLoader(data.val, batch_size=data.eval_batch_size, collate_fn=tuple)
    losses, metrics = [], {}
    for step, batch in enumerate(train_batches(data, cfg.seed), start=1):
        model.train()
        loss = objective.loss(model, batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), trainer.grad_clip_norm)
        optimizer.step()
        scheduler.step()
        if step == 1 and args.first_step_marker:
            args.first_step_marker.touch()
        if step % trainer.log_every == 0:
            losses.append(loss.item())
        if step % trainer.eval_every == 0 or step == trainer.max_steps:
            metrics = evaluate(model, objective, val)
            print(f"evaluated {step} at {time.time()}", flush=True)  # loop.py times the steady state from these
        if step == trainer.max_steps:
            break
    print(f"bare loop: {step} steps, {metrics}")


@torch.no_grad()
def evaluate(model: nn.Module, objective: Any, batches: Any) -> dict[str, float]:
    model.eval()
    totals: dict[str, torch.Tensor] = {}
    for batch in batches:
        for key, value in objective.evaluation_sums(model, tuple(batch)).items():
            totals[key] = totals[key] + value if key in totals else value
    return objective.metrics({key: value.item() for key, value in totals.items()})


def _batch_request_class(data: Any) -> type:
    """samebits' BatchRequest: what a dataset's `__getitems__` takes."""
    from samebits import BatchRequest

    return BatchRequest


if __name__ == "__main__":
    main()
