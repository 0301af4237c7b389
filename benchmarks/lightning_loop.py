"""The same training through Lightning's Trainer, the loop lightning-hydra-template runs on.

    python benchmarks/lightning_loop.py CONFIG.yaml --variant minimal|full [--first-step-marker FILE]

The components and batches are bare_loop.py's, so only the loop differs. `minimal` switches off everything the
Trainer adds by default (logger, checkpoints, progress bar, model summary); `full` keeps what a user of such a
template runs with: a CSV logger every `log_every` steps, a checkpoint every `ckpt_every` steps and the progress
bar. Neither runs the sanity-check validation, which the generated loop does not do either.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import lightning as L
import torch
from omegaconf import OmegaConf
from torch.utils.data import DataLoader, IterableDataset

from bare_loop import components, train_batches


class Batches(IterableDataset):
    def __init__(self, data: Any, seed: int) -> None:
        self.data, self.seed = data, seed

    def __iter__(self) -> Any:
        return train_batches(self.data, self.seed)


class Task(L.LightningModule):
    def __init__(self, parts: dict[str, Any], log_metrics: bool) -> None:
        super().__init__()
        self.model, self.objective, self.log_metrics = parts["model"], parts["objective"], log_metrics
        self.optimizer, self.scheduler = parts["optimizer"], parts["scheduler"]
        self.totals: dict[str, torch.Tensor] = {}

    def training_step(self, batch: tuple[torch.Tensor, ...], index: int) -> torch.Tensor:
        loss = self.objective.loss(self.model, batch)
        if self.log_metrics:
            self.log("train/loss", loss)
        return loss

    def validation_step(self, batch: tuple[torch.Tensor, ...], index: int) -> None:
        for key, value in self.objective.evaluation_sums(self.model, tuple(batch)).items():
            self.totals[key] = self.totals[key] + value if key in self.totals else value

    def on_validation_epoch_end(self) -> None:
        metrics = self.objective.metrics({key: value.item() for key, value in self.totals.items()})
        self.totals = {}
        if self.log_metrics:
            self.log_dict(metrics)
        print(f"evaluated {self.trainer.global_step} at {time.time()}", flush=True)  # see loop.py

    def configure_optimizers(self) -> Any:
        return {"optimizer": self.optimizer, "lr_scheduler": {"scheduler": self.scheduler, "interval": "step"}}


class FirstStepMarker(L.Callback):
    def __init__(self, marker: Path | None) -> None:
        self.marker = marker

    def on_train_batch_end(self, trainer: L.Trainer, *args: Any) -> None:
        if self.marker is not None and trainer.global_step == 1:
            self.marker.touch()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", type=Path)
    parser.add_argument("--variant", choices=("minimal", "full"), required=True)
    parser.add_argument("--first-step-marker", type=Path)
    args = parser.parse_args()
    cfg = OmegaConf.load(args.config)
    trainer_cfg, full = cfg.trainer, args.variant == "full"
    parts = components(cfg)
    data = parts["data"]
    with tempfile.TemporaryDirectory(prefix="lightning-bench-") as scratch:
        extras: dict[str, Any] = {"logger": False, "enable_checkpointing": False, "enable_progress_bar": False}
        if full:
            extras = {
                "logger": L.pytorch.loggers.CSVLogger(scratch),
                "log_every_n_steps": trainer_cfg.log_every,
                "callbacks": [L.pytorch.callbacks.ModelCheckpoint(scratch, every_n_train_steps=trainer_cfg.ckpt_every)],
                "enable_progress_bar": True,
            }
        callbacks = [*extras.pop("callbacks", []), FirstStepMarker(args.first_step_marker)]
        trainer = L.Trainer(
            accelerator="cpu",
            devices=1,
            max_steps=trainer_cfg.max_steps,
            val_check_interval=trainer_cfg.eval_every,
            check_val_every_n_epoch=None,
            num_sanity_val_steps=0,
            gradient_clip_val=trainer_cfg.grad_clip_norm,
            enable_model_summary=False,
            default_root_dir=scratch,
            callbacks=callbacks,
            **extras,
        )
        val = DataLoader(data.val, batch_size=data.eval_batch_size, collate_fn=tuple)
        trainer.fit(Task(parts, log_metrics=full), DataLoader(Batches(data, cfg.seed), batch_size=None), val)
    print(f"lightning ({args.variant}): {trainer.global_step} steps")


if __name__ == "__main__":
    main()
