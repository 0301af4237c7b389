"""Evaluation: the objective's metrics over a whole split, as the loop reports them and `<package> eval` repeats."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch
import yaml
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from torch import nn

from . import checks
from .batches import evaluation_batches
from .checkpoint import CheckpointDir, CheckpointUnreadable
from .config import project_path
from .determinism import make_deterministic
from .errors import UsageError, yaml_problem
from .files import utc_now, write_json
from .hashing import params_sha256
from .precision import Precision
from .run_files import RunFiles

Batch = tuple[torch.Tensor, ...]

# What `eval` and `sample` read from a run's saved config.
SAVED_GROUPS = ("model", "data", "objective", "trainer", "paths")
DAMAGED = "the run's saved config is damaged; restore it from a copy of the run (provenance.json has its command)"


@torch.no_grad()
def evaluate(
    model: nn.Module, objective: Any, batches: Iterable[Batch], device: torch.device, precision: Precision
) -> dict[str, float]:
    """The objective's metrics over every batch, from sums added up on the device (one sync), with the forward
    passes in the run's precision. `objective` is an Objective (research/objectives/), which core does not import."""
    model.eval()
    totals: dict[str, torch.Tensor] = {}
    for batch in batches:
        with precision.autocast():
            sums = objective.evaluation_sums(model, tuple(tensor.to(device) for tensor in batch))
        totals = {key: totals[key] + value if key in totals else value for key, value in sums.items()}
    return objective.metrics({key: value.item() for key, value in totals.items()})


def evaluate_run(run_dir: Path, split: str, which: str) -> dict[str, Any]:
    """`<package> eval`: evaluate a run's latest or best checkpoint on its validation or test split, with the
    run's saved config (its data, model, objective, device, threads and precision), and record the result in
    `RUN_DIR/eval.json` under `<split>:<which>`. The same checkpoint gives the same numbers every time, and the
    latest checkpoint of a finished run gives those of its final evaluation (summary.json)."""
    cfg = saved_config(run_dir)
    name, state = saved_checkpoint(run_dir, cfg, which)
    trainer = cfg.trainer
    if problems := checks.device_problems(trainer.device, on_this_machine=True):
        raise UsageError(f"{problems[0]} (the run was trained on {trainer.device})")
    device = make_deterministic(trainer.num_threads, trainer.device)
    data_dir = (
        cfg.paths.data_dir if Path(cfg.paths.data_dir).is_dir() else project_path(os.environ.get("DATA_DIR", "data"))
    )
    data = instantiate(cfg.data, root=data_dir, _convert_="all")
    dataset = data.val if split == "val" else getattr(data, "test", None)
    if dataset is None:
        held_out = "the digits: data.test_fraction=0.1; the text: data.test_every=10"
        raise UsageError(f"{run_dir}'s data has no test split: train with a held-out one ({held_out})")
    model = instantiate(cfg.model, _convert_="all").to(device)
    model.load_state_dict(state["model"])
    objective = instantiate(cfg.objective, _convert_="all")
    precision = Precision(trainer.get("precision", "32"), device)  # runs from before precision existed: 32
    metrics = evaluate(model, objective, evaluation_batches(dataset, data.eval_batch_size), device, precision)
    if split != "val":  # objectives name their metrics val/...; these are the test split's
        metrics = {
            f"{split}/{key.partition('/')[2]}" if key.startswith("val/") else key: v for key, v in metrics.items()
        }
    result = {"split": split, "checkpoint": name, "step": state["step"], "params_sha256": params_sha256(model),
              "metrics": metrics, "evaluated_at": utc_now()}  # fmt: skip
    path = RunFiles(run_dir).eval
    recorded = json.loads(path.read_text()) if path.is_file() else {}
    write_json(path, recorded | {f"{split}:{which}": result})
    return result


def saved_config(run_dir: Path, needs: Iterable[str] = SAVED_GROUPS) -> DictConfig:
    """A run's saved config, holding the groups it `needs`; one line and exit 2 when `run_dir` is not a run or its
    config is damaged."""
    path = RunFiles(run_dir).config
    if not path.is_file():
        raise UsageError(f"{run_dir} has no config.yaml: pass the folder of a run (runs/<main_tag>/<run_name>)")
    try:
        cfg = OmegaConf.load(path)
    except yaml.YAMLError as error:
        raise UsageError(yaml_problem(path, error, DAMAGED)) from None
    except UnicodeDecodeError as error:
        raise UsageError(f"{path} is not text ({error.reason} at byte {error.start}): {DAMAGED}") from None
    except OSError as error:  # also what OmegaConf raises for a file that holds one value (errno None)
        raise UsageError(f"cannot read {path} ({error.strerror}): make it readable" if error.errno is not None
                         else f"{path} holds one value, not settings: {DAMAGED}") from None  # fmt: skip
    if not isinstance(cfg, DictConfig):
        raise UsageError(f"{path} holds a list, not settings: {DAMAGED}")
    if missing := [key for key in needs if not isinstance(cfg.get(key), DictConfig)]:
        raise UsageError(f"{path} lacks the {', '.join(missing)} settings: {DAMAGED}")
    return cfg


def saved_checkpoint(run_dir: Path, cfg: DictConfig, which: str = "latest") -> tuple[str, dict[str, Any]]:
    """A run's latest (or best) checkpoint, checked; one line and exit 2 when there is none."""
    checkpoints = CheckpointDir(RunFiles(run_dir).checkpoints, cfg.trainer.keep_last)
    name = checkpoints.find_latest() if which == "latest" else checkpoints.find_best()
    if name is None:
        missing = (
            f"{run_dir} has no checkpoint yet: train it first (checkpoints every trainer.ckpt_every steps)"
            if which == "latest"
            else f"{run_dir} has no best checkpoint (recorded from its evaluations once it has been evaluated): "
            "use --checkpoint latest"
        )
        raise UsageError(missing)
    try:
        return name, checkpoints.load(name)
    except CheckpointUnreadable as error:
        raise UsageError(f"{error}: use the code and lock that wrote it (see the run's provenance.json)") from None
