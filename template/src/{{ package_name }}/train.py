"""The training loop: the one Hydra entry point that every experiment, sweep and launcher runs unchanged.

    python -m <package>.train                         # the default experiment
    python -m <package>.train optim.lr=1e-3 seed=1    # any override
    python -m <package>.train experiment=wide_mlp     # an experiment file from configs/experiment/

It composes and checks the config, builds every component with `hydra.utils.instantiate`, trains for
`trainer.max_steps`, and leaves in the run folder `config.yaml`, `metrics.jsonl` and `summary.json`.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import hydra
import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from torch import nn
from tqdm import tqdm

from . import naming  # noqa: F401  (registers the `auto_run_name` resolver used by configs/train.yaml)
from .config import CONFIG_DIR, check
from .determinism import make_deterministic, seed_everything
from .errors import one_line_config_errors
from .hashing import params_sha256
from .tracking import Tracking

log = logging.getLogger(__name__)


@hydra.main(version_base="1.3", config_path=str(CONFIG_DIR), config_name="train")
def main(cfg: DictConfig) -> float:
    OmegaConf.resolve(cfg)
    run_dir = Path(cfg.paths.run_dir)
    check(cfg, run_dir)  # before any data is loaded: one line per mistake, exit code 2
    if (run_dir / "summary.json").exists():  # one name is one experiment: a finished run is not trained again
        log.info("%s has finished already (see %s/summary.json): nothing to do", cfg.run_name, run_dir)
        return json.loads((run_dir / "summary.json").read_text())["metrics"]["val/acc"]
    log.info("config:\n%s", OmegaConf.to_yaml(cfg))
    (run_dir / "config.yaml").write_text(OmegaConf.to_yaml(cfg))

    device = make_deterministic(cfg.trainer.num_threads, cfg.trainer.device)
    seed_everything(cfg.seed)
    data = instantiate(cfg.data, root=cfg.paths.data_dir)
    model = instantiate(cfg.model).to(device)
    optimizer = instantiate(cfg.optim)(model.parameters())
    scheduler = instantiate(cfg.sched)(optimizer)
    tracking = Tracking.from_config(cfg.logger, run_dir)
    stream = data.train_stream(seed=cfg.seed, num_workers=cfg.trainer.num_workers)

    # Settings read once: the step below does no config lookups.
    max_steps, log_every, eval_every = cfg.trainer.max_steps, cfg.trainer.log_every, cfg.trainer.eval_every
    clip = cfg.trainer.grad_clip_norm
    progress = tqdm(total=max_steps, disable=None if cfg.trainer.progress_bar else True, mininterval=1.0)
    evaluation: dict[str, float] = {}
    for step in range(1, max_steps + 1):
        inputs, labels = (tensor.to(device, non_blocking=True) for tensor in next(stream))
        loss = train_step(model, optimizer, inputs, labels, clip)
        scheduler.step()
        progress.update()

        metrics: dict[str, float] = {}
        if step % log_every == 0 or step == max_steps:
            metrics |= {"train/loss": loss.item(), "lr": scheduler.get_last_lr()[0]}
        if step % eval_every == 0 or step == max_steps:
            evaluation = evaluate(model, data.val_batches(), device)
            metrics |= evaluation
            log.info("step %d/%d  %s", step, max_steps, "  ".join(f"{k}={v:.4g}" for k, v in metrics.items()))
        if metrics:
            tracking.log(step, metrics)
        if step % eval_every == 0:
            tracking.flush()
    progress.close()
    tracking.close()

    summary = {"params_sha256": params_sha256(model), "step": max_steps, "metrics": evaluation}
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    log.info(
        "finished %s: val/acc=%.4f params_sha256=%s",
        cfg.run_name,
        evaluation["val/acc"],
        summary["params_sha256"],
    )
    return evaluation["val/acc"]


def train_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    inputs: torch.Tensor,
    labels: torch.Tensor,
    clip: float | None,
) -> torch.Tensor:
    """One optimisation step; returns the loss as a tensor, so that reading it never forces a device sync."""
    model.train()
    loss = nn.functional.cross_entropy(model(inputs), labels)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if clip is not None:
        nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    return loss.detach()


@torch.no_grad()
def evaluate(model: nn.Module, batches: torch.utils.data.DataLoader, device: torch.device) -> dict[str, float]:
    model.eval()
    loss_sum, correct, count = torch.zeros((), device=device), torch.zeros((), device=device), 0
    for inputs, labels in batches:
        inputs, labels = inputs.to(device), labels.to(device)
        logits = model(inputs)
        loss_sum += nn.functional.cross_entropy(logits, labels, reduction="sum")
        correct += (logits.argmax(dim=1) == labels).sum()
        count += len(labels)
    return {"val/loss": loss_sum.item() / count, "val/acc": correct.item() / count}


if __name__ == "__main__":
    with one_line_config_errors(hint=f"list every setting with: python -m {__package__}.train --cfg job"):
        main()
