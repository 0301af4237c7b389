"""The machinery's settings (trainer, paths), where a project's folders are, and a run's identity.

The root schema (composition.py) puts these together with the trackers' settings (tracking/settings.py) and the
research components' schemas (research/schemas.py). A misspelled key or a wrongly typed value is refused by Hydra
while the config is composed. What types cannot say (a positive learning rate, a batch that fits in the training set) is
checked in core/checks.py before any data loads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from hydra import compose
from omegaconf import DictConfig, OmegaConf

from ..project import current

# The groups that hold research components, each built by `hydra.utils.instantiate` from its `_target_`.
COMPONENT_GROUPS = ("model", "data", "objective", "optim", "sched")

# Settings that change where a run writes, what it logs or how it is scheduled, never what it computes. They are
# left out of a run's identity (its name and config hash), so that moving a run, giving it more workers or
# resuming it in slices keeps it the same run.
NON_IDENTITY_KEYS = (
    "paths",
    "logger",
    "main_tag",
    "tags",
    "run_name",
    "trainer.num_workers",
    "trainer.progress_bar",
    "trainer.log_every",
    "trainer.eval_every",
    "trainer.ckpt_every",
    "trainer.keep_last",
    "trainer.stop_at_step",
    "trainer.allow_code_change",
    "trainer.best_metric",
    "trainer.best_mode",
)

# Settings added after runs existed, left out of a run's identity while they hold the value that computes what
# runs computed before them: a run started before they existed keeps its name and resumes after an update.
NEUTRAL_DEFAULTS: dict[str, Any] = {
    "trainer.precision": "32",
    "trainer.accumulate_grad_batches": 1,
    "trainer.compile": False,
    "data.test_fraction": 0.0,
    "data.test_every": 0,
}


# How forward passes, backward passes and optimizer steps run (core/precision.py): float32 throughout; autocast in
# bfloat16 (CPU or GPU); autocast in float16 with a gradient scaler (CUDA only).
PrecisionName = Literal["32", "bf16", "fp16"]
PRECISIONS: tuple[PrecisionName, ...] = get_args(PrecisionName)


# --- Infrastructure and paths (each tracker's settings are beside it, in tracking/) ------------------------------
@dataclass
class TrainerConfig:
    max_steps: int = 600
    eval_every: int = 100
    log_every: int = 10
    grad_clip_norm: float | None = 1.0
    device: str = "cpu"
    num_threads: int = 1
    num_workers: int = 0
    progress_bar: bool = True
    ckpt_every: int = 100
    keep_last: int = 3
    stop_at_step: int | None = None
    allow_code_change: bool = False
    precision: str = "32"  # a PrecisionName (OmegaConf types no Literal; core/checks.py refuses any other value)
    accumulate_grad_batches: int = 1  # micro-batches of data.batch_size per optimizer step
    compile: bool = False  # torch.compile the model for training, where this machine can
    best_metric: str | None = None  # the evaluation metric that picks the best checkpoint; None: the objective's
    best_mode: str = "auto"  # min, max, or auto: min for a loss-like name (core/best.py), max otherwise


@dataclass
class PathsConfig:
    runs_dir: str = "${project_path:${oc.env:RUNS_DIR,runs}}"
    data_dir: str = "${project_path:${oc.env:DATA_DIR,data}}"
    run_dir: str = "${.runs_dir}/${main_tag}/${run_name}"


def project_path(path: str) -> str:
    """A relative path is relative to the project, not to the folder a run is started from."""
    return str(current().root / path) if path else ""  # empty stays empty, for `check` to report


OmegaConf.register_new_resolver("project_path", project_path, replace=True)


def identity(cfg: DictConfig) -> dict[str, Any]:
    """The resolved settings that decide what a run computes: everything but NON_IDENTITY_KEYS."""
    raw = OmegaConf.to_container(cfg, resolve=False)  # interpolations stay as text until resolved below
    assert isinstance(raw, dict)
    return identity_of(raw)


def identity_of(raw: Mapping[str, Any]) -> dict[str, Any]:
    """`identity` of a config given as its unresolved container (OmegaConf.to_container(cfg, resolve=False))."""
    dropped = ("hydra", *(k for k in NON_IDENTITY_KEYS if "." not in k))
    # `run_name` itself, and `paths` which interpolates it, must go before resolving
    kept = {key: value for key, value in raw.items() if key not in dropped}
    settings = OmegaConf.to_container(OmegaConf.create(kept), resolve=True)
    assert isinstance(settings, dict)
    for dotted in (k for k in NON_IDENTITY_KEYS if "." in k):
        parent, _, leaf = dotted.rpartition(".")
        settings.get(parent, {}).pop(leaf, None)
    for dotted, neutral in NEUTRAL_DEFAULTS.items():
        parent, _, leaf = dotted.rpartition(".")
        if leaf in settings.get(parent, {}) and settings[parent][leaf] == neutral:
            del settings[parent][leaf]
    return settings


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested settings as one mapping of dotted keys: {"optim": {"lr": 1}} -> {"optim.lr": 1}."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, Mapping):
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def compose_train(overrides: list[str]) -> DictConfig:
    """Hydra's composition of the project's `train` config with `overrides`, its `hydra` node included, within the
    search path already set up (composition.py sets it up; the run-name resolver composes inside it)."""
    return compose(config_name="train", overrides=overrides, return_hydra_config=True)
