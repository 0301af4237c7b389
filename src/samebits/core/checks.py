"""The checks a composed config must pass before any data loads or any folder is made.

What types cannot say (a positive learning rate, a batch that fits in the training set, a run name that is one
folder name, a runs folder that is writable, a key that no schema knows) is found here: `check` prints one line
per mistake, saying what to pass instead, and exits with code 2.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import os
import re
from pathlib import Path
from typing import Any

from hydra.utils import get_object
from omegaconf import DictConfig, OmegaConf

from .config import COMPONENT_GROUPS, PRECISIONS
from .errors import UsageError


def problems(cfg: DictConfig, on_this_machine: bool = True) -> list[str]:
    """Every mistake in a composed config, one line each, saying what to pass instead. Without `on_this_machine`
    (a launcher planning runs for other machines), what only the machine that trains can tell is not checked:
    whether its CUDA device is visible."""
    found: list[str] = []
    settings: dict[str, Any] = {}
    own: dict[str, list[str]] = {}
    for group in COMPONENT_GROUPS:
        settings[group], own[group] = _settings(group, cfg[group])
        found += _target_problems(group, cfg[group]) + own[group]
    trainer = cfg.trainer
    counts = ("max_steps", "eval_every", "log_every", "num_threads", "ckpt_every", "keep_last")
    for key in (*counts, "accumulate_grad_batches"):
        if trainer[key] < 1:
            found.append(f"trainer.{key}={trainer[key]} must be >= 1")
    if trainer.num_workers < 0:
        found.append(f"trainer.num_workers={trainer.num_workers} must be >= 0")
    budget = trainer.max_steps >= 1  # without one, the settings measured against it are not wrong themselves
    if budget and trainer.stop_at_step is not None and not 0 < trainer.stop_at_step < trainer.max_steps:
        found.append(
            f"trainer.stop_at_step={trainer.stop_at_step} must lie between 1 and trainer.max_steps - 1, or be null"
        )
    if trainer.grad_clip_norm is not None and trainer.grad_clip_norm <= 0:
        found.append(f"trainer.grad_clip_norm={trainer.grad_clip_norm} must be > 0, or null to turn clipping off")
    warmup = cfg.sched.get("warmup_steps", 0)
    if warmup < 0 or budget and warmup > trainer.max_steps:
        found.append(
            f"sched.warmup_steps={warmup} must lie between 0 and trainer.max_steps={trainer.max_steps}: "
            "lower the warmup or raise the step budget"
        )
    train_samples = getattr(settings["data"], "train_samples", None)
    sized = callable(train_samples) and not own["data"]  # a size computed from unsound settings would mislead
    found += _batch_problems(cfg.data.batch_size, train_samples() if sized else None)
    found += _tag_problems(cfg.main_tag, list(cfg.tags))
    found += _path_problems(cfg)
    found += device_problems(trainer.device, on_this_machine)
    found += _precision_problems(trainer.precision, trainer.device)
    if trainer.best_mode not in ("auto", "min", "max"):
        found.append(f"trainer.best_mode={trainer.best_mode} is not a mode: pass auto, min or max")
    found += _logger_problems(cfg.logger)
    return _unknown_keys(cfg) + found


def check(cfg: DictConfig) -> None:
    """Stop with one line per mistake and exit code 2 (no traceback) unless `cfg` is sound. Nothing has been
    written yet: the run folder is made only once the config passes (configs/hydra/default.yaml)."""
    if found := problems(cfg):
        raise UsageError(*found)


TAG = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,199}")  # one folder name, as jobs/job.sh accepts it
SPECIAL_KEYS = ("_target_", "_partial_", "_convert_", "_recursive_", "_args_")


def _path_problems(cfg: DictConfig) -> list[str]:
    found = []
    if not RUN_NAME.fullmatch(str(cfg.run_name)):
        found.append(
            f"run_name={cfg.run_name!r} is not a folder name: use letters, digits, '.', '_', '+' and '-' (no "
            "slashes), or leave it unset for the automatic name"
        )
    for key, variable in (("runs_dir", "RUNS_DIR"), ("data_dir", "DATA_DIR")):
        path = cfg.paths[key]
        if not path:
            found.append(f"paths.{key} is empty ({variable} is set to ''?): unset {variable}, or point it at a folder")
        elif Path(path).exists() and not Path(path).is_dir():
            found.append(f"paths.{key}={path} is a file, not a folder: point {variable} (or paths.{key}) at a folder")
        elif key == "runs_dir" and not os.access(_nearest_existing(Path(path)), os.W_OK):
            found.append(f"paths.{key}={path} is not writable: point {variable} at a folder you can write to")
    return found


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _unknown_keys(cfg: DictConfig, prefix: str = "") -> list[str]:
    """Keys that no schema or component accepts, such as `+trainer.foo=1`: Hydra lets `+` add them anywhere."""
    found: list[str] = []
    kind = OmegaConf.get_type(cfg)
    if dataclasses.is_dataclass(kind):
        known = {field.name for field in dataclasses.fields(kind)}
    elif "_target_" in cfg:
        known = _parameters(cfg["_target_"])
    else:
        known = None  # a plain mapping (such as a component's nested settings) accepts any key
    for key in cfg:
        if known is not None and key not in known and key not in SPECIAL_KEYS:
            found.append(f"{prefix}{key} is not a setting here: remove it (list the settings with --cfg job)")
        elif isinstance(value := cfg.get(key), DictConfig):
            found += _unknown_keys(value, f"{prefix}{key}.")
    return found


def _parameters(target: str) -> set[str] | None:
    """The keyword arguments `target` accepts, or None if it takes any (**kwargs) or cannot be inspected."""
    try:
        parameters = inspect.signature(get_object(target)).parameters.values()
    except Exception:
        return None  # reported by _target_problems, or a builtin without a signature
    if any(parameter.kind is parameter.VAR_KEYWORD for parameter in parameters):
        return None
    return {parameter.name for parameter in parameters}


PURPOSES = ("exploratory", "candidate")


def _tag_problems(main_tag: str, tags: list[str]) -> list[str]:
    found = [
        f"{name}={tag!r} is not a valid tag: use letters, digits, '.', '_' and '-' (no spaces or slashes)"
        for name, tag in [("main_tag", main_tag), *(("tags", tag) for tag in tags)]
        if not TAG.fullmatch(str(tag))
    ]
    if sum(tag in PURPOSES for tag in tags) != 1:
        found.append(f"tags={tags} must hold exactly one purpose, exploratory or candidate, e.g. tags=[candidate]")
    return found


def _logger_problems(logger: DictConfig) -> list[str]:
    found = []
    if logger.get("wandb") and logger.wandb.mode not in ("auto", "online", "offline"):
        found.append(f"logger.wandb.mode={logger.wandb.mode} is not a mode: pass auto, online or offline")
    for name in ("wandb", "mlflow"):
        if logger.get(name) and logger[name].timeout_s <= 0:
            found.append(f"logger.{name}.timeout_s={logger[name].timeout_s} must be > 0")
    if logger.get("mlflow") and importlib.util.find_spec("mlflow") is None:  # installed? (not imported: slow)
        found.append("logger.mlflow is set but MLflow is not installed: run `uv sync --extra mlflow`")
    return found


def device_problems(device: str, on_this_machine: bool) -> list[str]:
    if not re.fullmatch(r"cpu|mps|cuda(:\d+)?", device):
        return [f"trainer.device={device} is not a device: pass cpu, cuda, cuda:N or mps"]
    if device.startswith("cuda") and on_this_machine:
        import torch  # only here: a CPU run should not pay for probing CUDA

        if not torch.cuda.is_available():
            return [f"trainer.device={device} but no CUDA device is visible: pass trainer.device=cpu"]
    return []


def _precision_problems(precision: str, device: str) -> list[str]:
    if precision not in PRECISIONS:
        choices = f"{', '.join(PRECISIONS[:-1])} or {PRECISIONS[-1]}"
        return [f"trainer.precision={precision} is not a precision: pass {choices}"]
    if precision == "fp16" and not device.startswith("cuda"):
        return [
            f"trainer.precision=fp16 needs a CUDA device (its gradient scaler is for GPUs), not {device}: pass "
            "trainer.precision=bf16 on this device"
        ]
    return []


def _settings(group: str, node: DictConfig) -> tuple[Any, list[str]]:
    """The group's settings as its schema's dataclass (research/schemas.py), or None for an untyped option,
    and what the schema's `problems()` finds wrong with them."""
    try:
        settings = OmegaConf.to_object(node)
    except Exception as error:  # a value its schema cannot hold: report it with the other mistakes
        return None, [f"the {group} settings are incomplete or invalid: {str(error).splitlines()[0]}"]
    check = getattr(settings, "problems", None)
    return settings, check() if callable(check) else []


def _batch_problems(batch_size: int, train_samples: int | None) -> list[str]:
    if batch_size < 1:
        return [f"data.batch_size={batch_size} must be >= 1, e.g. data.batch_size=64"]
    found = []
    world_size = int(os.environ.get("WORLD_SIZE", 1))
    if batch_size % world_size:
        found.append(f"data.batch_size={batch_size} must be a multiple of the {world_size} processes that share it")
    if train_samples is not None and batch_size > train_samples:
        found.append(
            f"data.batch_size={batch_size} is larger than the training set ({train_samples} samples): "
            f"pass data.batch_size={train_samples} or less"
        )
    return found


def _target_problems(group: str, node: DictConfig) -> list[str]:
    target = node.get("_target_")
    try:
        get_object(target)
    except Exception:
        return [
            f"{group}._target_={target} cannot be imported: fix _target_ in configs/{group}/ or pick another {group}"
        ]
    return []
