"""The training loop: the one loop that every experiment, sweep and launcher runs unchanged (entry.py starts it).

What a batch is, how it becomes a loss and which metrics evaluation reports come from the config (`data`,
`objective`): the loop never knows the task. It resumes from the run's latest valid checkpoint; the checkpointer
decides when to save (core/checkpointer.py), the run folder how an attempt stops or finishes (core/run_folder.py).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import nullcontext
from typing import Any

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm

from .core import (
    distributed,
    failpoints,
    naming,  # noqa: F401  (registers the `auto_run_name` resolver that configs/train.yaml uses)
    preemption,
    provenance,
)
from .core.batches import TrainStream, evaluation_batches
from .core.best import BestTracker
from .core.checkpoint import CheckpointDir
from .core.checkpoint_contents import Origin
from .core.checkpointer import Checkpointer, TrainingState, resume_latest
from .core.compiling import compiled
from .core.config import identity
from .core.determinism import capture_rng_state, seed_everything
from .core.divergence import DivergenceWatch
from .core.evaluation import Batch, evaluate
from .core.files import write_text
from .core.hashing import config_sha256, params_sha256, rng_sha256
from .core.precision import Precision
from .core.run_folder import RunFolder
from .objective import Objective
from .project import current
from .tracking import Tracking

log = logging.getLogger(__name__)


def train(
    cfg: DictConfig, run: RunFolder, objective: Objective, context: distributed.Context, device: torch.device
) -> float:
    trainer, run_dir = cfg.trainer, run.run_dir
    log.info("config:\n%s", OmegaConf.to_yaml(cfg))
    found = provenance.collect(current().root, cfg, config_sha256(identity(cfg))) if context.is_main else None
    origin = distributed.from_main(context, found and Origin.of(found))

    seed_everything(cfg.seed + context.rank)  # own dropout masks per process; DDP copies rank 0's initial weights
    # `_convert_="all"` hands components plain lists and dicts, which checkpoints (weights_only) can hold.
    data = instantiate(cfg.data, root=cfg.paths.data_dir, _convert_="all")
    model = instantiate(cfg.model, _convert_="all").to(device)
    optimizer = instantiate(cfg.optim, _convert_="all")(model.parameters())
    scheduler = instantiate(cfg.sched, _convert_="all")(optimizer)
    precision = Precision(trainer.precision, device)
    stream = TrainStream(data.train, data.batch_size, cfg.seed, trainer.num_workers, context.rank, context.world_size)
    val_batches = evaluation_batches(data.val, data.eval_batch_size)
    state = TrainingState(model, optimizer, scheduler, precision, stream)
    checkpoints = CheckpointDir(run.files.checkpoints, trainer.keep_last)
    step = resume_latest(checkpoints, state, origin, device, trainer.allow_code_change, run)

    best = BestTracker(checkpoints.folder, trainer.best_metric or objective.main_metric, trainer.best_mode, step)
    if context.is_main:
        best.forget_rolled_back()
        write_text(run.files.config, OmegaConf.to_yaml(cfg))
        provenance.write(run_dir, current().root, found)
        if found["git"]["dirty"]:
            log.warning("the working tree is dirty: this run is marked dirty (see provenance.json, dirty.patch)")
    tracking = Tracking.from_config(cfg, run_dir, step, run.note_tracker_off) if context.is_main else Tracking({})
    tracking.record(found)
    run.record("running", step)
    trained = DistributedDataParallel(model) if context.enabled else model
    trained = compiled(trained, device) if trainer.compile else trained  # checkpoints keep `model`'s weights
    divergence = DivergenceWatch(trainer.log_every, device, context)
    checkpointer = Checkpointer(checkpoints, state, origin, trainer.ckpt_every, device, run, best, divergence,
                                tracking.flush, tracking.publish)  # fmt: skip

    # Settings read once: the step below does no config lookups.
    max_steps, log_every, eval_every = trainer.max_steps, trainer.log_every, trainer.eval_every
    stop_at, clip, window = trainer.stop_at_step, trainer.grad_clip_norm, trainer.accumulate_grad_batches
    progress = tqdm(total=max_steps, initial=step, disable=None if trainer.progress_bar and context.is_main else True)
    evaluation: dict[str, float] = {}
    with checkpointer.finishing_writes():  # a write in flight ends before the run does, however it ends
        while step < max_steps:
            step += 1
            batches = (tuple(tensor.to(device, non_blocking=True) for tensor in next(stream)) for _ in range(window))
            loss = train_step(trained, objective, optimizer, batches, window, precision, clip)
            scheduler.step()
            divergence.record(step, loss)
            progress.update()

            metrics: dict[str, float] = {}
            is_best = False
            if step % log_every == 0 or step == max_steps:
                divergence.check()
                metrics |= {"train/loss": distributed.mean(context, loss).item(), "lr": scheduler.get_last_lr()[0]}
            if step % eval_every == 0 or step == max_steps:
                evaluation = evaluate(model, objective, val_batches, device, precision)
                metrics |= evaluation
                is_best = best.improved_by(evaluation)  # then saved at this step, and kept past keep_last
                log.info("step %d/%d  %s", step, max_steps, "  ".join(f"{k}={v:.4g}" for k, v in metrics.items()))
            if metrics:
                tracking.log(step, metrics)

            failpoints.step_end(step, checkpointer.settle)
            if distributed.any_rank(context, preemption.stop_requested(), device) or step == stop_at:
                checkpointer.save(step, best=is_best)
                run.stop(step, tracking.close, stop_at)
            checkpointer.maybe_save(step, last=step == max_steps, best=is_best)
    progress.close()
    tracking.close("finished")

    # Evaluated already unless the run resumed at its very end.
    evaluation = evaluation or evaluate(model, objective, val_batches, device, precision)
    rng = distributed.gather(context, capture_rng_state(device))  # what the run's next draws would give

    def summary() -> dict[str, Any]:  # on rank 0 only
        return {
            "params_sha256": params_sha256(model),
            "rng_sha256": rng_sha256(rng),
            "step": step,
            "metrics": evaluation,
        }

    run.finish(step, cfg.run_name, summary)
    return evaluation[objective.main_metric]


def train_step(
    model: nn.Module,
    objective: Objective,
    optimizer: torch.optim.Optimizer,
    batches: Iterator[Batch],
    window: int,
    precision: Precision,
    clip: float | None,
) -> torch.Tensor:
    """One optimisation step over `window` micro-batches (gradient accumulation: a step is a whole window, so
    every checkpoint falls between windows). Returns the mean loss as a tensor: reading it never forces a sync."""
    model.train()
    optimizer.zero_grad(set_to_none=True)
    losses = []
    for index, batch in enumerate(batches):
        # Under DDP, gradients are averaged across processes once per window, at its last backward pass.
        syncing = nullcontext() if index == window - 1 or not hasattr(model, "no_sync") else model.no_sync()
        with syncing:
            with precision.autocast():
                loss = objective.loss(model, batch)
            loss = loss / window if window > 1 else loss  # 1: the very same operations as without accumulation
            precision.backward(loss)
        losses.append(loss.detach())
    precision.step(optimizer, model.parameters(), clip)
    return losses[0] if window == 1 else torch.stack(losses).sum()
