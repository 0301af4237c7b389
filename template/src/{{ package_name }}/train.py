"""The training loop: the one Hydra entry point that every experiment, sweep and launcher runs unchanged.

    python -m <package>.train                         # the default experiment
    python -m <package>.train optim.lr=1e-3 seed=1    # any override
    python -m <package>.train experiment=wide_mlp     # an experiment file from configs/experiment/
    python -m <package>.train experiment=char_transformer   # another task: the same loop, other components
    torchrun --nproc-per-node 2 -m <package>.train    # the same loop, data-parallel

What a batch is, how it becomes a loss and which metrics evaluation reports come from the config (`data`,
`objective`): the loop never knows the task. Started again on the same config, a run resumes from its latest
valid checkpoint. SIGTERM, SIGUSR1 or SIGUSR2 make it save at the next step and exit with code 75 ("requeue
me"); Ctrl-C does the same and exits with 130. It leaves in the run folder `config.yaml`, `metrics.jsonl`,
`checkpoints/`, `status.json` (how the latest attempt ended), `run.lock` and, once finished, `summary.json`. Every
exit code is listed in core/errors.py.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path

import hydra
import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm

from .core import (
    distributed,
    naming,  # noqa: F401  (registers the `auto_run_name` resolver that configs/train.yaml uses)
    preemption,
    provenance,
)
from .core.batches import TrainStream, evaluation_batches
from .core.best import BestTracker
from .core.checkpoint import CheckpointDir, CheckpointUnreadable, Origin, restore, resume_problems, snapshot
from .core.checks import check
from .core.compiling import compiled
from .core.config import CONFIG_DIR, PROJECT_ROOT, identity
from .core.determinism import capture_rng_state, make_deterministic, seed_everything
from .core.divergence import DivergenceWatch
from .core.errors import INTERRUPTED, fail, one_line_config_errors
from .core.evaluation import Batch, evaluate
from .core.files import write_json, write_text
from .core.hashing import config_sha256, params_sha256, rng_sha256
from .core.precision import Precision
from .core.run_folder import RunFolder
from .core.sweep import check_sweep
from .proof import faults
from .research.objectives import Objective
from .tracking import Tracking

log = logging.getLogger(__name__)


@hydra.main(version_base="1.3", config_path=str(CONFIG_DIR), config_name="train")
def main(cfg: DictConfig) -> float:
    OmegaConf.resolve(cfg)
    trainer = cfg.trainer
    check(cfg)  # before anything is loaded or written: one line per mistake, exit code 2
    objective: Objective = instantiate(cfg.objective, _convert_="all")
    context = distributed.context_from_env()
    device = make_deterministic(trainer.num_threads, distributed.device_for(context, trainer.device))
    distributed.start(context, device)
    if not context.is_main:
        logging.getLogger().setLevel(logging.WARNING)  # one log per run, from rank 0
    run = RunFolder(Path(cfg.paths.run_dir), context)
    # Rank 0 locks the folder; another config under this name is refused.
    run.claim(identity(cfg), cfg.run_name, trainer.allow_code_change)
    if (finished := run.finished_metrics()) is not None:  # one name is one experiment, trained once
        log.info("%s has finished already (see %s/summary.json): nothing to do", cfg.run_name, run.run_dir)
        distributed.stop(context)
        return finished[objective.main_metric]
    with run.attempt():  # status.json records how this attempt ends, however it ends
        return train(cfg, run, objective, context, device)


def train(
    cfg: DictConfig, run: RunFolder, objective: Objective, context: distributed.Context, device: torch.device
) -> float:
    trainer, run_dir = cfg.trainer, run.run_dir
    log.info("config:\n%s", OmegaConf.to_yaml(cfg))
    config_hash, step = config_sha256(identity(cfg)), 0
    found = provenance.collect(PROJECT_ROOT, cfg, config_hash) if context.is_main else None  # git and versions
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

    # Resume from the latest valid checkpoint, if this run has one.
    checkpoints = CheckpointDir(run_dir / "checkpoints", trainer.keep_last)
    if context.is_main:
        checkpoints.clean()
    if (name := distributed.from_main(context, checkpoints.find_latest() if context.is_main else None)) is not None:
        try:
            state = checkpoints.load(name)
        except CheckpointUnreadable as error:
            fail([f"{error}: resume with the code and lock that wrote it (see its run's config and provenance)"])
        if problems := resume_problems(state, origin, context.world_size, trainer.allow_code_change):
            fail(problems)
        step = restore(state, model, optimizer, scheduler, precision, stream, context.rank, device)
        log.info("resumed from the checkpoint at step %d", step)
    best = BestTracker(checkpoints.folder, trainer.best_metric or objective.main_metric, trainer.best_mode, step)
    if context.is_main:
        write_text(run_dir / "config.yaml", OmegaConf.to_yaml(cfg))
        provenance.write(run_dir, PROJECT_ROOT, found)
        if found["git"]["dirty"]:
            log.warning("the working tree is dirty: this run is marked dirty (see provenance.json, dirty.patch)")
    tracking = Tracking.from_config(cfg, run_dir, step, run.note_tracker_off) if context.is_main else Tracking({})
    tracking.record(found)
    run.record("running", step)
    trained = DistributedDataParallel(model) if context.enabled else model
    trained = compiled(trained, device) if trainer.compile else trained  # checkpoints keep `model`'s weights
    divergence = DivergenceWatch(trainer.log_every, device, context)

    def save(is_best: bool = False) -> None:
        divergence.check()  # a diverged state never reaches a checkpoint
        tracking.flush()  # the lines up to a checkpoint reach the disk before the checkpoint does
        rng = distributed.gather(context, capture_rng_state(device))
        if context.is_main:
            saved = checkpoints.save(snapshot(model, optimizer, scheduler, precision, stream, rng, origin), step)
            if is_best:
                best.record(saved.name, step)
        tracking.publish(step)  # only now may the steps up to it leave the process (wandb, MLflow)
        distributed.barrier(context)
        run.record("running", step)  # the step a new attempt would resume from, and a sign of life

    # Settings read once: the step below does no config lookups.
    max_steps, log_every, eval_every = trainer.max_steps, trainer.log_every, trainer.eval_every
    ckpt_every, stop_at, clip = trainer.ckpt_every, trainer.stop_at_step, trainer.grad_clip_norm
    window = trainer.accumulate_grad_batches
    progress = tqdm(total=max_steps, initial=step, disable=None if trainer.progress_bar and context.is_main else True)
    evaluation: dict[str, float] = {}
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

        faults.step_end(step)
        if distributed.any_rank(context, preemption.stop_requested(), device) or step == stop_at:
            save(is_best)
            state, code = preemption.outcome()
            why = preemption.received_signal() or f"trainer.stop_at_step={stop_at}"
            log.info("stopped at step %d by %s: checkpoint saved, exiting with code %d (start again to resume)", step,
                     why, code)  # fmt: skip
            run.record(state, step)
            tracking.close(state)
            distributed.stop(context)
            raise SystemExit(code)
        if step % ckpt_every == 0 or step == max_steps or is_best:
            save(is_best)
    progress.close()
    tracking.close("finished")

    # Evaluated already unless the run resumed at its very end.
    evaluation = evaluation or evaluate(model, objective, val_batches, device, precision)
    rng = distributed.gather(context, capture_rng_state(device))  # what the run's next draws would give
    if context.is_main:
        summary = {
            "params_sha256": params_sha256(model),
            "rng_sha256": rng_sha256(rng),
            "step": step,
            "metrics": evaluation,
        }
        write_json(run_dir / "summary.json", summary)
        log.info("finished %s: %s", cfg.run_name, "  ".join(f"{k}={v:.4g}" for k, v in evaluation.items()))
        log.info("params_sha256=%s", summary["params_sha256"])
    run.record("finished", step)
    distributed.stop(context)
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


def cli() -> None:
    try:
        with one_line_config_errors(hint=f"list every setting with: python -m {__package__}.train --cfg job"):
            check_sweep(sys.argv[1:])  # with -m, every point of a sweep is checked before the first one trains
            main()
    except KeyboardInterrupt:  # a second Ctrl-C before the run folder was claimed: nothing to record
        print("interrupted: nothing was saved", file=sys.stderr)
        raise SystemExit(INTERRUPTED) from None


if __name__ == "__main__":
    preemption.install_handlers()  # first thing: a signal from here on leads to a checkpoint, not a lost step
    faults.run_then_exit(cli)  # the reproducibility proof skips the interpreter's teardown (see faults.py)
